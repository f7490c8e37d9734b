"""Where the cursor is inside a ``method_options = {...}`` literal, read lexically.

Works on incomplete code (the user is typing): a small scanner walks from the opening
brace of the nearest ``method_options`` assignment to the cursor, tracking strings,
comments and brackets. Only the text before the cursor is read.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

_START = re.compile(r"\bmethod_options\s*(?::[^=\n]*)?=\s*\{")
_IDENT_TAIL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")
MAX_LOOKBACK_LINES = 400


@dataclass
class _Frame:
    kind: str
    parent_key: str | None
    key: str | None = None
    after_colon: bool = False


@dataclass
class OptionsContext:
    """``path``: keys of the enclosing dicts below ``method_options`` (``()`` = method names,
    ``(m,)`` = option keys of method m, ``(m, "render_range")``, ``(m, "input")``,
    ``(m, "input", param)``). ``None`` entries mean a non-literal key.
    """

    path: tuple[str | None, ...]
    position: str  # "key" | "value" | "other" (inside a list/tuple/call)
    value_key: str | None
    in_string: bool
    prefix: str
    quote: str | None
    start_line: int  # line of the ``method_options`` assignment
    keys_seen: list[str] = field(default_factory=list)


def find_start(lines: Sequence[str], line: int) -> tuple[int, int] | None:
    """(line, col) of the ``{`` of the nearest ``method_options = {`` at or above ``line``."""
    for ln in range(min(line, len(lines) - 1), max(-1, line - MAX_LOOKBACK_LINES), -1):
        m = _START.search(lines[ln])
        if m:
            return ln, m.end() - 1
    return None


def scan(text: str) -> tuple[list[_Frame], bool, str, str | None] | None:
    """Scan ``text`` (starting at ``{``). None if the root dict closes before the end."""
    stack = [_Frame("{", None)]
    i, n = 1, len(text)
    while i < n:
        c = text[i]
        if c == "#":
            j = text.find("\n", i)
            if j < 0:
                return None  # cursor inside a comment
            i = j
            continue
        if c in "\"'":
            q = c * 3 if text.startswith(c * 3, i) else c
            j = i + len(q)
            end = -1
            while j < n:
                if text[j] == "\\":
                    j += 2
                    continue
                if text.startswith(q, j):
                    end = j
                    break
                if len(q) == 1 and text[j] == "\n":
                    break  # unterminated single-quoted string ends at the line
                j += 1
            if end < 0:
                if j >= n:  # cursor inside this string
                    return stack, True, text[i + len(q) :], q
                i = j
                continue
            top = stack[-1]
            if top.kind == "{" and not top.after_colon:
                top.key = text[i + len(q) : end]
            i = end + len(q)
            continue
        if c in "{[(":
            top = stack[-1]
            pk = top.key if top.kind == "{" and top.after_colon else None
            stack.append(_Frame(c, pk))
        elif c in "}])":
            stack.pop()
            if not stack:
                return None
        elif c == ":" and stack[-1].kind == "{":
            stack[-1].after_colon = True
        elif c == "," and stack[-1].kind == "{":
            stack[-1].after_colon = False
            stack[-1].key = None
        i += 1
    m = _IDENT_TAIL.search(text)
    return stack, False, m.group(0) if m else "", None


def context_at(lines: Sequence[str], line: int, col: int) -> OptionsContext | None:
    """The options context at (0-based line, code-point col), or None outside a literal."""
    if not (0 <= line < len(lines)):
        return None
    start = find_start(lines, line)
    if start is None:
        return None
    sl, sc = start
    if sl == line and sc >= col:
        return None
    parts = [lines[sl][sc:]] if sl != line else []
    parts.extend(lines[sl + 1 : line])
    cur = lines[line][:col] if sl != line else lines[line][sc:col]
    parts.append(cur)
    scanned = scan("".join(parts))
    if scanned is None:
        return None
    stack, in_string, prefix, quote = scanned
    path = tuple(f.parent_key for f in stack[1:])
    top = stack[-1]
    if top.kind != "{":
        position, value_key = "other", None
    elif top.after_colon:
        position, value_key = "value", top.key
    else:
        position, value_key = "key", None
    return OptionsContext(path, position, value_key, in_string, prefix, quote, sl)


def option_table() -> Any:
    """The engine's option table module (``openprogram.options``), or None if missing."""
    try:
        from openprogram import options

        return options
    except Exception:
        return None


_CLASS = re.compile(r"^(\s*)class\s+\w+")
_DEF = re.compile(r"^(\s*)(?:async\s+)?def\s+(\w+)\s*\(")


def class_methods(lines: Sequence[str], inside_line: int) -> list[str]:
    """Method names of the class enclosing ``inside_line`` (lexical; tolerates bad code)."""
    cls_line, cls_indent = -1, -1
    for ln in range(min(inside_line, len(lines) - 1), -1, -1):
        m = _CLASS.match(lines[ln])
        if m:
            cls_line, cls_indent = ln, len(m.group(1).expandtabs())
            break
    if cls_line < 0:
        return []
    names: list[str] = []
    body_indent: int | None = None
    for ln in range(cls_line + 1, len(lines)):
        text = lines[ln]
        stripped = text.strip()
        if not stripped or stripped.startswith("#"):
            continue
        indent = len(text) - len(text.lstrip())
        if indent <= cls_indent:
            break
        m = _DEF.match(text)
        if m:
            if body_indent is None:
                body_indent = len(m.group(1).expandtabs())
            if len(m.group(1).expandtabs()) == body_indent and m.group(2) not in names:
                names.append(m.group(2))
    return names
