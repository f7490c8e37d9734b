"""What every HTTP provider checks in a reply, whatever its wire format.

* **How it ended** — one table, :data:`INCOMPLETE`: a reply cut short by the output token
  limit or refused (content filter, model refusal) is not an answer. Its partial text
  would otherwise pass as complete, and truncated structured output could even parse, so
  it raises :class:`~openprogram.errors.IncompleteReply` naming the provider's own reason.
* **Text of content blocks** — a ``null`` text is empty, never the string ``"None"``; a
  text that is no string is a malformed reply.
* **A JSON reply where one is required** — under a JSON ``response_format`` a final reply
  must be JSON (a code fence around it is stripped), else an error says so.
"""

from __future__ import annotations

import json
import re
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

_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*)\n\s*```\s*$", re.DOTALL)

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
    """The text of one content block (``""`` when its ``text`` is missing or ``null``).

    A ``text`` of another kind (a number, an object ...) raises :class:`TypeError`: the
    reply is malformed, which each provider reports as an unexpected response shape."""
    value = block.get("text") if isinstance(block, dict) else None
    if value is None or isinstance(value, str):
        return value or ""
    raise TypeError(f"a text block's text is {type(value).__name__}, not a string")


def blocks_text(content: Any) -> str:
    """The text of a message's content: a string, a list of blocks, or ``null`` (``""``).

    Content of another kind raises :class:`TypeError` (see :func:`block_text`)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            block_text(b) for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
    raise TypeError(f"content is {type(content).__name__}, not text or a list of blocks")


def text_for_format(
    request: ModelRequest,
    calls: list[ToolCall],
    text: str,
    reply: JsonReply,
    transport: JsonTransport,
) -> str:
    """The reply text as returned under ``request``'s ``response_format`` (one rule for
    every provider).

    A final reply (no tool calls) under a JSON ``response_format`` (``json_schema`` or
    ``json_object``) must hold a text, and that text -- once a Markdown code fence around
    it is stripped -- must parse as JSON; the bare JSON is returned. Servers that ignore
    ``response_format`` (OpenAI-compatible local servers often do) or have no native
    equivalent (Anthropic) thus read the same. Anything else raises a
    :class:`~openprogram.errors.ProviderError`. Without a JSON format the text is returned
    unchanged.
    """
    if request.response_format is None or calls:
        return text
    if request.response_format.get("type") == "text":
        return text
    if not text.strip():
        raise transport.reply_error(
            reply, "the reply has no text although response_format was requested", ""
        )
    match = _FENCE.match(text)
    candidate = (match.group(1) if match else text).strip()
    try:
        json.loads(candidate)
    except (ValueError, RecursionError):
        raise transport.reply_error(
            reply, "reply is not valid JSON although response_format was requested", text
        ) from None
    return candidate
