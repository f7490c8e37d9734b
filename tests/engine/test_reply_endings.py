"""How a model reply ended, through real HTTP servers on 127.0.0.1 speaking the OpenAI
Chat Completions and Anthropic Messages wire formats, written as a Program uses ``llm``
and ``decision.make``.

A reply cut short by the output token limit (OpenAI ``finish_reason: "length"``,
Anthropic ``stop_reason: "max_tokens"``) or refused (``"content_filter"``, a
``message.refusal``, ``stop_reason: "refusal"``) used to come back as a complete answer:
``llm`` returned the partial text, and JSON that happened to parse passed
``response_format``. Both providers now raise the same ``IncompleteReply`` naming the
provider's reason. A ``null`` text (``{"type": "text", "text": null}``, ``"content":
null``) used to become the text ``"None"``; it is no text now, and where a text is
required the error says the reply has none.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from loopback import LoopbackServer, runtime_for

from openprogram import DecisionError, decision, llm
from openprogram.errors import IncompleteReply, ProviderError
from openprogram.runtime import RetryPolicy, Runtime

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def runtime(server: LoopbackServer) -> Runtime:
    return runtime_for(server, retry=RetryPolicy(max_retries=0))


def ended(server: LoopbackServer, text: Any, reason: str, **message: Any) -> dict[str, Any]:
    """A text reply of ``server``'s wire format whose finish/stop reason is ``reason``
    (``message``: extra fields of the OpenAI message)."""
    payload = server.text_payload("")
    if server.wire == "openai":
        choice = payload["choices"][0]
        choice["message"] = {"role": "assistant", "content": text, **message}
        choice["finish_reason"] = reason
    else:
        payload["content"] = [{"type": "text", "text": text}]
        payload["stop_reason"] = reason
    return payload


TRUNCATED = {"openai": "length", "anthropic": "max_tokens"}
REFUSED = {"openai": "content_filter", "anthropic": "refusal"}


def test_a_reply_cut_short_is_an_error_not_the_partial_text(server: LoopbackServer) -> None:
    reason = TRUNCATED[server.wire]
    server.reply_json(ended(server, "The three steps are: first, mix the", reason))
    with runtime(server) as rt, pytest.raises(IncompleteReply) as info:
        llm("Explain the three steps.", runtime=rt)
    err = info.value
    assert (err.provider, err.reason, err.outcome) == (server.wire, reason, "truncated")
    assert str(err).startswith(f"{server.wire}: reply cut short (")
    assert repr(reason) in str(err) and "output token limit" in str(err)
    assert "first, mix the" in str(err)  # what came back, to see where it stopped


def test_truncated_structured_output_that_parses_is_never_a_result(
    server: LoopbackServer,
) -> None:
    """``{"n": 1`` cut at ``{"n": 1}`` of ``{"n": 12}`` would parse: the reason decides."""
    server.reply_json(ended(server, '{"n": 1}', TRUNCATED[server.wire]))
    with runtime(server) as rt, pytest.raises(IncompleteReply, match="reply cut short"):
        llm("Count.", response_format=SCHEMA, runtime=rt)


def test_a_decision_cut_short_is_not_parsed(server: LoopbackServer) -> None:
    """A truncated reply whose JSON names an option is not taken as the choice."""
    server.reply_json(ended(server, '```json\n{"call": "ship"}\n```', TRUNCATED[server.wire]))
    with runtime(server) as rt, pytest.raises(IncompleteReply):
        decision.make("Ship it?", {"ship": "shipped", "hold": "held"}, runtime=rt)
    assert len(server.requests) == 1


def test_a_refused_reply_is_an_error_naming_the_reason(server: LoopbackServer) -> None:
    reason = REFUSED[server.wire]
    server.reply_json(ended(server, "", reason))
    with runtime(server) as rt, pytest.raises(IncompleteReply) as info:
        llm("Something.", runtime=rt)
    err = info.value
    assert (err.provider, err.reason, err.outcome) == (server.wire, reason, "refused")
    assert str(err).startswith(f"{server.wire}: reply refused (") and repr(reason) in str(err)


def test_an_openai_refusal_field_is_a_refusal(openai_server: LoopbackServer) -> None:
    openai_server.reply_json(
        ended(openai_server, None, "stop", refusal="I can't help with that request.")
    )
    with runtime(openai_server) as rt, pytest.raises(IncompleteReply) as info:
        llm("Something.", response_format=SCHEMA, runtime=rt)
    assert (info.value.reason, info.value.outcome) == ("refusal", "refused")
    assert "message.refusal" in str(info.value)
    assert "I can't help with that request." in str(info.value)


def test_a_null_text_is_no_text_never_the_word_none(server: LoopbackServer) -> None:
    server.reply_json(ended(server, None, "stop" if server.wire == "openai" else "end_turn"))
    with runtime(server) as rt:
        assert llm("Say nothing.", runtime=rt) == ""


def test_a_null_text_is_not_a_decision_and_the_error_says_the_reply_is_empty(
    server: LoopbackServer,
) -> None:
    done = "stop" if server.wire == "openai" else "end_turn"
    server.reply_json(ended(server, None, done))
    server.reply_json(ended(server, None, done))
    with runtime(server) as rt, pytest.raises(DecisionError) as info:
        decision.make("Ship it?", {"ship": "shipped", "hold": "held"}, runtime=rt)
    assert info.value.kind == "no_json"
    assert "the reply is empty" in info.value.message
    assert "None" not in str(info.value)
    # the retry shows the model its previous reply as it was: empty, not "None"
    retry = json.dumps(server.requests[1].json)
    assert "Previous reply:\\n<<<\\n\\n>>>" in retry


def test_a_null_text_under_response_format_says_the_reply_has_no_text(
    server: LoopbackServer,
) -> None:
    server.reply_json(ended(server, None, "stop" if server.wire == "openai" else "end_turn"))
    with runtime(server) as rt, pytest.raises(ProviderError) as info:
        llm("Count.", response_format=SCHEMA, runtime=rt)
    assert "the reply has no text although response_format was requested" in str(info.value)
    assert not isinstance(info.value, IncompleteReply)
