"""Symbols and code lenses: the analyzer's Program model placed on ``ast`` spans.

What is an Agent, what is resumable, what an entry names and which calls are steps is
the analyzer's one Program model (:mod:`openprogram_analyzers.program`: import aliases,
inherited ``method_options``, ``__agent_options__``, Agent instances), never guessed here.
``ast`` (cheap, never executes code) only places those facts: lines are 0-based, columns
code points. ``build_outline`` returns None when the document does not parse.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from openprogram_analyzers.program import ProgramModel, StepFact, callee_text

from .positions import LINE_BREAK, byte_col_to_char

_HEADER = re.compile(r"(?:async\s+)?(?:def|class)\s+")


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
    # a workflow's body as written (``inner``, ``self.inner``), None when not a plain name
    body: str | None = None


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
    defined: bool = True  # False: names nothing the module defines (OP402): no Run


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
        keyword = _HEADER.match(text, start)  # not the "f" of "def" for ``def f``
        idx = text.find(node.name, keyword.end() if keyword else start)
        if idx < 0:
            return self.span(node)
        return Span(line, idx, line, idx + len(node.name))

    def segment(self, node: ast.expr) -> str:
        """``node``'s source text, cut from the split lines (``ast.get_source_segment``
        splits the whole source again on every call: quadratic over a long function)."""
        first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
        if not 0 <= first <= last < len(self.lines) or node.end_col_offset is None:
            return ""
        if first == last:
            raw = self.lines[first].encode()[node.col_offset : node.end_col_offset]
            return raw.decode(errors="replace")
        parts = [
            self.lines[first].encode()[node.col_offset :].decode(errors="replace"),
            *self.lines[first + 1 : last],
            self.lines[last].encode()[: node.end_col_offset].decode(errors="replace"),
        ]
        return "\n".join(parts)

    def function(
        self,
        node: ast.FunctionDef | ast.AsyncFunctionDef,
        class_name: str | None,
        model: ProgramModel,
    ) -> FunctionInfo:
        qual = f"{class_name}.{node.name}" if class_name else node.name
        info = FunctionInfo(node.name, qual, self.span(node), self.name_span(node), class_name)
        info.resumable = qual in model.resumable
        facts = model.steps.get(qual, ())
        if facts:
            calls = sorted(_own_calls(node), key=lambda c: (c.lineno, c.col_offset))
            texts = [callee_text(self.segment(c.func)) for c in calls]
            at = 0
            for fact in facts:
                found = _next_call(texts, fact, at)
                if found is None:
                    continue  # the text moved on since the model was built
                call = calls[found]
                body = _body(call) if fact.kind == "workflow" else None
                info.steps.append(StepCall(fact.kind, fact.name, self.span(call), body))
                at = found + 1
        return info


def _next_call(texts: list[str], fact: StepFact, start: int) -> int | None:
    for i in range(start, len(texts)):
        if texts[i] == fact.callee:
            return i
    return None


def _body(call: ast.Call) -> str | None:
    """The function a ``workflow(name, fn, ...)`` call runs, when written as a plain name
    or ``self.NAME``."""
    fn = call.args[1] if len(call.args) > 1 else None
    if isinstance(fn, ast.Name):
        return fn.id
    if isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Name) and fn.value.id == "self":
        return "self." + fn.attr
    return None


def _own_calls(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.Call]:
    """Calls in ``fn``'s body, not in functions or classes defined inside it."""
    out: list[ast.Call] = []
    todo: list[ast.AST] = [*fn.body]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(node, ast.Call):
            out.append(node)
        todo.extend(ast.iter_child_nodes(node))
    return out


def build_outline(
    text: str, tree: ast.Module | None = None, model: ProgramModel | None = None
) -> Outline | None:
    """Place ``model`` (the analyzer's Program model of this text or of an earlier
    version; None: no facts yet) on ``text``'s ``ast``; None if it does not parse."""
    if tree is None:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return None
    model = model or ProgramModel()
    b = _Builder(LINE_BREAK.split(text))  # ast's lines: a form feed is not a break
    classes: list[ClassInfo] = []
    functions: list[FunctionInfo] = []
    entries_node: ast.expr | None = None
    entries_stmt: ast.stmt | None = None
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions.append(b.function(stmt, None, model))
        elif isinstance(stmt, ast.ClassDef):
            is_agent = stmt.name in model.agent_classes
            info = ClassInfo(stmt.name, b.span(stmt), b.name_span(stmt), is_agent)
            for sub in stmt.body:
                if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    info.methods.append(b.function(sub, stmt.name, model))
            classes.append(info)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for t in targets:
                if isinstance(t, ast.Name) and t.id == "PROGRAM_ENTRIES" and stmt.value:
                    entries_node, entries_stmt = stmt.value, stmt
    by_qualname = {f.qualname: f for f in functions}
    by_qualname.update({m.qualname: m for c in classes for m in c.methods})
    entries: list[EntryInfo] = []
    if isinstance(entries_node, (ast.List, ast.Tuple)):
        for elt in entries_node.elts:
            label = _label(elt)
            if label:
                target = model.entry_target(label)
                defined = label not in model.undefined_entries
                entries.append(
                    EntryInfo(label, b.span(elt), by_qualname.get(target or ""), defined)
                )
    return Outline(
        entries,
        b.span(entries_stmt) if entries_stmt is not None else None,
        classes,
        functions,
        isinstance(entries_node, (ast.List, ast.Tuple)),
    )


def _label(elt: ast.expr) -> str | None:
    """An entry as written: ``"report"``, ``report``, ``agent.report``."""
    if isinstance(elt, ast.Constant) and isinstance(elt.value, str):
        return elt.value
    if isinstance(elt, ast.Name):
        return elt.id
    if isinstance(elt, ast.Attribute) and isinstance(elt.value, ast.Name):
        return f"{elt.value.id}.{elt.attr}"
    return None


Pos = tuple[int, int]  # 0-based line, code-point column


@dataclass(frozen=True)
class Edit:
    """One text change in outline coordinates: ``start``–``end`` of the text before it
    replaced by ``text``."""

    start: Pos
    end: Pos
    text: str

    def new_end(self) -> Pos:
        parts = LINE_BREAK.split(self.text)
        if len(parts) == 1:
            return self.start[0], self.start[1] + len(parts[0])
        return self.start[0] + len(parts) - 1, len(parts[-1])

    def shift(self, p: Pos) -> Pos:
        line, col = self.new_end()
        if p[0] == self.end[0]:
            return line, col + p[1] - self.end[1]
        return p[0] + line - self.end[0], p[1]

    def span(self, s: Span) -> Span | None:
        """``s`` after the edit; None when the edit replaced text of it other than its
        inside (an edit inside a function's body keeps the function's span)."""
        start = (s.line, s.col)
        if start >= self.end:
            start = self.shift(start)
        elif start >= self.start:
            return None
        end = (s.end_line, s.end_col)
        if end >= self.end and end > self.start:
            end = self.shift(end)
        elif end > self.start:
            return None
        return Span(start[0], start[1], end[0], end[1])


def moved(outline: Outline, edit: Edit) -> Outline:
    """The outline of the text before ``edit``, moved with the text after it (lines
    inserted or deleted above move a symbol; one whose own text was edited is dropped)."""
    done: dict[int, FunctionInfo | None] = {}

    def function(f: FunctionInfo) -> FunctionInfo | None:
        span, name_span = edit.span(f.span), edit.span(f.name_span)
        out = None
        if span is not None and name_span is not None:
            steps = [
                StepCall(st.kind, st.name, sp, st.body)
                for st in f.steps
                if (sp := edit.span(st.span)) is not None
            ]
            out = FunctionInfo(f.name, f.qualname, span, name_span, f.class_name, f.resumable)
            out.steps = steps
        done[id(f)] = out
        return out

    functions = [g for f in outline.functions if (g := function(f)) is not None]
    classes: list[ClassInfo] = []
    for c in outline.classes:
        span, name_span = edit.span(c.span), edit.span(c.name_span)
        methods = [g for m in c.methods if (g := function(m)) is not None]
        if span is not None and name_span is not None:
            classes.append(ClassInfo(c.name, span, name_span, c.is_agent, methods))
    entries: list[EntryInfo] = []
    for e in outline.entries:
        span = edit.span(e.span)
        target = done.get(id(e.target)) if e.target is not None else None
        if span is not None and (e.target is None or target is not None):
            entries.append(EntryInfo(e.label, span, target, e.defined))
    entries_span = edit.span(outline.entries_span) if outline.entries_span else None
    return Outline(entries, entries_span, classes, functions, outline.entries_literal)
