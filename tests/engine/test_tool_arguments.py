"""Unusable tool-call arguments (issue 16, item 17), against loopback wire-format servers.

The history sent back keeps what the model wrote, and the tool result says what was
wrong: not valid JSON (with the position) or JSON that is not an object.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from loopback import AnthropicServer, LoopbackServer, OpenAIServer, RecordedSleeps, runtime_for

from openprogram import Runtime

calls: list[dict[str, Any]] = []


def add(a: int, b: int) -> int:
    """Add two numbers."""
    calls.append({"a": a, "b": b})
    return a + b


def openai_tool_reply(server: OpenAIServer, arguments: str) -> None:
    payload = server.tool_payload([("call_1", "add", {})])
    payload["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = arguments
    server.reply_json(payload)


@pytest.mark.parametrize(
    ("sent", "problem"),
    [
        ('{"a": 1,', "not valid JSON (Expecting property name enclosed in double quotes"),
        ("[1, 2]", "are a JSON array, not an object of named arguments"),
        ('"a=1 b=2"', "are a JSON string, not an object of named arguments"),
    ],
)
def test_openai_history_keeps_the_models_text_and_says_what_was_wrong(
    openai_server: OpenAIServer, sleeps: RecordedSleeps, sent: str, problem: str
) -> None:
    calls.clear()
    openai_tool_reply(openai_server, sent)
    openai_server.reply_text("sorry, fixed")
    with Runtime("openai:gpt-test", base_url=openai_server.base_url, retry=sleeps.policy()) as rt:
        result = rt.exec_full("add 1 and 2", tools=[add])
    assert result.text == "sorry, fixed" and calls == []
    [record] = result.tool_calls
    assert record.is_error and problem in record.result and sent in record.result
    history = openai_server.requests[1].json["messages"]
    [assistant] = [m for m in history if m["role"] == "assistant"]
    assert assistant["tool_calls"][0]["function"]["arguments"] == sent  # byte for byte
    assert "_invalid_arguments" not in json.dumps(history)
    [tool] = [m for m in history if m["role"] == "tool"]
    assert problem in tool["content"] and "add" in tool["content"]


def test_anthropic_non_object_input_is_reported_as_such(
    anthropic_server: AnthropicServer, sleeps: RecordedSleeps
) -> None:
    calls.clear()
    payload = anthropic_server.tool_payload([("toolu_1", "add", {})])
    payload["content"][0]["input"] = [1, 2]
    anthropic_server.reply_json(payload)
    anthropic_server.reply_text("ok")
    with Runtime(
        "anthropic:claude-test", base_url=anthropic_server.base_url, retry=sleeps.policy()
    ) as rt:
        result = rt.exec_full("add 1 and 2", tools=[add])
    assert calls == []
    [record] = result.tool_calls
    assert record.is_error and "are a JSON array, not an object" in record.result
    assert "[1, 2]" in record.result and "not valid JSON" not in record.result


def test_valid_arguments_still_reach_the_tool(
    openai_server: OpenAIServer, sleeps: RecordedSleeps
) -> None:
    calls.clear()
    openai_tool_reply(openai_server, '{"a": 1, "b": 2}')
    openai_server.reply_text("3")
    with Runtime("openai:gpt-test", base_url=openai_server.base_url, retry=sleeps.policy()) as rt:
        assert rt.exec("add", tools=[add]) == "3"
    assert calls == [{"a": 1, "b": 2}]


def test_a_recorded_session_replays_unusable_arguments(
    openai_server: OpenAIServer, sleeps: RecordedSleeps, tmp_path: Any
) -> None:
    cassette = tmp_path / "run.jsonl"
    openai_tool_reply(openai_server, "[1, 2]")
    openai_server.reply_text("done")
    with Runtime(
        "openai:gpt-test",
        base_url=openai_server.base_url,
        retry=sleeps.policy(),
        record_to=cassette,
    ) as rt:
        live = rt.exec_full("add", tools=[add])
    with Runtime(f"replay:{cassette}") as rt:
        replayed = rt.exec_full("add", tools=[add])
    assert replayed.tool_calls[0].result == live.tool_calls[0].result
    assert "a JSON array" in replayed.tool_calls[0].result


def now(zone: str = "UTC") -> str:
    """The time now."""
    return f"noon {zone}"


def test_null_arguments_are_no_arguments_on_both_providers(
    server: LoopbackServer, sleeps: RecordedSleeps
) -> None:
    payload = server.tool_payload([("call_n", "now", {})])
    if server.wire == "openai":
        payload["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = "null"
    else:
        payload["content"][0]["input"] = None
    server.reply_json(payload)
    server.reply_text("it is noon")
    with runtime_for(server, retry=sleeps.policy()) as rt:
        result = rt.exec_full("what time is it?", tools=[now])
    [record] = result.tool_calls
    assert not record.is_error and record.result == "noon UTC"
    assert result.text == "it is noon"
