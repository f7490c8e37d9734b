"""The keyword arguments an entry takes, read statically from its ``def`` (never executed).

``entry_signature(source, outline, "report")`` → ``{"entry", "params": [{"name",
"annotation", "default", "required"}], "template": {"topic": "", "sections": 3}}``: the
template pre-fills the editor's arguments prompt with each default (when it is a JSON
literal) or a zero value of the annotated type (``0``, ``0.0``, ``""``, ``false``, ``[]``,
``{}``; ``null`` when unknown).

``check_run(source, "report", kwargs, model)`` is the check before Run spawns anything: the entry
is in a literal ``PROGRAM_ENTRIES`` and the keyword arguments fit those parameters (the same
entries and parameters, from the same outline and ``params_of``): names, and the types of
simple annotations, checked by :func:`openprogram.entry_args.check_args` as ``openprogram
run`` checks them.

``entry_args_problems(source, outline, "report", kwargs)`` is that check of the arguments alone,
one line per problem (what the editor's arguments prompt shows as you type; ``[]`` when they
fit, or when the call is not known statically and the run itself will say).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

from openprogram.entry_args import Param, base_type, check_args, def_signature
from openprogram_analyzers.program import ProgramModel

from .outline import EntryInfo, FunctionInfo, Outline, build_outline

# Decorators that keep the function's own parameters (others may change the signature).
_SIGNATURE_KEEPING = frozenset({"staticmethod", "classmethod", "wraps", "cache", "lru_cache"})
MAX_SOURCE_CHARS = 10_000_000
ZERO: dict[str, Any] = {"int": 0, "float": 0.0, "str": "", "bool": False, "list": [], "dict": {}}
_NO_DEFAULT = object()


def _literal(node: ast.expr | None) -> Any:
    if node is None:
        return _NO_DEFAULT
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None  # a default we cannot show as JSON: the run uses it when the key is omitted
    if isinstance(value, tuple):
        value = list(value)
    return value if isinstance(value, (str, int, float, bool, list, dict, type(None))) else None


def _find_def(tree: ast.Module, f: FunctionInfo) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == f.name:
            if node.lineno - 1 == f.span.line or any(
                d.lineno - 1 == f.span.line for d in node.decorator_list
            ):
                return node
    return None


def _decorator_name(node: ast.expr) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _is_static(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(_decorator_name(d) == "staticmethod" for d in node.decorator_list)


def params_of(node: ast.FunctionDef | ast.AsyncFunctionDef, method: bool) -> list[dict[str, Any]]:
    a = node.args
    positional = [*a.posonlyargs, *a.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(a.defaults)) + list(
        a.defaults
    )
    pairs = list(zip(positional, defaults, strict=True))
    if method and not _is_static(node) and pairs:
        pairs = pairs[1:]  # self / cls
    pairs += list(zip(a.kwonlyargs, a.kw_defaults, strict=True))
    out = []
    for arg, default in pairs:
        annotation = ast.unparse(arg.annotation) if arg.annotation is not None else None
        value = _literal(default)
        out.append(
            {
                "name": arg.arg,
                "annotation": annotation,
                "type": base_type(annotation),
                "required": value is _NO_DEFAULT,
                "default": None if value is _NO_DEFAULT else value,
            }
        )
    return [p for p in out if p["name"] not in ("runtime", "exec_runtime", "review_runtime")]


def template_of(params: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for p in params:
        if not p["required"]:
            out[p["name"]] = p["default"]
        else:
            out[p["name"]] = ZERO.get(p["type"] or "", None)
    return out


def entry_signature(source: str, outline: Outline, entry: str) -> dict[str, Any] | None:
    """The signature of ``entry`` (a ``PROGRAM_ENTRIES`` label), or None if unresolved."""
    target = next((e.target for e in outline.entries if e.label == entry), None)
    if target is None:
        return None
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    node = _find_def(tree, target)
    if node is None:
        return None
    params = params_of(node, method=target.class_name is not None)
    return {"entry": entry, "params": params, "template": template_of(params)}


class EntryCheckError(ValueError):
    """The requested run cannot succeed; the message says why (one line)."""


def check_run(
    source: str, entry: str, kwargs: Mapping[str, Any], model: ProgramModel | None
) -> str:
    """The CLI name of ``entry`` if ``entry(**kwargs)`` can run; else ``EntryCheckError``.

    ``model`` is the analyzer's Program model of ``source`` (None: not analysed, so no
    entry's target is known and only its name is checked). ``entry`` is an entry's CLI name (``report`` for ``agent.report``) or its label as
    written in PROGRAM_ENTRIES. Parameters are checked when they are known statically
    (a ``def`` whose decorators keep its signature).
    """
    if len(source) > MAX_SOURCE_CHARS:
        raise EntryCheckError("the Program file is too large to check before running")
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise EntryCheckError(
            f"the Program does not parse (line {exc.lineno}): {exc.msg}"
        ) from None
    except (RecursionError, MemoryError, ValueError) as exc:
        raise EntryCheckError(f"the Program cannot be analysed: {type(exc).__name__}") from None
    outline = build_outline(source, tree, model)
    if outline is None or outline.entries_span is None:
        raise EntryCheckError("the Program has no PROGRAM_ENTRIES, so it has no entries to run")
    if not outline.entries_literal:
        raise EntryCheckError(
            "PROGRAM_ENTRIES is not a literal list or tuple, so its entries cannot be found "
            "without running the module"
        )
    found = _entry_of(outline, entry)
    if found is None:
        names = ", ".join(sorted(_by_cli_name(outline))) or "none"
        raise EntryCheckError(f"{entry!r} is not in PROGRAM_ENTRIES; entries: {names}")
    name = found.label.rpartition(".")[2]
    call = _static_call(tree, found)
    if call is None:
        return name  # not known statically: the run itself reports a bad call
    node, method, keyword = call
    problems = check_args(keyword, kwargs, any_keyword=node.args.kwarg is not None)
    if problems:
        bound = method and not _is_static(node)
        raise EntryCheckError(f"{def_signature(name, node, bound=bound)}: {'; '.join(problems)}")
    return name


def entry_args_problems(
    source: str, outline: Outline, entry: str, kwargs: Mapping[str, Any]
) -> list[str]:
    """What is wrong with ``entry(**kwargs)``, one line per problem, exactly as
    :func:`check_run` (and ``openprogram run``) words it; ``[]`` when nothing is, or when the
    entry or its parameters are not known statically (the Run check or the run says so)."""
    found = _entry_of(outline, entry)
    if found is None or len(source) > MAX_SOURCE_CHARS:
        return []
    try:
        tree = ast.parse(source)
    except (SyntaxError, RecursionError, MemoryError, ValueError):
        return []
    call = _static_call(tree, found)
    if call is None:
        return []
    node, _, keyword = call
    return check_args(keyword, kwargs, any_keyword=node.args.kwarg is not None)


def _by_cli_name(outline: Outline) -> dict[str, EntryInfo]:
    by_name: dict[str, EntryInfo] = {}
    for e in outline.entries:
        by_name.setdefault(e.label.rpartition(".")[2], e)
    return by_name


def _entry_of(outline: Outline, entry: str) -> EntryInfo | None:
    """The entry of ``outline`` named ``entry``: its CLI name or its label; None if none."""
    return _by_cli_name(outline).get(entry) or next(
        (e for e in outline.entries if e.label == entry), None
    )


def _static_call(
    tree: ast.Module, found: EntryInfo
) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, bool, list[Param]] | None:
    """The ``def`` of an entry, whether it is a method, and its named parameters
    (positional-only ones too: the run passes them by position); None when they are not
    known statically (a decorator that may change the signature)."""
    node = _find_def(tree, found.target) if found.target is not None else None
    if node is None or any(
        _decorator_name(d) not in _SIGNATURE_KEEPING for d in node.decorator_list
    ):
        return None
    method = found.target is not None and found.target.class_name is not None
    named = [
        Param(
            p["name"],
            p["annotation"],
            required=p["required"],
            default_none=not p["required"] and p["default"] is None,
        )
        for p in params_of(node, method)
    ]
    return node, method, named
