"""Position conversions between analyzer/AST coordinates and LSP positions."""

from __future__ import annotations

import re
from collections.abc import Sequence

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

LINE_BREAK = re.compile(r"\r\n|\r|\n")
"""A line break as LSP and Python's tokenizer count them: ``str.splitlines`` also splits
at a form feed (a PEP 8 page break), a vertical tab, U+2028 and a few more, which would
shift every position after one."""
_OTHER_SPLITLINES_BREAKS = re.compile("[\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")


def split_lines(text: str) -> list[str]:
    """``text``'s lines with their endings, broken only where ``LINE_BREAK`` matches."""
    if _OTHER_SPLITLINES_BREAKS.search(text) is None:
        return text.splitlines(keepends=True)  # the same lines, faster
    return _LINE.findall(text)


def line_text(lines: Sequence[str], line: int) -> str:
    """Line ``line`` (0-based) without its line ending, or '' if out of range."""
    if 0 <= line < len(lines):
        return lines[line].rstrip("\r\n")
    return ""


def to_lsp(lines: Sequence[str], codec: PositionCodec, line: int, col: int) -> types.Position:
    """0-based line + code-point column -> LSP position (clamped to the document)."""
    if line < 0:
        return types.Position(line=0, character=0)
    if line >= len(lines):
        return types.Position(line=len(lines), character=0)
    text = line_text(lines, line)
    col = max(0, min(col, len(text)))
    head = text[:col]
    # an ASCII character is one unit in every position encoding (the codec counts in
    # Python, one character at a time: most of the cost of publishing diagnostics)
    units = col if head.isascii() else codec.client_num_units(head)
    return types.Position(line=line, character=units)


def finding_range(
    lines: Sequence[str],
    codec: PositionCodec,
    line: int,
    column: int,
    end_line: int,
    end_column: int,
) -> types.Range:
    """1-based analyzer coordinates (end column exclusive) -> LSP range."""
    start = to_lsp(lines, codec, line - 1, column - 1)
    end = to_lsp(lines, codec, end_line - 1, end_column - 1)
    if (end.line, end.character) < (start.line, start.character):
        end = start
    return types.Range(start=start, end=end)


def from_lsp(lines: Sequence[str], codec: PositionCodec, pos: types.Position) -> tuple[int, int]:
    """LSP position -> (0-based line, code-point column), clamped."""
    if pos.line >= len(lines):
        return len(lines), 0
    text = line_text(lines, pos.line)
    units = 0
    for i, ch in enumerate(text):
        if units >= pos.character:
            return pos.line, i
        units += codec.client_num_units(ch)
    return pos.line, len(text)


def byte_col_to_char(line: str, byte_col: int) -> int:
    """AST ``col_offset`` (UTF-8 bytes) -> code-point column on ``line``."""
    if line.isascii():
        return byte_col
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))


def offset_of(lines: Sequence[str], line: int, col: int) -> int:
    """Character offset of (0-based line, code-point col) in ``''.join(lines)``."""
    return sum(len(s) for s in lines[:line]) + col
