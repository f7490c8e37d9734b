"""A cheap, linear check for nesting too deep to hand to libcst.

libcst's native parser recurses once per nested bracket and overflows the C stack
(SIGSEGV, no exception) around 1,500 levels. CPython itself refuses more than
``MAX_BRACKETS`` nested brackets ("too many nested parentheses"), so no valid Python is
deeper: such a file gets an OP001 finding from this scan and is never parsed.
The scan skips strings and comments and never raises on partial (mid-edit) text.
"""

from __future__ import annotations

import re

from openprogram_analyzers.findings import Finding

MAX_BRACKETS = 200  # CPython's tokenizer limit (MAXLEVEL)
MESSAGE = (
    "too deeply nested to analyse: more than {limit} nested brackets "
    "(Python itself refuses this file)"
)

_TOKEN = re.compile(r"\"\"\"|'''|\"|'|#|[(\[{]|[)\]}]|\n")
_STR_END = {
    '"""': re.compile(r'\\.|"""', re.S),
    "'''": re.compile(r"\\.|'''", re.S),
    '"': re.compile(r'\\.|"|\n', re.S),
    "'": re.compile(r"\\.|'|\n", re.S),
}


def too_deep_at(source: str, limit: int = MAX_BRACKETS) -> tuple[int, int] | None:
    """1-based (line, column) of the first bracket nested deeper than ``limit``, or None."""
    if source.count("(") + source.count("[") + source.count("{") <= limit:
        return None  # fast path: cannot be that deep
    depth = 0
    line, line_start = 1, 0
    pos, n = 0, len(source)
    while pos < n:
        m = _TOKEN.search(source, pos)
        if m is None:
            return None
        tok, pos = m.group(), m.end()
        if tok == "\n":
            line, line_start = line + 1, pos
        elif tok == "#":
            nl = source.find("\n", pos)
            pos = n if nl < 0 else nl
        elif tok in _STR_END:
            end_re = _STR_END[tok]
            while True:
                e = end_re.search(source, pos)
                if e is None:
                    return None
                pos = e.end()
                g = e.group()
                if g == tok or g == "\n":  # closed, or an unterminated one-line string
                    if g == "\n":
                        pos = e.start()
                    break
            # keep line numbers right across triple-quoted strings
            nls = source.count("\n", m.end(), pos)
            if nls:
                line += nls
                line_start = source.rfind("\n", m.end(), pos) + 1
        elif tok in "([{":
            depth += 1
            if depth > limit:
                return line, m.start() - line_start + 1
        else:
            depth = max(0, depth - 1)
    return None


def nesting_finding(source: str, path: str) -> Finding | None:
    """OP001 for a file nested too deeply to parse safely, else None."""
    at = too_deep_at(source)
    if at is None:
        return None
    line, col = at
    return Finding(
        "OP001",
        MESSAGE.format(limit=MAX_BRACKETS),
        "error",
        path,
        line,
        col,
        line,
        col + 1,
    )
