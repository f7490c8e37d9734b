"""Shared computation of the decision/schema rules (OP301–OP307).

The grammar and its messages live in the engine's pure :mod:`openprogram.schema_grammar`;
this module only finds literal menus in source and maps problems back to nodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import libcst as cst

from openprogram.schema_grammar import (
    OPAQUE,
    SchemaProblem,
    TypeRef,
    check_menu,
    check_response_format,
    check_route_options,
    msg_duplicate_option,
)
from openprogram_analyzers.determinism import (
    RUNTIME_REQUESTS,
    agent_instance_at,
    callee_at,
    runtime_at,
)
from openprogram_analyzers.index import CallSite, ModuleIndex, looks_like_class
from openprogram_analyzers.literals import Locations, rebuild, string_value
from openprogram_analyzers.rule import Context

MENU_NODES = (cst.Dict, cst.List, cst.Tuple)


@dataclass
class SchemaFinding:
    code: str
    message: str
    node: cst.CSTNode


def _model_call_keyword(index: ModuleIndex, site: CallSite, keyword: str) -> Any:
    """The value of ``keyword=`` in a call of OpenProgram (``llm``, ``agent``,
    ``decision``..., also through an alias: ``pick = decision.make``), of an Agent
    (``self(...)``, an instance) or of a model runtime (``rt.exec``, ``exec_full``);
    ``None`` otherwise."""
    target = site.target or ""
    for a in site.args:
        if a.keyword is not None and a.keyword.value == keyword:
            if (
                target == "self"
                or (callee_at(index, site) or "").startswith("openprogram.")
                or _is_agent_call(index, site)
                or _is_runtime_request(index, site)
            ):
                return a.value
            return None
    return None


def _is_runtime_request(index: ModuleIndex, site: CallSite) -> bool:
    """``rt.exec(...)`` / ``create_runtime().exec_full(...)``: a request of a runtime
    (made by ``create_runtime`` / ``Runtime``, or a parameter annotated ``Runtime``)."""
    func = site.node.func
    return (
        isinstance(func, cst.Attribute)
        and func.attr.value in RUNTIME_REQUESTS
        and runtime_at(index, site.function, func.value) is not None
    )


def _menu_arg(index: ModuleIndex, site: CallSite) -> cst.BaseExpression | None:
    target = callee_at(index, site) or ""
    args = site.args
    if any(a.keyword is not None and a.keyword.value == "choices" for a in args):
        value: cst.BaseExpression | None = _model_call_keyword(index, site, "choices")
        return value
    if target.startswith("openprogram.") and (
        target.endswith("decision.make") or _is_route(index, site)
    ):
        positional = [a for a in args if a.keyword is None and a.star == ""]
        if len(positional) >= 2:
            return positional[1].value
        for a in args:
            if a.keyword is not None and a.keyword.value == "options":
                return a.value
    return None


def _is_route(index: ModuleIndex, site: CallSite) -> bool:
    """``openprogram.route(question, options)`` (however imported): its options are
    checked by :func:`~openprogram.schema_grammar.check_route_options`, as it checks them."""
    imported = index.resolve_imported(site.node.func) or ""
    return imported.startswith("openprogram.") and imported.rsplit(".", 1)[-1] == "route"


def _is_agent_call(index: ModuleIndex, site: CallSite) -> bool:
    """A call of an Agent instance: ``MyAgent(...)(..., choices=...)``, or a name bound to
    one (``bot = Agent(); bot(..., choices=...)``), as the determinism rules see it."""
    func = site.node.func
    if isinstance(func, cst.Call):
        name = index.resolve(func.func)
        cls = index.classes.get(name or "")
        if (cls is not None and cls.method_options is not None) or (
            name is not None and name.startswith("openprogram.")
        ):
            return True
    return agent_instance_at(index, site.function, func) is not None


TYPE_LIKE_BUILTINS = frozenset(
    {"str", "int", "float", "bool", "list", "dict", "complex", "bytes", "set", "tuple", "object"}
)


def _name_value(index: ModuleIndex) -> Any:
    """Type-like names become type references, and so do parameterised types
    (``list[int]``: reported as unsupported, as the runtime reports them); other names
    (variables) stay opaque."""

    def value(node: cst.BaseExpression) -> Any:
        if isinstance(node, cst.Subscript):  # list[int], typing.List[int]: not a schema
            base = index.resolve(node.value) or ""
            if base in TYPE_LIKE_BUILTINS or base.startswith("typing."):
                return TypeRef(index.module.code_for_node(node))
            return OPAQUE
        name = index.resolve(node)
        if name is None:
            return OPAQUE
        short = name.rsplit(".", 1)[-1]
        if (
            name in TYPE_LIKE_BUILTINS
            or looks_like_class(short)
            or index.function_at_module(name) is not None
        ):
            return TypeRef(name)
        return OPAQUE

    return value


def _constant(
    index: ModuleIndex, site: CallSite, expr: cst.BaseExpression | None
) -> cst.BaseExpression | None:
    """``expr``, or the literal a module constant ``expr`` names (``response_format=AGE``,
    ``choices=MENU``) where no local of the calling function hides it."""
    if expr is None:
        return None
    fn = index.functions.get(site.function) if site.function else None
    return index.literal_constant(expr, fn.locals() if fn is not None else frozenset())


def compute(ctx: Context) -> list[SchemaFinding]:
    out: list[SchemaFinding] = []
    index = ctx.index
    for site in index.calls:
        fmt = _constant(index, site, _model_call_keyword(index, site, "response_format"))
        if isinstance(fmt, cst.Dict):
            value, locs = rebuild(fmt, OPAQUE, _name_value(index))
            out.extend(_located(check_response_format(value), fmt, locs))
        menu = _constant(index, site, _menu_arg(index, site))
        if menu is None or not isinstance(menu, MENU_NODES):
            continue
        if isinstance(menu, cst.Dict):  # a dict literal keeps only the last duplicate key
            out.extend(_duplicate_keys(menu))
        value, locs = rebuild(menu, OPAQUE, _name_value(index))
        check = check_route_options if _is_route(index, site) else check_menu
        out.extend(_located(check(value), menu, locs))
    # a constant used by several calls is reported once, where it is written
    unique: dict[tuple[str, str, int], SchemaFinding] = {}
    for f in out:
        unique.setdefault((f.code, f.message, id(f.node)), f)
    return list(unique.values())


def _located(
    problems: list[SchemaProblem], root: cst.CSTNode, locs: Locations
) -> list[SchemaFinding]:
    """Each problem at the deepest located node of its path below ``root``."""
    out: list[SchemaFinding] = []
    for problem in problems:
        path = tuple(problem.path)
        node: cst.CSTNode = root
        # the deepest located prefix of the path
        for n in range(len(path), -1, -1):
            loc = locs.get(path[:n])
            if loc is not None:
                key_node, val_node = loc
                node = key_node if problem.code == "OP306" and key_node is not None else val_node
                break
        out.append(SchemaFinding(problem.code, problem.message, node))
    return out


def _duplicate_keys(menu: cst.Dict) -> list[SchemaFinding]:
    """OP306 on each repeated literal key of a dict-literal menu (invisible at run time)."""
    seen: set[str] = set()
    out: list[SchemaFinding] = []
    for el in menu.elements:
        if not isinstance(el, cst.DictElement):
            continue
        name = string_value(el.key)
        if name is None:
            continue
        if name in seen:
            out.append(SchemaFinding("OP306", msg_duplicate_option(name), el.key))
        seen.add(name)
    return out


def findings_for(ctx: Context, code: str) -> list[SchemaFinding]:
    found: list[SchemaFinding] = ctx.shared("schema", compute)
    return [f for f in found if f.code == code]
