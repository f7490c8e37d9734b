"""Tool-call arguments from a reply: a JSON object, or the model's own text and what was wrong.

Unusable arguments do not fail the reply: the call carries ``raw_arguments`` (sent back
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
    if not isinstance(parsed, dict):
        problem = f"JSON {json_kind(parsed)}, {_NOT_AN_OBJECT}"
        return ToolCall(call_id, name, {}, raw_arguments=text, arguments_error=problem)
    return ToolCall(id=call_id, name=name, arguments=parsed)


def tool_call_from_value(call_id: str, name: str, value: Any) -> ToolCall:
    """A call whose arguments arrived as a JSON value (the Messages API form)."""
    if value is None or isinstance(value, dict):
        return ToolCall(id=call_id, name=name, arguments=value or {})
    problem = f"JSON {json_kind(value)}, {_NOT_AN_OBJECT}"
    return ToolCall(call_id, name, {}, raw_arguments=json.dumps(value), arguments_error=problem)


def json_kind(value: Any) -> str:
    """``an array`` / ``a string`` / ``a number`` ... for messages about a JSON value."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    kinds = {list: "an array", str: "a string", type(None): "null"}
    return kinds.get(type(value), "a value")
