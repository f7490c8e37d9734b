"""Static check of Planner-written workflow code (SPEC §2.9), stdlib ``ast`` only.

The Planner writes a module holding exactly one ``def workflow():``. Before it runs with
``exec``, :func:`check_workflow_source` rejects: code that does not parse (OP501),
imports (OP502), names that are neither injected, locally bound nor in
:data:`WORKFLOW_BUILTINS` (OP503), anything but one zero-argument ``workflow`` at top level
(OP504), and dunder names/attributes, the usual escape hatches (OP505).

This is a guard against mistakes, not a security sandbox.
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Iterable
from dataclasses import dataclass

WORKFLOW_CODES: dict[str, str] = {
    "OP501": "workflow code does not parse",
    "OP502": "import in workflow code",
    "OP503": "name that is not injected, bound in the code, or a basic builtin",
    "OP504": "workflow code must define exactly one zero-argument `workflow` and nothing else",
    "OP505": "dunder name or attribute in workflow code",
}

# Builtins available to workflow code (the namespace builder installs exactly these).
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


@dataclass(frozen=True)
class WorkflowProblem:
    """One finding; positions 1-based, end column exclusive (like analyzer findings)."""

    code: str
    message: str
    line: int
    column: int
    end_line: int
    end_column: int

    def __str__(self) -> str:
        return f"line {self.line}, column {self.column}: {self.code} {self.message}"


def _problem(code: str, message: str, node: ast.AST | None) -> WorkflowProblem:
    line = getattr(node, "lineno", 1) or 1
    col = (getattr(node, "col_offset", 0) or 0) + 1
    end_line = getattr(node, "end_lineno", None) or line
    end_col = (getattr(node, "end_col_offset", None) or col) + 1
    return WorkflowProblem(code, message, line, col, end_line, end_col)


def _bound_names(tree: ast.AST) -> set[str]:
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.MatchAs) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.MatchStar) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):  # reported once, as OP502
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
    return bound


def _is_docstring(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def _check_top_level(tree: ast.Module) -> list[WorkflowProblem]:
    problems: list[WorkflowProblem] = []
    workflows: list[ast.stmt] = []
    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            continue  # reported as OP502
        if _is_docstring(stmt):
            continue
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == "workflow":
            workflows.append(stmt)
            if isinstance(stmt, ast.AsyncFunctionDef):
                problems.append(_problem("OP504", "`workflow` must not be async", stmt))
            args = stmt.args
            if args.posonlyargs or args.args or args.vararg or args.kwonlyargs or args.kwarg:
                problems.append(
                    _problem("OP504", "`workflow` must take no arguments: def workflow():", stmt)
                )
            if stmt.decorator_list:
                problems.append(_problem("OP504", "`workflow` must not be decorated", stmt))
            continue
        problems.append(
            _problem(
                "OP504",
                "only `def workflow():` may appear at top level; put helpers and values inside it",
                stmt,
            )
        )
    if not workflows:
        problems.append(_problem("OP504", "no `def workflow():` found", None))
    for extra in workflows[1:]:
        problems.append(_problem("OP504", "`workflow` is defined more than once", extra))
    return problems


def check_workflow_source(
    source: str, injected: Iterable[str], *, builtins: Iterable[str] = WORKFLOW_BUILTINS
) -> list[WorkflowProblem]:
    """All problems of Planner-written ``source`` given the ``injected`` names."""
    try:
        tree = ast.parse(source, filename="<workflow>")
    except SyntaxError as exc:
        line = exc.lineno or 1
        col = exc.offset or 1
        return [WorkflowProblem("OP501", f"syntax error: {exc.msg}", line, col, line, col + 1)]
    known = set(injected) | set(builtins)
    bound = _bound_names(tree)
    problems = _check_top_level(tree)
    reported: set[tuple[str, int]] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            problems.append(
                _problem(
                    "OP502",
                    "imports are not allowed in workflow code: use only the injected functions",
                    node,
                )
            )
        elif isinstance(node, ast.Attribute) and node.attr.startswith("__"):
            problems.append(
                _problem("OP505", f"dunder attribute {node.attr!r} is not allowed", node)
            )
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            name = node.id
            if name.startswith("__"):
                problems.append(_problem("OP505", f"dunder name {name!r} is not allowed", node))
            elif name not in known and name not in bound and (name, node.lineno) not in reported:
                reported.add((name, node.lineno))
                hint = difflib.get_close_matches(name, sorted(known), n=1)
                extra = f"; did you mean {hint[0]!r}?" if hint else ""
                problems.append(
                    _problem(
                        "OP503",
                        f"{name!r} is not available in workflow code (injected: "
                        f"{', '.join(sorted(set(injected)))}){extra}",
                        node,
                    )
                )
    problems.sort(key=lambda p: (p.line, p.column, p.code))
    return problems
