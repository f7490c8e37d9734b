"""Re-export of :mod:`openprogram.decision` (the seed's ``agentic_programming.decision``)."""

from __future__ import annotations

from openprogram.decision import (
    DECISION_FINISH_INSTRUCTION,
    ERROR_KINDS,
    DecisionError,
    Menu,
    Option,
    Param,
    build_retry_message,
    decide_from_reply,
    extract_action,
    make,
    normalize_options,
    parse_args,
    render_options,
    resolve_decision,
)

__all__ = [
    "DECISION_FINISH_INSTRUCTION",
    "ERROR_KINDS",
    "DecisionError",
    "Menu",
    "Option",
    "Param",
    "build_retry_message",
    "decide_from_reply",
    "extract_action",
    "make",
    "normalize_options",
    "parse_args",
    "render_options",
    "resolve_decision",
]
