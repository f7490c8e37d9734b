"""Suppression comments: the patterns the analyzer, the CLI and the language server share.

- ``# noqa`` / ``# noqa: OP203, OP205`` — a line's findings (all, or the listed codes);
- ``# openprogram: ignore[OP203]`` — the listed codes on that line;
- ``# openprogram: noqa`` / ``# openprogram: noqa: OP404`` — the whole file's findings
  (all, or only the listed codes, as ``# ruff: noqa: F401``).
"""

from __future__ import annotations

import re

CODES = r"[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*"

LINE_NOQA = re.compile(rf"#\s*noqa(?::\s*(?P<codes>{CODES}))?", re.IGNORECASE)
LINE_IGNORE = re.compile(r"#\s*openprogram:\s*ignore\[(?P<codes>[^\]]*)\]")
FILE_NOQA = re.compile(
    rf"#\s*openprogram\s*:\s*noqa\b(?!\s*\[)(?:\s*:\s*(?P<codes>{CODES}))?", re.IGNORECASE
)
CODE = re.compile(r"[A-Z]+[0-9]+")


def file_noqa_codes(comment: str) -> frozenset[str] | None:
    """For a file-level suppression comment: the codes it lists (empty: every code);
    None when ``comment`` is not one."""
    m = FILE_NOQA.search(comment)
    if m is None:
        return None
    return frozenset(c.upper() for c in CODE.findall((m.group("codes") or "").upper()))
