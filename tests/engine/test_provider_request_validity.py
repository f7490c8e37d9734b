"""Every request body a provider builds is one its real API accepts, and both providers
read a reply by the same rules (JSON under ``response_format``, a malformed reply, null
tool arguments, string content for text-only messages).

The loopback servers speak the real wire formats; the tests assert on the bodies they
received.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from loopback import LoopbackServer, RecordedSleeps, runtime_for

from openprogram import agent, decision
from openprogram.decision import DecisionError
from openprogram.errors import ProviderError
from openprogram.runtime import Runtime

CHOICES = {"close": "CLOSED", "escalate": "ESC"}


def make_runtime(server: LoopbackServer, sleeps: RecordedSleeps) -> Runtime:
    return runtime_for(server, retry=sleeps.policy(max_retries=0))


def anthropic_problems(body: dict[str, Any]) -> list[str]:
    """What the Messages API would reject (HTTP 400) in ``body``."""
    problems: list[str] = []
    used: set[str] = set()
    has_tool_blocks = False
    for index, message in enumerate(body["messages"]):
        content = message["content"]
        if isinstance(content, list):
            if not content:
                problems.append(f"messages[{index}] has an empty content list")
            for block in content:
                if block["type"] == "text" and not block["text"].strip():
                    problems.append(f"messages[{index}] has a blank text block {block['text']!r}")
                if block["type"] == "tool_use":
                    used.add(block["name"])
                has_tool_blocks = has_tool_blocks or block["type"] in ("tool_use", "tool_result")
        elif not content.strip():
            problems.append(f"messages[{index}] has blank content")
    if has_tool_blocks and not body.get("tools"):
        problems.append("tool blocks in the history but no tools field")
    missing = used - {t["name"] for t in body.get("tools") or []}
    if missing:
        problems.append(f"tool_use of undefined tools {sorted(missing)}")
    return problems


def lookup(key: str = "x") -> str:
    """Look a key up."""
    return "value-of-" + key


def test_decision_retry_after_a_tool_call_offers_the_same_tool_definitions(
    server: LoopbackServer, sleeps: RecordedSleeps
) -> None:
    server.reply_tool_calls([("toolu_1", "lookup", {"key": "a"})])
    server.reply_text("I cannot decide.")
    server.reply_text('{"call": "close"}')
    with make_runtime(server, sleeps) as rt:
        assert rt.exec("Handle it", tools=[lookup], choices=CHOICES) == "CLOSED"
    bodies = [r.json for r in server.requests]
    assert len(bodies) == 3
    retry = bodies[2]
    assert retry["tools"] == bodies[0]["tools"]
    assert "tool_choice" not in bodies[0]
    if server.wire == "anthropic":
        for body in bodies:
            assert anthropic_problems(body) == []
        assert retry["tool_choice"] == {"type": "none"}  # described, not to be called again
    else:
        assert retry["tool_choice"] == "none"


def test_a_tool_call_in_the_decision_retry_is_never_run_but_no_valid_decision(
    server: LoopbackServer, sleeps: RecordedSleeps
) -> None:
    """A local server that ignores ``tool_choice: none`` answers the decision retry with
    a tool call: the tool is not run and the call is an ``unknown_call`` choice (no
    "unknown tool" result, no MaxIterationsExceeded)."""
    ran: list[str] = []

    def lookup(key: str = "x") -> str:
        """Look a key up."""
        ran.append(key)
        return "value-of-" + key

    server.reply_tool_calls([("toolu_1", "lookup", {"key": "a"})])
    server.reply_text("I cannot decide.")
    server.reply_tool_calls([("toolu_2", "lookup", {"key": "b"})])  # tool_choice ignored
    with make_runtime(server, sleeps) as rt:
        with pytest.raises(DecisionError) as info:
            agent("Handle it", tools=[lookup], choices=CHOICES, runtime=rt)
    assert info.value.kind == "unknown_call" and info.value.attempts == 2
    assert 'call "lookup" is not an option; choose one of: "close", "escalate"' in str(info.value)
    assert ran == ["a"]  # the turn's own call ran; the retry's never did
    assert len(server.requests) == 3


def test_decision_make_reads_a_tool_call_it_never_offered_as_a_bad_choice(
    server: LoopbackServer, sleeps: RecordedSleeps
) -> None:
    server.reply_tool_calls([("toolu_1", "lookup", {"key": "a"})])  # no tools were sent
    server.reply_text('{"call": "escalate"}')
    with make_runtime(server, sleeps) as rt:
        assert decision.make("Handle it", CHOICES, runtime=rt) == "ESC"
    retry = json.dumps(server.requests[1].json["messages"])
    assert "Error (unknown_call)" in retry and "is not an option" in retry


@pytest.mark.parametrize("reply", ["", "   ", "\n\t"])
def test_decision_retry_after_an_empty_or_blank_reply_is_a_valid_request(
    anthropic_server: LoopbackServer, sleeps: RecordedSleeps, reply: str
) -> None:
    anthropic_server.reply_text(reply)
    anthropic_server.reply_text('{"call": "escalate"}')
    with make_runtime(anthropic_server, sleeps) as rt:
        assert rt.exec("Handle it", tools=[], choices=CHOICES) == "ESC"
    retry = anthropic_server.requests[1].json
    assert anthropic_problems(retry) == []
    # the blank reply is no message: the retry's words follow the prompt in one user turn
    [turn] = retry["messages"]
    assert turn["role"] == "user" and len(turn["content"]) == 2
    assert "Handle it" in turn["content"][0]["text"]


def test_a_history_with_tool_blocks_but_no_tools_still_defines_them(
    anthropic_server: LoopbackServer, sleeps: RecordedSleeps
) -> None:
    from openprogram.runtime.types import Message, ToolCall

    history = [
        Message(role="user", content="look a up"),
        Message(role="assistant", content=" ", tool_calls=[ToolCall("t1", "lookup", {})]),
        Message(role="tool", content="value-of-x", tool_call_id="t1"),
        Message(role="assistant", content="done"),
    ]
    anthropic_server.reply_text("ok")
    with make_runtime(anthropic_server, sleeps) as rt:
        assert rt.exec("and now?", tools=[], history=history) == "ok"
    body = anthropic_server.requests[0].json
    assert anthropic_problems(body) == []
    assert [t["name"] for t in body["tools"]] == ["lookup"]
    assert body["tool_choice"] == {"type": "none"}


SCHEMA = {
    "type": "json_schema",
    "json_schema": {
        "name": "P",
        "schema": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
            "required": ["name", "age"],
        },
    },
}


def test_a_fenced_json_reply_reads_the_same_on_both_providers(
    server: LoopbackServer, sleeps: RecordedSleeps
) -> None:
    server.reply_text('```json\n{"name": "x", "age": 3}\n```')
    with make_runtime(server, sleeps) as rt:
        assert rt.exec("person", response_format=SCHEMA) == '{"name": "x", "age": 3}'


@pytest.mark.parametrize("reply", ['Sure: {"name": "x"}', "I am not sure."])
def test_a_reply_that_is_not_json_under_response_format_fails_on_both_providers(
    server: LoopbackServer, sleeps: RecordedSleeps, reply: str
) -> None:
    server.reply_text(reply)
    with make_runtime(server, sleeps) as rt, pytest.raises(ProviderError) as info:
        rt.exec("person", response_format=SCHEMA)
    assert "reply is not valid JSON although response_format was requested" in str(info.value)


def test_llm_with_a_pydantic_class_reads_a_fenced_reply_from_an_openai_server(
    openai_server: LoopbackServer, sleeps: RecordedSleeps
) -> None:
    from pydantic import BaseModel

    from openprogram import llm

    class Person(BaseModel):
        name: str
        age: int

    openai_server.reply_text('```json\n{"name": "x", "age": 3}\n```')
    with make_runtime(openai_server, sleeps) as rt:
        text = llm("person", response_format=Person, runtime=rt)
    assert Person.model_validate_json(text) == Person(name="x", age=3)
    body = openai_server.requests[0].json
    assert body["response_format"]["json_schema"]["name"] == "Person"


def test_anthropic_empty_content_without_a_stop_reason_is_an_unexpected_shape(
    anthropic_server: LoopbackServer, sleeps: RecordedSleeps
) -> None:
    anthropic_server.reply_json({"id": "m1", "type": "message", "content": []})
    with make_runtime(anthropic_server, sleeps) as rt, pytest.raises(ProviderError) as info:
        rt.exec("hello")
    assert "unexpected response shape" in str(info.value)


def test_anthropic_empty_content_that_ended_is_an_empty_reply(
    anthropic_server: LoopbackServer, sleeps: RecordedSleeps
) -> None:
    anthropic_server.reply_json({"type": "message", "content": [], "stop_reason": "end_turn"})
    with make_runtime(anthropic_server, sleeps) as rt:
        assert rt.exec("hello") == ""


def test_a_text_that_is_not_a_string_is_an_unexpected_shape_on_both_providers(
    server: LoopbackServer, sleeps: RecordedSleeps
) -> None:
    if server.wire == "openai":
        message = {"role": "assistant", "content": [{"type": "text", "text": 42}]}
        server.reply_json({"choices": [{"message": message, "finish_reason": "stop"}]})
    else:
        content = [{"type": "text", "text": 42}]
        server.reply_json({"type": "message", "content": content, "stop_reason": "end_turn"})
    with make_runtime(server, sleeps) as rt, pytest.raises(ProviderError) as info:
        rt.exec("hello")
    assert "unexpected response shape" in str(info.value)


def test_openai_context_blocks_are_sent_as_one_string(
    openai_server: LoopbackServer, sleeps: RecordedSleeps
) -> None:
    from openprogram.context import Context

    openai_server.reply_text("ok")
    context = Context(blocks={"ticket": "T-1 printer on fire"})
    with make_runtime(openai_server, sleeps) as rt:
        assert rt.exec("Summarise the ticket", context=context) == "ok"
    content = openai_server.requests[0].json["messages"][-1]["content"]
    assert isinstance(content, str)
    assert "T-1 printer on fire" in content and content.endswith("Summarise the ticket")


def test_openai_content_with_an_image_stays_a_list_of_parts(
    openai_server: LoopbackServer, sleeps: RecordedSleeps
) -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    blocks = [{"type": "text", "text": "What is this?"}, image]
    openai_server.reply_text("a dot")
    with make_runtime(openai_server, sleeps) as rt:
        assert rt.exec(blocks) == "a dot"
    assert openai_server.requests[0].json["messages"][-1]["content"] == blocks
