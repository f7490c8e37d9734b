"""Tool-call arguments from a reply: a JSON object, or the model's own text and what was wrong.

``null`` arguments (either form) are no arguments, like an empty text. Unusable
arguments do not fail the reply: the call carries ``raw_arguments`` (sent back
to the model unchanged) and ``arguments_error``, and the tool loop answers the call with
an error result that quotes both, so the model can correct itself.
"""

from __future__ import annotations

import json
from typing import Any

from openprogram.runtime.types import ToolCall

_NOT_AN_OBJECT = "not an object of named arguments"


def tool_call_from_text(call_id: str, name: str, text: str) -> ToolCall:
    """A call whose arguments arrived as JSON text (the Chat Completions form)."""
    if not text.strip():
        return ToolCall(id=call_id, name=name, arguments={})
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as exc:
        problem = f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        return ToolCall(call_id, name, {}, raw_arguments=text, arguments_error=problem)
    except (ValueError, RecursionError):
        return ToolCall(call_id, name, {}, raw_arguments=text, arguments_error="not valid JSON")
    return _from_value(call_id, name, parsed, text)


def tool_call_from_value(call_id: str, name: str, value: Any) -> ToolCall:
    """A call whose arguments arrived as a JSON value (the Messages API form)."""
    return _from_value(call_id, name, value, None)


def _from_value(call_id: str, name: str, value: Any, text: str | None) -> ToolCall:
    """The one rule for both forms: an object is the arguments, ``null`` (like no text at
    all) is no arguments, anything else is unusable (the model's own text kept)."""
    if value is None:
        return ToolCall(id=call_id, name=name, arguments={})
    if isinstance(value, dict):
        return ToolCall(id=call_id, name=name, arguments=value)
    raw = text if text is not None else json.dumps(value)
    problem = f"{json_kind(value)}, {_NOT_AN_OBJECT}"
    return ToolCall(call_id, name, {}, raw_arguments=raw, arguments_error=problem)


def json_kind(value: Any) -> str:
    """``a JSON array`` / ``a JSON string`` / ``a JSON number`` ... for messages about a
    JSON value (``the arguments ... are a JSON string, not an object ...``)."""
    if isinstance(value, bool):
        return "a JSON boolean"
    if isinstance(value, (int, float)):
        return "a JSON number"
    kinds = {list: "a JSON array", str: "a JSON string", type(None): "JSON null"}
    return kinds.get(type(value), "a JSON value")
