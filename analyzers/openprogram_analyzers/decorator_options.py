"""``@agentic_function(...)`` arguments, checked with the ``method_options`` rules.

The decorator's keyword arguments are one ``method_options`` entry for the decorated
function, so they go through the same :func:`openprogram.options.check_method_entry` and
produce the same OP102–OP107 findings (and the same messages) as an ``Agent`` subclass.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import libcst as cst

from openprogram.options import UNKNOWN, OptionProblem, check_method_entry
from openprogram_analyzers.index import FunctionInfo, ModuleIndex
from openprogram_analyzers.literals import Locations, rebuild

DECORATOR_NAMES = frozenset(
    {
        "openprogram.agentic_function",
        "openprogram.scoped_function.agentic_function",
    }
)


def _decorator_calls(index: ModuleIndex, fn: FunctionInfo) -> Iterator[cst.Call]:
    for deco in fn.node.decorators:
        expr = deco.decorator
        if isinstance(expr, cst.Call) and index.resolve(expr.func) in DECORATOR_NAMES:
            yield expr


def _entry(name: str, call: cst.Call) -> tuple[Any, Locations]:
    """The decorator's keywords as a ``{key: value}`` entry and their locations."""
    entry: dict[Any, Any] = {}
    locs: Locations = {(name,): (None, call)}
    for arg in call.args:
        if arg.keyword is None:  # positional or **mapping: not checkable
            entry[UNKNOWN] = UNKNOWN
            continue
        key = arg.keyword.value
        value, inner = rebuild(arg.value, UNKNOWN)
        entry[key] = value
        for path, (key_node, value_node) in inner.items():
            full_path = (name, key, *path)
            locs[full_path] = (key_node if path else arg.keyword, value_node)
    return entry, locs


def params_of(fn: FunctionInfo) -> list[str]:
    """``fn``'s parameter names, ``**name`` for its keyword catch-all (accepts any)."""
    params = list(fn.params)
    if isinstance(fn.node.params.star_kwarg, cst.Param):
        params.append("**" + fn.node.params.star_kwarg.name.value)
    return params


def decorator_problems(
    index: ModuleIndex,
) -> Iterator[tuple[OptionProblem, cst.CSTNode]]:
    """Every option problem of ``@agentic_function(...)`` calls, with the node to flag."""
    for fn in index.functions.values():
        if fn.class_name is not None:
            continue
        for call in _decorator_calls(index, fn):
            entry, locs = _entry(fn.name, call)
            for problem in check_method_entry(fn.name, entry, params_of(fn)):
                key_node, val_node = locs.get(problem.path, (None, call))
                node = key_node if problem.on_key and key_node is not None else val_node
                yield problem, node
