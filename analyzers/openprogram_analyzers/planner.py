"""Static check of Planner-written workflow code (SPEC §2.9), run by the engine before ``exec``.

The Planner writes a module holding exactly one ``def workflow():``. The check reports,
with the analyzer's own codes and positions:

- ``OP001`` code that does not parse;
- ``OP201`` ``exec`` / ``eval`` / ``compile`` / ``__import__``;
- ``OP210`` any import (it brings in a name that is not injected), a name that is
  neither injected, bound in the code nor in
  :data:`WORKFLOW_BUILTINS` (with a did-you-mean), and anything but one plain,
  undecorated, zero-argument ``workflow`` at top level (a docstring is fine);
- ``OP211`` dunder names and attributes (``().__class__``), the usual escape hatches.

:data:`WORKFLOW_BUILTINS` is the one list of builtins Planner code may use: the engine
installs exactly these in the ``exec`` namespace. This is a guard against mistakes, not a
security sandbox.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

import libcst as cst
from libcst.metadata import BuiltinAssignment, MetadataWrapper, ScopeProvider

from openprogram_analyzers.findings import Finding
from openprogram_analyzers.index import ModuleIndex
from openprogram_analyzers.rule import Context

# Builtins available to workflow code (the engine's namespace builder installs exactly these).
WORKFLOW_BUILTINS: frozenset[str] = frozenset(
    {
        "abs",
        "all",
        "any",
        "bool",
        "dict",
        "enumerate",
        "Exception",
        "filter",
        "float",
        "int",
        "isinstance",
        "len",
        "list",
        "map",
        "max",
        "min",
        "print",
        "range",
        "reversed",
        "round",
        "set",
        "sorted",
        "str",
        "sum",
        "tuple",
        "ValueError",
        "zip",
    }
)

_DYNAMIC = frozenset({"exec", "eval", "compile", "__import__"})
_TOP_LEVEL = "only `def workflow():` may appear at top level; put helpers and values inside it"


def analyze_planner(
    source: str,
    path: str,
    injected: Iterable[str],
    builtins: Iterable[str] = WORKFLOW_BUILTINS,
) -> list[Finding]:
    """All findings of Planner-written ``source`` given the ``injected`` names (sorted)."""
    from openprogram_analyzers.analysis import parse_error, resolve
    from openprogram_analyzers.guard import too_deep_finding

    refused = too_deep_finding(source, path)
    if refused is not None:  # libcst would crash or take minutes on it
        return [refused]
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        return [parse_error(exc, path)]
    except (RecursionError, MemoryError, ValueError) as exc:
        return [
            Finding("OP001", f"cannot parse code: {type(exc).__name__}", "error", path, 1, 1, 1, 1)
        ]
    ctx = Context(source, path, ModuleIndex(module), frozenset())
    injected_set = frozenset(injected)
    _check_top_level(ctx, module)
    _check_imports_and_dunders(ctx, module)
    _check_names(ctx, module, injected_set, injected_set | frozenset(builtins))
    return resolve(module, path, ctx.pending)


def _is_docstring(stmt: cst.BaseSmallStatement) -> bool:
    return isinstance(stmt, cst.Expr) and isinstance(
        stmt.value, (cst.SimpleString, cst.ConcatenatedString)
    )


def _check_top_level(ctx: Context, module: cst.Module) -> None:
    workflows: list[cst.FunctionDef] = []
    for stmt in module.body:
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value == "workflow":
            workflows.append(stmt)
            _check_workflow_def(ctx, stmt)
        elif isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if not isinstance(small, (cst.Import, cst.ImportFrom)) and not _is_docstring(small):
                    ctx.report("OP210", small, _TOP_LEVEL)  # imports: their own OP210
        else:
            anchor = stmt.name if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) else stmt
            ctx.report("OP210", anchor, _TOP_LEVEL)
    if not workflows:
        first: cst.CSTNode = module.body[0] if module.body else module
        ctx.report("OP210", first, "no `def workflow():` found")
    for extra in workflows[1:]:
        ctx.report("OP210", extra.name, "`workflow` is defined more than once")


def _check_workflow_def(ctx: Context, fn: cst.FunctionDef) -> None:
    if fn.asynchronous is not None:
        ctx.report("OP210", fn.name, "`workflow` must be a plain (not async) function")
    p = fn.params
    if (
        p.params
        or p.posonly_params
        or p.kwonly_params
        or isinstance(p.star_arg, cst.Param)
        or p.star_kwarg is not None
    ):
        ctx.report("OP210", p, "'workflow' must take no arguments: def workflow():")
    for dec in fn.decorators:
        ctx.report("OP210", dec.decorator, "`workflow` must not be decorated")


def _check_imports_and_dunders(ctx: Context, module: cst.Module) -> None:
    class _Visitor(cst.CSTVisitor):
        def visit_Import(self, node: cst.Import) -> None:
            self._import(node)

        def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
            self._import(node)

        def _import(self, node: cst.CSTNode) -> None:
            ctx.report(
                "OP210",
                node,
                "imports are not allowed in Planner code: use only the injected functions",
            )

        def visit_Attribute(self, node: cst.Attribute) -> None:
            if node.attr.value.startswith("__"):
                ctx.report(
                    "OP211", node.attr, f"dunder attribute {node.attr.value!r} is not allowed"
                )

    module.visit(_Visitor())


def _check_names(
    ctx: Context, module: cst.Module, injected: frozenset[str], known: frozenset[str]
) -> None:
    """Names read but bound nowhere in their scope chain must be injected or allowed builtins."""
    scopes = MetadataWrapper(module, unsafe_skip_copy=True).resolve(ScopeProvider)
    accesses = [
        access
        for scope in {s for s in scopes.values() if s is not None}
        for access in scope.accesses
        if isinstance(access.node, cst.Name)
    ]
    for access in accesses:
        node = access.node
        assert isinstance(node, cst.Name)
        name = node.value
        if name.startswith("__"):
            code, message = "OP211", f"dunder name {name!r} is not allowed"
            if name in _DYNAMIC:
                code, message = "OP201", f"Planner code must not use {name}()"
            ctx.report(code, node, message)
            continue
        if any(not isinstance(r, BuiltinAssignment) for r in access.referents):
            continue  # bound in the code
        if name in _DYNAMIC:
            ctx.report("OP201", node, f"Planner code must not use {name}()")
        elif name not in known:
            hint = difflib.get_close_matches(name, sorted(known), n=1)
            extra = f"; did you mean {hint[0]!r}?" if hint else ""
            ctx.report(
                "OP210",
                node,
                f"name {name!r} is not available to Planner code "
                f"(injected: {', '.join(sorted(injected)) or 'none'}){extra}",
            )
