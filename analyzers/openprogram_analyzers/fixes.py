"""Fixes: which apply, applying text edits (1-based, end-exclusive), the fix loop, and
reading a file's text the way it is written back (its encoding and line endings)."""

from __future__ import annotations

import difflib
import functools
from collections.abc import Callable, Iterable
from typing import NamedTuple

from openprogram.contract.source import read_source as read_source  # re-exported
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


class Rejected(NamedTuple):
    """A fix not applied: the fixed file would not parse (``reason``: Python's message)."""

    finding: Finding
    reason: str


def unparsable(source: str) -> str | None:
    """Why a fixed ``source`` must not be written: Python's parser (the analysis's first
    step, :func:`guard.check`) refuses it. None when it parses."""
    from openprogram_analyzers.guard import check

    refusal = check(source)
    return None if refusal is None else f"{refusal.message} (line {refusal.line})"


def fix_refusal(source: str, fix: Fix) -> str | None:
    """Why applying ``fix`` alone to ``source`` is refused (None: it may be applied).
    Remembered for the last few: the editor asks for a line's code actions again at
    every cursor move, and each answer would otherwise parse the whole file again."""
    return _refusal(source, fix.edits)


@functools.lru_cache(maxsize=32)
def _refusal(source: str, edits: tuple[TextEdit, ...]) -> str | None:
    return unparsable(apply_edits(source, edits))


def apply_safe_fixes(
    source: str,
    findings: Iterable[Finding],
    *,
    unsafe: bool = False,
    rejected: list[Rejected] | None = None,
) -> tuple[str, int]:
    """Source with every applicable fix applied, and how many were applied. A fix that
    touches text an earlier fix changes waits for the next pass (whole, never in part).
    The result always parses: a fix after which it would not is left out and added to
    ``rejected`` (the one check of every fix, ``--fix`` and the language server's)."""
    off = _offset_of(source)
    taken: list[tuple[int, int]] = []
    chosen: list[Finding] = []
    for f in sorted(findings, key=Finding.sort_key):
        if f.fix is None or not applicable(f.fix, unsafe=unsafe):
            continue
        spans = [(off(e.line, e.column), off(e.end_line, e.end_column)) for e in f.fix.edits]
        if any(_overlap(a, b) for a in spans for b in taken):
            continue
        taken.extend(spans)
        chosen.append(f)
    if not chosen:
        return source, 0
    fixed = _apply_all(source, chosen)
    if unparsable(fixed) is None:
        return fixed, len(chosen)
    refused: list[Rejected] = []  # rare: find the fixes that break the parse on their own
    good: list[Finding] = []
    for f in chosen:
        assert f.fix is not None
        why = fix_refusal(source, f.fix)
        if why is None:
            good.append(f)
        else:
            refused.append(Rejected(f, why))
    fixed = _apply_all(source, good)
    if good and unparsable(fixed) is not None:  # only together: none of them
        why = "together with the other fixes: " + str(unparsable(fixed))
        refused.extend(Rejected(f, why) for f in good)
        good, fixed = [], source
    if rejected is not None:
        rejected.extend(refused)
    return (fixed, len(good)) if good else (source, 0)


def _apply_all(source: str, chosen: list[Finding]) -> str:
    return apply_edits(source, [e for f in chosen if f.fix is not None for e in f.fix.edits])


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return (a[0] < b[1] and b[0] < a[1]) or a[0] == b[0]


MAX_FIX_PASSES = 10


class FixResult(NamedTuple):
    source: str  # the fixed source
    applied: int  # how many fixes were applied
    findings: list[Finding]  # the findings left
    rejected: list[Rejected]  # fixes not applied: the file would not parse after them


def fix_until_stable(
    source: str,
    analyze: Callable[[str], list[Finding]],
    findings: list[Finding] | None = None,
    *,
    unsafe: bool = False,
) -> FixResult:
    """Apply fixes, re-analyse, repeat until nothing changes (at most
    :data:`MAX_FIX_PASSES` passes)."""
    found = analyze(source) if findings is None else findings
    total = 0
    rejected: list[Rejected] = []
    for _ in range(MAX_FIX_PASSES):
        rejected = []  # those of the last pass: the fixes still refused in the result
        fixed, count = apply_safe_fixes(source, found, unsafe=unsafe, rejected=rejected)
        if not count or fixed == source:
            break
        total += count
        source = fixed
        found = analyze(source)
    return FixResult(source, total, found, rejected)


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


def unified_diff(path: str, before: str, after: str) -> str:
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=f"a/{path}",
            tofile=f"b/{path}",
        )
    )
