"""Shared computation of the ``method_options`` rules (OP101–OP108).

The checks themselves live in the engine's pure table (:mod:`openprogram.options`), so a
lint finding and the runtime's class-creation error say the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from openprogram.options import (
    UNKNOWN,
    OptionProblem,
    check_method_options,
    merge_method_options,
    tool_methods,
)
from openprogram_analyzers.decorator_options import decorator_problems, params_of
from openprogram_analyzers.index import ClassInfo, ModuleIndex
from openprogram_analyzers.literals import rebuild
from openprogram_analyzers.rule import Context

AGENT_BASES = frozenset(
    {
        "openprogram.Agent",
        "openprogram.agent.Agent",
        "openprogram.agents.Agent",
        "openprogram.ChatAgent",
        "openprogram.turns.ChatAgent",
        "object",
    }
)


@dataclass
class OptionFinding:
    code: str
    message: str
    node: cst.CSTNode
    problem: OptionProblem | None


def _class_methods(
    index: ModuleIndex, cls: ClassInfo, seen: set[str]
) -> dict[str, list[str]] | None:
    """Methods (name -> parameter names) of ``cls`` and its same-module bases; None if unknown."""
    methods: dict[str, list[str]] = {}
    for base in cls.bases:
        if base is None:
            return None
        if base in AGENT_BASES:
            continue
        base_cls = index.classes.get(base)
        if base_cls is None or base in seen:
            return None
        inherited = _class_methods(index, base_cls, seen | {base})
        if inherited is None:
            return None
        methods.update(inherited)
    for name, value in cls.attributes.items():
        # ``classify = _impl`` / ``= staticmethod(_impl)`` / ``= lambda ...``: a method too
        if isinstance(value, cst.Call) and value.args:
            value = value.args[0].value
        if isinstance(value, cst.Lambda):
            methods[name] = ["**kwargs"]
        elif isinstance(value, cst.Name) and index.function_at_module(value.value):
            methods[name] = params_of(index.functions[value.value])
        elif isinstance(value, (cst.Name, cst.Attribute)) and index.resolve_imported(value):
            methods[name] = ["**kwargs"]  # imported callable: signature unknown here
    for name, fn in cls.methods.items():
        methods[name] = params_of(fn)
    return methods


def _base_tables(index: ModuleIndex, cls: ClassInfo) -> list[object]:
    """The literal ``method_options`` of the same-module bases of ``cls``, farthest first
    (the order the runtime merges them in; a value not written literally is ``UNKNOWN``)."""
    from openprogram_analyzers.determinism import _class_chain

    bases = _class_chain(index, cls.qualname)[1:]
    tables = [index.classes[b].method_options for b in reversed(bases)]
    return [rebuild(t, UNKNOWN)[0] if isinstance(t, cst.Dict) else None for t in tables]


def compute(ctx: Context) -> list[OptionFinding]:
    out: list[OptionFinding] = []
    index = ctx.index
    for cls in index.classes.values():
        value_node = cls.method_options
        if value_node is None or (isinstance(value_node, cst.Name) and value_node.value == "None"):
            continue
        if not isinstance(value_node, cst.Dict):
            out.append(
                OptionFinding(
                    "OP108",
                    "method_options is not a literal dict, so it cannot be checked statically "
                    "(it is still checked when the class is created)",
                    value_node,
                    None,
                )
            )
            continue
        value, locs = rebuild(value_node, UNKNOWN)
        methods = _class_methods(index, cls, {cls.qualname})
        tools = tool_methods(merge_method_options(_base_tables(index, cls)))
        for problem in check_method_options(value, methods, tool_methods=tools):
            key_node, val_node = locs.get(problem.path, (None, value_node))
            node = key_node if problem.on_key and key_node is not None else val_node
            out.append(OptionFinding(problem.code, problem.message, node, problem))
    for problem, node in decorator_problems(index):  # @agentic_function(...) arguments
        out.append(OptionFinding(problem.code, problem.message, node, problem))
    return out


def findings_for(ctx: Context, code: str) -> list[OptionFinding]:
    all_findings: list[OptionFinding] = ctx.shared("options", compute)
    return [f for f in all_findings if f.code == code]
