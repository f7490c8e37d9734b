"""Fixes: which apply, applying text edits (1-based, end-exclusive), the fix loop, and
reading a file's text the way it is written back (its encoding and line endings)."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable

from openprogram_analyzers.findings import Finding, Fix, TextEdit
from openprogram_analyzers.suppressions import SUPPRESS_PREFIX


def _offsets(source: str) -> list[int]:
    starts = [0]
    for i, ch in enumerate(source):
        if ch == "\n":
            starts.append(i + 1)
    return starts


def _offset_of(source: str) -> Callable[[int, int], int]:
    starts = _offsets(source)

    def off(line: int, col: int) -> int:
        if line - 1 >= len(starts):
            return len(source)
        return min(starts[line - 1] + col - 1, len(source))

    return off


def apply_edits(source: str, edits: Iterable[TextEdit]) -> str:
    """Apply non-overlapping edits; overlapping later ones are skipped."""
    off = _offset_of(source)
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


def applicable(fix: Fix | None, *, unsafe: bool = False) -> bool:
    """Whether ``--fix`` (``unsafe``: ``--fix --unsafe-fixes``) applies ``fix``.

    Suppression fixes (``# noqa``) are never applied by ``--fix``: they hide a finding.
    """
    if fix is None or not fix.edits:
        return False
    if fix.safe:
        return True
    return unsafe and not fix.description.startswith(SUPPRESS_PREFIX)


def apply_safe_fixes(
    source: str, findings: Iterable[Finding], *, unsafe: bool = False
) -> tuple[str, int]:
    """Source with every applicable fix applied, and how many were applied. A fix that
    touches text an earlier fix changes waits for the next pass (whole, never in part)."""
    off = _offset_of(source)
    taken: list[tuple[int, int]] = []
    edits: list[TextEdit] = []
    count = 0
    for f in sorted(findings, key=Finding.sort_key):
        if f.fix is None or not applicable(f.fix, unsafe=unsafe):
            continue
        spans = [(off(e.line, e.column), off(e.end_line, e.end_column)) for e in f.fix.edits]
        if any(_overlap(a, b) for a in spans for b in taken):
            continue
        taken.extend(spans)
        edits.extend(f.fix.edits)
        count += 1
    return (apply_edits(source, edits), count) if count else (source, 0)


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return (a[0] < b[1] and b[0] < a[1]) or a[0] == b[0]


MAX_FIX_PASSES = 10


def fix_until_stable(
    source: str,
    analyze: Callable[[str], list[Finding]],
    findings: list[Finding] | None = None,
    *,
    unsafe: bool = False,
) -> tuple[str, int, list[Finding]]:
    """Apply fixes, re-analyse, repeat until nothing changes (at most
    :data:`MAX_FIX_PASSES` passes): ``(fixed source, fixes applied, remaining findings)``."""
    found = analyze(source) if findings is None else findings
    total = 0
    for _ in range(MAX_FIX_PASSES):
        fixed, count = apply_safe_fixes(source, found, unsafe=unsafe)
        if not count or fixed == source:
            break
        total += count
        source = fixed
        found = analyze(source)
    return source, total, found


def creates_duplicate_key(source: str, fix: Fix) -> bool:
    """Whether applying ``fix`` gives some dict literal a key it already has."""
    if not any(e.new_text for e in fix.edits):
        return False
    after = _duplicate_keys(apply_edits(source, fix.edits))
    return after > _duplicate_keys(source)


def _duplicate_keys(source: str) -> int:
    """How many constant dict keys repeat an earlier key of the same dict literal."""
    import ast
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return 0
    repeats = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            keys = [repr(k.value) for k in node.keys if isinstance(k, ast.Constant)]
            repeats += len(keys) - len(set(keys))
    return repeats


def read_source(data: bytes) -> tuple[str, str]:
    """``(text, encoding)`` of a Python file's bytes: UTF-8 unless a PEP 263 coding cookie
    (or a BOM) says otherwise. Line endings are kept as they are (no newline translation).

    Raises ``UnicodeDecodeError`` / ``SyntaxError`` (a bad cookie) / ``LookupError``.
    """
    import io
    import tokenize

    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    if encoding == "utf-8-sig":
        encoding = "utf-8"  # the BOM stays in the text and is written back
    return data.decode(encoding), encoding


def unified_diff(path: str, before: str, after: str) -> str:
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=f"a/{path}",
            tofile=f"b/{path}",
        )
    )
