"""Shared computation of the ``PROGRAM_ENTRIES`` / ``__agent_options__`` rules (OP401–OP405)."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from openprogram.contract import entries
from openprogram.options import UNKNOWN
from openprogram_analyzers.decorator_options import params_of
from openprogram_analyzers.index import ModuleIndex, standard_attribute_kind
from openprogram_analyzers.literals import rebuild, string_value
from openprogram_analyzers.rule import Context


@dataclass
class EntryFinding:
    code: str
    message: str
    node: cst.CSTNode


def compute(ctx: Context) -> list[EntryFinding]:
    index = ctx.index
    out: list[EntryFinding] = []
    for _target, value in index.program_entries:
        if not isinstance(value, (cst.List, cst.Tuple)):
            out.append(EntryFinding(*entries.not_a_list(), value))
            continue
        seen: set[str] = set()
        for el in value.elements:
            expr = el.value
            name: str | None = None
            if isinstance(el, cst.StarredElement):
                out.append(EntryFinding("OP401", "PROGRAM_ENTRIES must not unpack (*...)", el))
                continue
            if isinstance(expr, cst.Lambda):
                out.append(EntryFinding(*entries.anonymous_lambda(), expr))
                continue
            if isinstance(expr, cst.Name):
                name = expr.value
            elif isinstance(expr, cst.Attribute):
                name = None  # bound Agent method: checked at run time
                key = cst.Module([]).code_for_node(expr)
                if key in seen:
                    out.append(EntryFinding(*entries.duplicate(key), expr))
                seen.add(key)
                continue
            else:
                name = string_value(expr)
                if name is None:
                    out.append(EntryFinding(*entries.not_a_name(), expr))
                    continue
            if name in seen:
                out.append(EntryFinding(*entries.duplicate(name), expr))
                continue
            seen.add(name)
            if name not in index.defined:
                out.append(EntryFinding(*entries.undefined(name), expr))
                continue
            fn = index.function_at_module(name)
            if name.startswith("_"):
                out.append(EntryFinding(*entries.private(name), expr))
            elif fn is not None and fn.yields:
                out.append(EntryFinding(*entries.generator(name), expr))
            elif fn is not None and fn.is_async:
                out.append(EntryFinding(*entries.async_function(name), expr))
            elif name in index.module_assigns and any(
                isinstance(v, cst.Lambda) for v in index.module_assigns[name]
            ):
                out.append(EntryFinding(*entries.lambda_entry(name), expr))
            elif fn is None and name not in index.classes and (kind := _kind(index, name)):
                out.append(EntryFinding(*entries.not_a_function(name, kind), expr))
    for _target, value in index.agent_options:
        if not isinstance(value, cst.Dict):
            out.append(EntryFinding(*entries.agent_options_not_dict(), value))
            continue
        bad_item = False
        for item in value.elements:
            if not isinstance(item, cst.DictElement):
                out.append(EntryFinding("OP405", "__agent_options__ must not unpack (**...)", item))
                bad_item = True
                continue
            if string_value(item.key) is None:
                out.append(
                    EntryFinding(
                        "OP405", "__agent_options__ keys must be literal strings", item.key
                    )
                )
                bad_item = True
        if not bad_item:
            out.extend(_table_problems(index, _target, value))
    return out


_LITERALS: dict[type, str] = {
    cst.Integer: "int",
    cst.Float: "float",
    cst.Imaginary: "complex",
    cst.SimpleString: "str",
    cst.ConcatenatedString: "str",
    cst.FormattedString: "str",
    cst.List: "list",
    cst.Dict: "dict",
    cst.Tuple: "tuple",
    cst.Set: "set",
}


#: what the loader runs as an entry (a function, a bound method); other objects it refuses
_RUNNABLE = frozenset({"function", "method"})


def _kind(index: ModuleIndex, name: str) -> str | None:
    """The type name of what the module binds ``name`` to, when the loader refuses it as
    an entry and the source tells: a literal, a ``functools.partial(...)``, an object
    imported from the standard library that is no function (``os.getcwd``)."""
    values = index.module_assigns.get(name) or []
    imp = index.imports.get(name)
    if imp is None:
        partial = values and all(
            isinstance(v, cst.Call) and index.resolve_imported(v.func) == "functools.partial"
            for v in values
        )
        return "partial" if partial else _constant(index, name)
    # ``except ImportError: k = None`` is a fallback: the import made ``k`` when it imports here
    if imp.name is None or imp.relative or not all(_is_none(v) for v in values):
        return None
    kind = standard_attribute_kind(imp.module, imp.name)
    return kind if kind is not None and kind not in _RUNNABLE else None


def _is_none(value: cst.BaseExpression | None) -> bool:
    return isinstance(value, cst.Name) and value.value == "None"


def _constant(index: ModuleIndex, name: str) -> str | None:
    """The literal type every module-level value of ``name`` has (``LIMIT = 3``: int)."""
    values = index.module_assigns.get(name) or []
    kinds = {_LITERALS.get(type(v)) if v is not None else None for v in values}
    if len(kinds) == 1 and None not in kinds and name not in index.imports:
        return kinds.pop()
    return None


def _table_problems(index: ModuleIndex, target: cst.CSTNode, value: cst.Dict) -> list[EntryFinding]:
    """Keys and values of one ``__agent_options__``, checked by the loader's own check."""
    owner = target.value if isinstance(target, cst.Attribute) else None
    name = owner.value if isinstance(owner, cst.Name) else "__agent_options__"
    fn = index.function_at_module(name)
    rebuilt, locs = rebuild(value, UNKNOWN)
    out: list[EntryFinding] = []
    for problem in entries.agent_options_problems(
        name, rebuilt, params_of(fn) if fn is not None else None
    ):
        key_node, val_node = locs.get(tuple(problem.path[1:]), (None, value))
        node = key_node if problem.on_key and key_node is not None else val_node
        out.append(EntryFinding(problem[0], problem[1], node))
    return out


def findings_for(ctx: Context, code: str) -> list[EntryFinding]:
    found: list[EntryFinding] = ctx.shared("entries", compute)
    return [f for f in found if f.code == code]
