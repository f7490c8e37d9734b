"""What the analyzer refuses to hand to libcst: cheap checks with Python's own parser.

libcst's native parser crashes the process (SIGSEGV) on deeply nested input — 2,000
parentheses or a long chain of ``lambda:`` — and is quadratic in the length of an
operator chain (a 4,000-term sum takes tens of seconds). Python's ``ast`` parser is
linear, bounded and never crashes, so every source goes through it first:

- not valid Python for ``ast``: the syntax error, located (OP001), libcst never runs;
- nested deeper than :data:`MAX_DEPTH` syntax-tree levels, or more than
  :data:`MAX_LINES` lines: OP001 "too deeply nested to analyse" / "too large to analyse";
- nested deeper than Python itself allows (more than 200 brackets): Python's own syntax
  error, as ``openprogram run`` reports it ("too many nested parentheses").

libcst's visitors are recursive (about :data:`FRAMES_PER_LEVEL` Python frames per level),
so whatever walks a tree the guard admitted runs inside :func:`recursion_headroom`.

It is the one nesting guard: the CLI, the pre-run check and the language server (whole
file in its worker, one statement at a time in its incremental pass) all reach libcst
only through :func:`openprogram_analyzers.analysis.parse_checked`, which asks it first.
"""

from __future__ import annotations

import sys
import threading
from contextlib import contextmanager

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

    from openprogram_analyzers.findings import Finding

MAX_DEPTH = 400
"""Deepest syntax tree analysed (``ast`` levels; a sum of N terms is N levels deep)."""

MAX_LINES = 50_000
"""Longest file analysed, in lines (libcst needs ~1 ms and ~25 KB per line)."""


FRAMES_PER_LEVEL = 8
"""Python frames libcst's recursive visitors take per syntax-tree level, at most (nested
brackets, the costliest, take 7)."""


class Refusal:
    """Why a source is not analysed: OP001 message, severity and 1-based location;
    ``deep``: libcst must not see it (nested or large beyond what it survives)."""

    __slots__ = ("column", "deep", "line", "message", "severity")

    def __init__(
        self,
        message: str,
        line: int = 1,
        column: int = 1,
        severity: str = "error",
        *,
        deep: bool = True,
    ):
        self.message = message
        self.line = line
        self.column = column
        self.severity = severity
        self.deep = deep


TOO_DEEP = "file is too deeply nested to analyse (more than {} levels)"


def check(source: str) -> Refusal | None:
    """None when libcst may parse ``source``; else why not (never raises, never crashes)."""
    lines = source.count("\n") + 1
    if lines > MAX_LINES:
        return Refusal(f"file is too large to analyse ({lines} lines, limit {MAX_LINES})")
    import ast
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarnings are not ours to print
            # a UTF-8 BOM kept in the text (written back by --fix) is not code
            tree = ast.parse(source[1:] if source.startswith("\ufeff") else source)
    except SyntaxError as exc:
        # Python's own limit ("too many nested parentheses"): its message, as ``run`` says
        # it, and never handed to libcst (whose parser crashes on such nesting)
        return Refusal(
            f"file does not parse: {exc.msg}",
            max(exc.lineno or 1, 1),
            max(exc.offset or 1, 1),
            deep="too many nested" in str(exc.msg),
        )
    except (RecursionError, MemoryError):
        return Refusal(TOO_DEEP.format(MAX_DEPTH))
    except ValueError as exc:  # NUL bytes (Python 3.11)
        return Refusal(f"file does not parse: {exc}", deep=False)
    deepest = _deepest(tree, source)
    if deepest is not None:
        return Refusal(TOO_DEEP.format(MAX_DEPTH), *deepest)
    return None


def too_deep(source: str) -> bool:
    """Whether ``source`` must not be parsed by libcst (nested or large beyond the limits)."""
    refusal = check(source)
    return refusal is not None and refusal.deep


def too_deep_finding(source: str, path: str) -> Finding | None:
    """The OP001 error for a source :func:`too_deep` refuses (None when libcst may parse it)."""
    refusal = check(source)
    if refusal is None or not refusal.deep:
        return None
    from openprogram_analyzers.findings import Finding

    line, column = refusal.line, refusal.column
    return Finding("OP001", refusal.message, "error", path, line, column, line, column + 1)


RECURSION_LIMIT_MESSAGE = "file is too deeply nested to analyse (recursion limit)"
"""OP001 when an analysis ran out of recursion anyway (lint and the pre-run check)."""

_headroom_lock = threading.Lock()
_headroom_users = 0
_headroom_limits = (0, 0)  # the limit found, the limit set


@contextmanager
def recursion_headroom() -> Iterator[None]:
    """Room for libcst's recursive visitors on any tree :func:`check` admits: the recursion
    limit is raised by ``MAX_DEPTH * FRAMES_PER_LEVEL`` while an analysis runs (in any
    thread) and put back after the last one, unless someone else changed it meanwhile.
    Without it a file Python compiles (180 nested lists) ran out of recursion when a
    finding's position was resolved."""
    global _headroom_users, _headroom_limits
    with _headroom_lock:
        if _headroom_users == 0:
            found = sys.getrecursionlimit()
            raised = found + MAX_DEPTH * FRAMES_PER_LEVEL
            sys.setrecursionlimit(raised)
            _headroom_limits = (found, raised)
        _headroom_users += 1
    try:
        yield
    finally:
        with _headroom_lock:
            _headroom_users -= 1
            found, raised = _headroom_limits
            if _headroom_users == 0 and sys.getrecursionlimit() == raised:
                sys.setrecursionlimit(found)


def _deepest(tree: object, source: str) -> tuple[int, int] | None:
    """Location of the first node deeper than :data:`MAX_DEPTH` levels, or None.

    Iterative. Statements (nested at most 100 blocks deep by Python's tokenizer) are
    walked; an expression is walked only when its text is long enough to nest deeply
    (each level of an expression takes at least one character), so ordinary code costs
    one span computation per top-level expression.
    """
    import ast

    starts = [0]
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def span(e: ast.expr) -> int:
        end_line = e.end_lineno or e.lineno
        end = starts[min(end_line, len(starts)) - 1] + (e.end_col_offset or 0)
        return end - (starts[min(e.lineno, len(starts)) - 1] + e.col_offset)

    short = MAX_DEPTH // 4
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]  # type: ignore[list-item]
    iter_children = ast.iter_child_nodes
    while stack:
        node, depth = stack.pop()
        for child in iter_children(node):
            if isinstance(child, ast.expr):
                if span(child) <= short:
                    continue
                found = _deeper_than(child, MAX_DEPTH - depth)
                if found is not None:
                    return found
            else:
                stack.append((child, depth + 1))
    return None


def _deeper_than(root: object, limit: int) -> tuple[int, int] | None:
    import ast

    stack: list[tuple[ast.AST, int]] = [(root, 0)]  # type: ignore[list-item]
    iter_children = ast.iter_child_nodes
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return getattr(node, "lineno", 1), getattr(node, "col_offset", 0) + 1
        # ``a and b and ...`` is one node here but a chain of nested nodes in libcst.
        depth += len(node.values) if isinstance(node, ast.BoolOp) else 1
        stack.extend((child, depth) for child in iter_children(node))
    return None
