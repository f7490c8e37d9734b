"""The keyword arguments an entry takes, read statically from its ``def`` (never executed).

``entry_signature(source, outline, "report")`` → ``{"entry", "params": [{"name",
"annotation", "default", "required"}], "template": {"topic": "", "sections": 3}}``: the
template pre-fills the editor's arguments prompt with each default (when it is a JSON
literal) or a zero value of the annotated type (``0``, ``0.0``, ``""``, ``false``, ``[]``,
``{}``; ``null`` when unknown).
"""

from __future__ import annotations

import ast
from typing import Any

from .outline import FunctionInfo, Outline

ZERO: dict[str, Any] = {"int": 0, "float": 0.0, "str": "", "bool": False, "list": [], "dict": {}}
_NO_DEFAULT = object()


def base_type(annotation: str | None) -> str | None:
    """``list[str]`` → ``list``, ``Optional[int]``/``int | None`` → ``int``; None if unknown."""
    if not annotation:
        return None
    text = annotation.replace("typing.", "").strip().strip("'\"")
    if text.startswith("Optional[") and text.endswith("]"):
        text = text[len("Optional[") : -1]
    parts = [p.strip() for p in text.split("|") if p.strip() != "None"]
    if len(parts) != 1:
        return None
    head = parts[0].split("[", 1)[0].strip()
    head = {"List": "list", "Dict": "dict", "Mapping": "dict", "Sequence": "list"}.get(head, head)
    return head if head in ZERO else None


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


def _is_static(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list)


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
