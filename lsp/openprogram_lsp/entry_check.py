"""Check ``openprogram.run`` arguments against the Program's source before spawning.

The entry must be listed in a literal ``PROGRAM_ENTRIES`` and the keyword arguments must
bind to its parameters. Decided from the file's syntax tree (``ast``; nothing imported,
no top-level code runs), mirroring ``openprogram.programs.loader``: an entry is named by
its module-level name, a bound method (``agent.report``) by the method's name.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# Decorators that keep the function's own parameters (others may change the signature).
_SIGNATURE_KEEPING = frozenset({"staticmethod", "classmethod", "wraps", "cache", "lru_cache"})
MAX_SOURCE_CHARS = 10_000_000


class EntryCheckError(ValueError):
    """The requested run cannot succeed; the message says why (one line)."""


@dataclass(frozen=True)
class StaticEntry:
    """One entry as the CLI names it, with the keyword parameters it accepts."""

    name: str  # what ``openprogram run FILE:NAME`` takes
    label: str  # as written in PROGRAM_ENTRIES ("agent.report")
    params: tuple[str, ...] | None  # keyword-passable parameters; None = not known statically
    required: tuple[str, ...] = ()
    var_keyword: bool = False

    def signature(self) -> str:
        return f"{self.name}({', '.join(self.params or ())})"


def _decorator_name(node: ast.expr) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef, *, method: bool) -> StaticEntry | None:
    """Parameters of ``fn`` (``self`` dropped for a method); None when unknowable."""
    if any(_decorator_name(d) not in _SIGNATURE_KEEPING for d in fn.decorator_list):
        return None
    a = fn.args
    positional = [*a.posonlyargs, *a.args]
    is_static = any(_decorator_name(d) == "staticmethod" for d in fn.decorator_list)
    if method and not is_static:
        positional = positional[1:]
    n_pos_defaults = len(a.defaults)
    pos_required = positional[: len(positional) - n_pos_defaults] if n_pos_defaults else positional
    posonly = {p.arg for p in a.posonlyargs}
    if any(p.arg in posonly for p in pos_required):
        return None  # needs a positional argument: JSON kwargs cannot call it; runtime says so
    names = [p.arg for p in positional if p.arg not in posonly] + [p.arg for p in a.kwonlyargs]
    required = [p.arg for p in pos_required] + [
        p.arg for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is None
    ]
    return StaticEntry("", "", tuple(names), tuple(required), a.kwarg is not None)


def static_entries(source: str) -> dict[str, StaticEntry]:
    """Entries of the Program ``source`` by CLI name (raises ``EntryCheckError``)."""
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
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    classes: dict[str, ast.ClassDef] = {}
    instances: dict[str, str] = {}  # module variable -> class name (x = Cls(...))
    listed: ast.expr | None = None
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions[stmt.name] = stmt
        elif isinstance(stmt, ast.ClassDef):
            classes[stmt.name] = stmt
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for t in targets:
                if not isinstance(t, ast.Name):
                    continue
                if t.id == "PROGRAM_ENTRIES":
                    listed = stmt.value
                elif isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Name):
                    instances[t.id] = stmt.value.func.id
    if listed is None:
        raise EntryCheckError("the Program has no PROGRAM_ENTRIES, so it has no entries to run")
    if not isinstance(listed, (ast.List, ast.Tuple)):
        raise EntryCheckError(
            "PROGRAM_ENTRIES is not a literal list or tuple, so its entries cannot be found "
            "without running the module"
        )
    out: dict[str, StaticEntry] = {}
    for elt in listed.elts:
        entry = _entry(elt, functions, classes, instances)
        if entry is not None:
            out.setdefault(entry.name, entry)
    return out


def _entry(
    elt: ast.expr,
    functions: Mapping[str, ast.FunctionDef | ast.AsyncFunctionDef],
    classes: Mapping[str, ast.ClassDef],
    instances: Mapping[str, str],
) -> StaticEntry | None:
    if isinstance(elt, ast.Constant) and isinstance(elt.value, str):
        name = elt.value
        fn = functions.get(name)
        sig = _params(fn, method=False) if fn is not None else None
        return _named(sig, name, name)
    if isinstance(elt, ast.Name):
        fn = functions.get(elt.id)
        sig = _params(fn, method=False) if fn is not None else None
        return _named(sig, elt.id, elt.id)
    if isinstance(elt, ast.Attribute) and isinstance(elt.value, ast.Name):
        label = f"{elt.value.id}.{elt.attr}"
        cls = classes.get(instances.get(elt.value.id, ""))
        sig = None
        if cls is not None:  # a bound method of a module-level instance
            for sub in cls.body:
                if (
                    isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and sub.name == elt.attr
                ):
                    sig = _params(sub, method=True)
        return _named(sig, elt.attr, label)
    return None


def _named(sig: StaticEntry | None, name: str, label: str) -> StaticEntry:
    if sig is None:
        return StaticEntry(name, label, None)
    return StaticEntry(name, label, sig.params, sig.required, sig.var_keyword)


def check_run(source: str, entry: str, kwargs: Mapping[str, Any]) -> str:
    """The CLI name of ``entry`` if ``entry(**kwargs)`` can run; else ``EntryCheckError``.

    ``entry`` is an entry's CLI name or its label as written in PROGRAM_ENTRIES.
    """
    entries = static_entries(source)
    found = entries.get(entry) or next((e for e in entries.values() if e.label == entry), None)
    if found is None:
        names = ", ".join(sorted(entries)) or "none"
        raise EntryCheckError(f"{entry!r} is not in PROGRAM_ENTRIES; entries: {names}")
    if found.params is None:
        return found.name
    unknown = sorted(k for k in kwargs if k not in found.params)
    if unknown and not found.var_keyword:
        raise EntryCheckError(
            f"{found.signature()}: unexpected keyword argument(s) "
            + ", ".join(repr(k) for k in unknown)
        )
    missing = [p for p in found.required if p not in kwargs]
    if missing:
        raise EntryCheckError(
            f"{found.signature()}: missing required argument(s) "
            + ", ".join(repr(p) for p in missing)
        )
    return found.name
