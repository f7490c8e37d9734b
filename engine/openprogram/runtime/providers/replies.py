"""What every HTTP provider checks in a reply, whatever its wire format.

* **How it ended** — one table, :data:`INCOMPLETE`: a reply cut short by the output token
  limit or refused (content filter, model refusal) is not an answer. Its partial text
  would otherwise pass as complete, and truncated structured output could even parse, so
  it raises :class:`~openprogram.errors.IncompleteReply` naming the provider's own reason.
* **Text of content blocks** — a ``null`` text is empty, never the string ``"None"``.
* **A text where one is required** — under ``response_format`` a final reply with no text
  is an error that says so.
"""

from __future__ import annotations

from typing import Any

from openprogram.errors import IncompleteReply
from openprogram.runtime.http import JsonReply, JsonTransport
from openprogram.runtime.types import ModelRequest, ToolCall

#: provider -> its stop/finish reason -> ``"truncated"`` or ``"refused"``. Reasons not
#: listed (``stop``, ``end_turn``, ``tool_calls``, ``tool_use``, ``stop_sequence`` ...)
#: end a whole reply. OpenAI's ``refusal`` is its ``message.refusal`` field.
INCOMPLETE: dict[str, dict[str, str]] = {
    "openai": {"length": "truncated", "content_filter": "refused", "refusal": "refused"},
    "anthropic": {
        "max_tokens": "truncated",
        "model_context_window_exceeded": "truncated",
        "refusal": "refused",
    },
}

#: the wire field that carries the reason, per provider
REASON_FIELD: dict[str, str] = {"openai": "finish_reason", "anthropic": "stop_reason"}

_WHAT = {
    "truncated": (
        "reply cut short ({field}): the output token limit was reached before the answer "
        "ended; raise the limit or ask for a shorter answer"
    ),
    "refused": "reply refused ({field}): the model or the provider's content filter declined",
}


def check_complete(
    reply: JsonReply,
    transport: JsonTransport,
    *,
    reason: Any,
    text: str,
    refusal: Any = None,
) -> None:
    """Raise :class:`IncompleteReply` when the reply was cut short or refused.

    ``reason`` is the wire's finish/stop reason, ``refusal`` a refusal message the wire
    carries apart from the text (OpenAI ``message.refusal``), ``text`` the reply's text
    (shown at the end of the message).
    """
    provider = transport.provider
    table = INCOMPLETE.get(provider, {})
    if isinstance(refusal, str) and refusal.strip():
        said, field, shown = "refusal", "message.refusal", refusal
    elif isinstance(reason, str) and reason in table:
        said, field, shown = reason, f"{REASON_FIELD[provider]} {reason!r}", text
    else:
        return
    outcome = table[said]
    base = transport.reply_error(reply, _WHAT[outcome].format(field=field), shown)
    raise IncompleteReply(
        str(base),
        provider=provider,
        reason=said,
        outcome=outcome,
        status=base.status,
        request_id=base.request_id,
    )


def block_text(block: Any) -> str:
    """The text of one content block (``""`` when its ``text`` is missing or ``null``)."""
    value = block.get("text") if isinstance(block, dict) else None
    return value if isinstance(value, str) else ""


def blocks_text(content: Any) -> str:
    """The text of a message's content: a string, a list of blocks, or ``null`` (``""``)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            block_text(b) for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


def check_text_for_format(
    request: ModelRequest,
    calls: list[ToolCall],
    text: str,
    reply: JsonReply,
    transport: JsonTransport,
) -> None:
    """Under ``response_format`` a final reply (no tool calls) must hold a text."""
    if request.response_format is not None and not calls and not text.strip():
        raise transport.reply_error(
            reply, "the reply has no text although response_format was requested", ""
        )
