"""Aligned text tables for the terminal (``runs``, ``sessions``, ``show``); every piece
of recorded text in them passes through :func:`openprogram.terminal_text.inert`.

Columns are padded to their widest cell by display width (a wide CJK character or an emoji
counts two columns, a combining mark none). On a terminal the table is fitted to its width:
the one flexible column (an entry, an output) is cut with ``…`` so no line wraps; piped
output keeps every cell whole.
"""

from __future__ import annotations

import shutil
import sys
import unicodedata
from collections.abc import Sequence
from typing import TextIO

from openprogram.terminal_text import inert_line

GAP = "  "
MIN_FLEX = 12  # the flexible column never shrinks below this


def cell_width(text: str) -> int:
    """Columns ``text`` takes in a terminal."""
    if text.isascii():
        return len(text)
    width = 0
    for ch in text:
        if unicodedata.combining(ch) or unicodedata.category(ch) in ("Cf", "Mn", "Me"):
            continue
        width += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return width


def cut(text: str, width: int, ellipsis: str = "…") -> str:
    """``text`` cut to at most ``width`` columns, ending in ``ellipsis`` when cut."""
    if cell_width(text) <= width:
        return text
    room = max(0, width - cell_width(ellipsis))
    out, used = [], 0
    for ch in text:
        w = cell_width(ch)
        if used + w > room:
            break
        out.append(ch)
        used += w
    return "".join(out) + ellipsis


def terminal_width(stream: TextIO | None = None) -> int | None:
    """The terminal's width when ``stream`` (stdout) is a terminal, else None."""
    stream = stream or sys.stdout
    try:
        if not stream.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    return shutil.get_terminal_size().columns


def format_table(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    right: Sequence[int] = (),
    flex: int | None = None,
    width: int | None = None,
) -> list[str]:
    """The lines of an aligned table: ``right`` are the right-aligned column indexes,
    ``flex`` the column cut to make lines fit ``width`` columns (None: no limit)."""
    table = [[inert_line(c) for c in header], *[[inert_line(c) for c in r] for r in rows]]
    ncols = len(header)
    widths = [max(cell_width(r[i]) for r in table) for i in range(ncols)]
    if width is not None and flex is not None:
        others = sum(w for i, w in enumerate(widths) if i != flex) + len(GAP) * (ncols - 1)
        room = max(MIN_FLEX, width - others)
        if widths[flex] > room:
            widths[flex] = room
            for r in table:
                r[flex] = cut(r[flex], room, "…" if unicode_ok() else "...")
    lines = []
    for r in table:
        cells = []
        for i, (text, w) in enumerate(zip(r, widths, strict=True)):
            pad = " " * max(0, w - cell_width(text))
            cells.append(pad + text if i in right else text + pad)
        lines.append(GAP.join(cells).rstrip())
    return lines


def unicode_ok() -> bool:
    """Whether stdout can print box-drawing characters and ``…``."""
    encoding = (getattr(sys.stdout, "encoding", None) or "").lower()
    return encoding.replace("-", "") in ("utf8", "utf16", "utf32")
