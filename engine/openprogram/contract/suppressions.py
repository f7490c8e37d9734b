"""Suppression comment patterns, shared by the analyzer and the server's incremental pass.

``# noqa`` / ``# noqa: OP203`` and ``# openprogram: ignore[OP203]`` suppress findings on
their line; ``# openprogram: noqa`` in a comment anywhere suppresses the whole file, and
``# openprogram: noqa: OP404, OP203`` only those codes in the whole file (as
``# ruff: noqa: F401``). Only comments count: the same text inside a string literal
suppresses nothing.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass

LINE_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.I)
LINE_IGNORE = re.compile(r"#\s*openprogram:\s*ignore\[(?P<codes>[^\]]*)\]")
FILE_NOQA = re.compile(
    r"#\s*openprogram\s*:\s*noqa\b(?!\s*\[)"
    r"(?:\s*:\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?",
    re.I,
)
CODE = re.compile(r"[A-Z]+[0-9]+")
MAY_SUPPRESS = re.compile(r"noqa|openprogram\s*:", re.I)  # cheap pre-check of a whole file


def comments(source: str) -> list[tuple[int, int, str]]:
    """``(line, column0, text)`` of every comment (tokenize; stops at a tokenize error)."""
    if "#" not in source:
        return []
    return layout(source).comments


_STRING_START = tuple(
    t for t in (getattr(tokenize, n, None) for n in ("FSTRING_START", "TSTRING_START")) if t
)
_STRING_END = tuple(
    t for t in (getattr(tokenize, n, None) for n in ("FSTRING_END", "TSTRING_END")) if t
)


@dataclass(frozen=True)
class Layout:
    """Where the comments of a source are, and where a line's comment can go."""

    comments: list[tuple[int, int, str]]  # (line, column0, text) of every comment
    comment_line: dict[int, int]  # a line no comment can end -> the line its comment ends
    complete: bool  # False: tokenize stopped at an error (later lines are not mapped)

    def comment_line_of(self, line: int) -> int:
        """The 1-based physical line where a comment for ``line`` goes: ``line`` itself,
        or, for a line continued by a backslash or inside a multi-line string, the last
        line of the run of lines so joined (where Python reads ``#`` as a comment)."""
        return self.comment_line.get(line, line)


def layout(source: str) -> Layout:
    """The comments of ``source`` and the lines joined by a backslash continuation or a
    multi-line string (one tokenize pass; stops at a tokenize error)."""
    found: list[tuple[int, int, str]] = []
    spans: list[tuple[int, int]] = []
    opened: list[int] = []  # start lines of the f-/t-strings open (Python 3.12+ tokens)
    prev: tokenize.TokenInfo | None = None
    complete = True
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                found.append((tok.start[0], tok.start[1], tok.string))
            elif tok.type in _STRING_START:
                opened.append(tok.start[0])
            elif tok.type in _STRING_END and opened:
                spans.append((opened.pop(), tok.end[0]))
            elif tok.end[0] > tok.start[0]:
                spans.append((tok.start[0], tok.end[0]))  # a multi-line string
            if (
                prev is not None
                and prev.type not in (tokenize.NL, tokenize.NEWLINE)
                and tok.start[0] > prev.end[0]
            ):
                spans.append((prev.end[0], tok.start[0]))  # a backslash continuation
            prev = tok
    except (tokenize.TokenError, SyntaxError, IndentationError):
        complete = False
    runs: list[list[int]] = []  # [first, last] line of each run of joined lines
    for a, b in sorted(spans):
        if runs and a <= runs[-1][1]:
            runs[-1][1] = max(runs[-1][1], b)
        else:
            runs.append([a, b])
    joined = {line: last for first, last in runs for line in range(first, last)}
    return Layout(found, joined, complete)


def file_noqa_codes(comment: str) -> frozenset[str] | None:
    """For one comment's text: the codes a file-level suppression lists (empty: every
    code); None when it is not a file-level suppression."""
    m = FILE_NOQA.search(comment)
    if m is None:
        return None
    return frozenset(CODE.findall((m.group("codes") or "").upper()))


def is_file_noqa(comment: str) -> bool:
    """Whether one comment's text suppresses every finding of the file (a bare
    ``# openprogram: noqa``; one that lists codes suppresses only those)."""
    return file_noqa_codes(comment) == frozenset()


def merge_file_level(
    acc: frozenset[str] | None, codes: frozenset[str] | None
) -> frozenset[str] | None:
    """File-level codes after one more comment's ``codes`` (as :func:`file_noqa_codes`):
    lists add up; a bare one (empty: every code) wins."""
    if codes is None:
        return acc
    if acc is None or not codes:
        return codes
    return acc | codes if acc else acc


def file_level_codes(source: str) -> frozenset[str] | None:
    """What the file-level comments of ``source`` suppress: None (nothing), empty (every
    code) or the listed codes. Cheap when no comment can be one."""
    if FILE_NOQA.search(source) is None:
        return None
    acc: frozenset[str] | None = None
    for _line, _col, text in comments(source):
        acc = merge_file_level(acc, file_noqa_codes(text))
    return acc


def has_file_noqa(source: str) -> bool:
    """Whether a comment of ``source`` suppresses the whole file (cheap when none can)."""
    return file_level_codes(source) == frozenset()
