"""Module facts for symbols and code lenses, from the stdlib ``ast`` (never executes code).

Lines are 0-based, columns are code points. ``build_outline`` returns None when the
document does not parse.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from .positions import byte_col_to_char

STEP_FUNCS = ("step", "workflow", "parallel")


@dataclass(frozen=True)
class Span:
    line: int
    col: int
    end_line: int
    end_col: int


@dataclass
class StepCall:
    kind: str  # step | workflow | parallel
    name: str | None  # literal name, None when dynamic
    span: Span


@dataclass
class FunctionInfo:
    name: str
    qualname: str
    span: Span
    name_span: Span
    class_name: str | None = None
    resumable: bool = False
    steps: list[StepCall] = field(default_factory=list)


@dataclass
class ClassInfo:
    name: str
    span: Span
    name_span: Span
    is_agent: bool
    methods: list[FunctionInfo] = field(default_factory=list)


@dataclass
class EntryInfo:
    label: str  # as written: "report", "MyAgent.report", "agent.report"
    span: Span
    target: FunctionInfo | None


@dataclass
class Outline:
    entries: list[EntryInfo]
    entries_span: Span | None
    classes: list[ClassInfo]
    functions: list[FunctionInfo]
    entries_literal: bool = False  # PROGRAM_ENTRIES is a literal list/tuple

    def function(self, qualname: str) -> FunctionInfo | None:
        for f in self.all_functions():
            if f.qualname == qualname:
                return f
        return None

    def all_functions(self) -> list[FunctionInfo]:
        out = list(self.functions)
        for c in self.classes:
            out.extend(c.methods)
        return out


class _Builder:
    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    def span(self, node: ast.AST) -> Span:
        line = node.lineno - 1  # type: ignore[attr-defined]
        end_line = (getattr(node, "end_lineno", None) or node.lineno) - 1  # type: ignore[attr-defined]
        end_off = getattr(node, "end_col_offset", None)
        return Span(
            line,
            self.col(line, node.col_offset),  # type: ignore[attr-defined]
            end_line,
            self.col(end_line, end_off if end_off is not None else node.col_offset),  # type: ignore[attr-defined]
        )

    def col(self, line: int, byte_col: int) -> int:
        text = self.lines[line] if 0 <= line < len(self.lines) else ""
        return byte_col_to_char(text, byte_col)

    def name_span(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> Span:
        """Span of the name after ``def``/``class`` on the header line."""
        line = node.lineno - 1
        text = self.lines[line] if line < len(self.lines) else ""
        start = self.col(line, node.col_offset)
        idx = text.find(node.name, start)
        if idx < 0:
            return self.span(node)
        return Span(line, idx, line, idx + len(node.name))

    def function(
        self, node: ast.FunctionDef | ast.AsyncFunctionDef, class_name: str | None
    ) -> FunctionInfo:
        qual = f"{class_name}.{node.name}" if class_name else node.name
        info = FunctionInfo(node.name, qual, self.span(node), self.name_span(node), class_name)
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call):
                kind = _call_name(sub.func)
                if kind in STEP_FUNCS:
                    name = None
                    if sub.args and isinstance(sub.args[0], ast.Constant):
                        if isinstance(sub.args[0].value, str):
                            name = sub.args[0].value
                    info.steps.append(StepCall(kind, name, self.span(sub)))
        info.steps.sort(key=lambda s: (s.span.line, s.span.col))
        return info


def _call_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _resumable_methods(cls: ast.ClassDef) -> set[str]:
    out: set[str] = set()
    for stmt in cls.body:
        target: ast.expr | None = None
        value: ast.expr | None = None
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
        elif isinstance(stmt, ast.AnnAssign):
            target, value = stmt.target, stmt.value
        if not (isinstance(target, ast.Name) and target.id == "method_options"):
            continue
        if not isinstance(value, ast.Dict):
            continue
        for key, opts in zip(value.keys, value.values, strict=True):
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                continue
            if not isinstance(opts, ast.Dict):
                continue
            for k, v in zip(opts.keys, opts.values, strict=True):
                if (
                    isinstance(k, ast.Constant)
                    and k.value == "resumable"
                    and isinstance(v, ast.Constant)
                    and v.value is True
                ):
                    out.add(key.value)
    return out


def _is_agent_class(cls: ast.ClassDef, agent_names: set[str]) -> bool:
    for base in cls.bases:
        name = _call_name(base)
        if name and (name.endswith("Agent") or name in agent_names):
            return True
    return False


def build_outline(text: str, tree: ast.Module | None = None) -> Outline | None:
    """Parse ``text`` with ``ast`` (unless its ``tree`` is given); None if it does not parse."""
    if tree is None:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return None
    b = _Builder(text.splitlines())
    classes: list[ClassInfo] = []
    functions: list[FunctionInfo] = []
    instances: dict[str, str] = {}  # module var -> class name (x = Cls(...))
    entries_node: ast.expr | None = None
    entries_stmt: ast.stmt | None = None
    agent_names: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions.append(b.function(stmt, None))
        elif isinstance(stmt, ast.ClassDef):
            is_agent = _is_agent_class(stmt, agent_names)
            if is_agent:
                agent_names.add(stmt.name)
            info = ClassInfo(stmt.name, b.span(stmt), b.name_span(stmt), is_agent)
            resumable = _resumable_methods(stmt)
            for sub in stmt.body:
                if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    m = b.function(sub, stmt.name)
                    m.resumable = sub.name in resumable
                    info.methods.append(m)
            classes.append(info)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for t in targets:
                if isinstance(t, ast.Name) and t.id == "PROGRAM_ENTRIES" and stmt.value:
                    entries_node, entries_stmt = stmt.value, stmt
                elif (
                    isinstance(t, ast.Name)
                    and isinstance(stmt.value, ast.Call)
                    and isinstance(stmt.value.func, ast.Name)
                ):
                    instances[t.id] = stmt.value.func.id
    for f in functions:
        f.resumable = bool(f.steps)
    by_name = {f.name: f for f in functions}
    by_class = {c.name: c for c in classes}
    entries: list[EntryInfo] = []
    if isinstance(entries_node, (ast.List, ast.Tuple)):
        for elt in entries_node.elts:
            label, target = _resolve_entry(elt, by_name, by_class, instances)
            if label:
                entries.append(EntryInfo(label, b.span(elt), target))
    return Outline(
        entries,
        b.span(entries_stmt) if entries_stmt is not None else None,
        classes,
        functions,
        isinstance(entries_node, (ast.List, ast.Tuple)),
    )


def _resolve_entry(
    elt: ast.expr,
    by_name: dict[str, FunctionInfo],
    by_class: dict[str, ClassInfo],
    instances: dict[str, str],
) -> tuple[str | None, FunctionInfo | None]:
    if isinstance(elt, ast.Constant) and isinstance(elt.value, str):
        label = elt.value
    elif isinstance(elt, ast.Name):
        label = elt.id
    elif isinstance(elt, ast.Attribute) and isinstance(elt.value, ast.Name):
        label = f"{elt.value.id}.{elt.attr}"
    else:
        return None, None
    head, _, attr = label.partition(".")
    if not attr:
        return label, by_name.get(label)
    cls = by_class.get(head) or by_class.get(instances.get(head, ""))
    if cls is None:
        return label, None
    for m in cls.methods:
        if m.name == attr:
            return label, m
    return label, None
