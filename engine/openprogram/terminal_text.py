"""Text from outside (a step's error, a model's reply, a provider's error body) made
inert for a terminal: :func:`inert`, the one rule the CLI and the providers' messages
and log lines use; :func:`inert_json`, the one writer of the CLI's JSON output."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

# C0 controls but tab and newline, DEL, C1 controls, and the bidirectional overrides,
# embeddings and isolates (which reorder what a line shows)
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def inert(text: str) -> str:
    """``text`` made inert for a terminal: each control character (C0 but tab and newline,
    DEL, C1) and bidirectional override is written as a visible escape, ``\\x1b`` for
    a C0 one, ``\\u009b`` / ``\\u202e`` for the others (valid inside a JSON string too).
    Recorded text (a step's error, a model's reply, a tool's name) goes through it
    before the CLI prints it in human format, so it cannot set the window title, clear
    the screen or colour a line; it leaves any other text as it is (twice is once)."""
    return _CONTROL.sub(_escape, text)


def inert_line(text: str) -> str:
    """:func:`inert` for a line that must stay one line (``run … failed: <error>``, a
    worker's line per execution): a newline is written ``\\n`` as well (a carriage
    return already shows as ``\\x0d``). Multi-line output (``show``'s tree, a result's
    JSON) keeps using :func:`inert`."""
    return inert(text).replace("\n", "\\n")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x20 else f"\\u{code:04x}"


# what a JSON text written for a terminal escapes besides what ``json.dumps`` does (C0
# controls): the C1 controls and the bidirectional embeddings, overrides and isolates;
# and a lone surrogate (an older store's), which no UTF-8 output can hold
_JSON_INERT = re.compile("[\x80-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def inert_json(
    value: Any, *, default: Callable[[Any], Any] | None = None, allow_nan: bool = True
) -> str:
    """``value`` as the one-line JSON text every ``--json`` (and ``show --format json``)
    of the CLI prints: other non-ASCII text stays readable (``ensure_ascii=False``), but
    the C1 controls (U+0080-U+009F) and bidirectional overrides (U+202A-U+202E,
    U+2066-U+2069) are written as ``\\uXXXX`` escapes, as ``json.dumps`` writes the C0
    ones, so a terminal shows them instead of obeying them (the text reads back the same);
    a lone surrogate is escaped too (``ensure_ascii`` did that before).
    ``default`` and ``allow_nan`` as for ``json.dumps``."""
    text = json.dumps(value, ensure_ascii=False, default=default, allow_nan=allow_nan)
    return _JSON_INERT.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
