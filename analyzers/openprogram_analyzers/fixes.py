"""Apply text edits (1-based, end-exclusive) to source text."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from openprogram_analyzers.findings import Finding, TextEdit


def _offsets(source: str) -> list[int]:
    starts = [0]
    for i, ch in enumerate(source):
        if ch == "\n":
            starts.append(i + 1)
    return starts


def apply_edits(source: str, edits: Iterable[TextEdit]) -> str:
    """Apply non-overlapping edits; overlapping later ones are skipped."""
    starts = _offsets(source)

    def off(line: int, col: int) -> int:
        if line - 1 >= len(starts):
            return len(source)
        return min(starts[line - 1] + col - 1, len(source))

    spans = sorted(
        ((off(e.line, e.column), off(e.end_line, e.end_column), e.new_text) for e in edits),
        key=lambda s: (s[0], s[1]),
    )
    out: list[str] = []
    pos = 0
    for start, end, text in spans:
        if start < pos:
            continue
        out.append(source[pos:start])
        out.append(text)
        pos = end
    out.append(source[pos:])
    return "".join(out)


def apply_safe_fixes(source: str, findings: Iterable[Finding]) -> tuple[str, int]:
    """Source with every safe fix applied, and how many fixes were applied."""
    edits: list[TextEdit] = []
    count = 0
    for f in findings:
        if f.fix is not None and f.fix.safe:
            edits.extend(f.fix.edits)
            count += 1
    return (apply_edits(source, edits), count) if count else (source, 0)


def unified_diff(path: str, before: str, after: str) -> str:
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=f"a/{path}",
            tofile=f"b/{path}",
        )
    )
