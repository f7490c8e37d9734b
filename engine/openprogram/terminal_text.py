"""Text from outside (a step's error, a model's reply, a provider's error body) made
inert for a terminal: :func:`inert`, the one rule the CLI and the providers' messages
and log lines use."""

from __future__ import annotations

import re

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


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x20 else f"\\u{code:04x}"
