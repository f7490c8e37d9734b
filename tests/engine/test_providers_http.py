"""openai: and anthropic: providers against real HTTP servers on 127.0.0.1.

Each wire-format behaviour is checked for both providers: plain reply, tool-call round
trip, JSON response_format, 429 + Retry-After, 500 then success, timeout, malformed JSON,
non-JSON error page, connection refused, non-retried 4xx.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from loopback import (
    SENTINEL_KEY,
    WIRES,
    LoopbackServer,
    Received,
    RecordedSleeps,
    Reply,
    runtime_for,
)

from openprogram.errors import ProviderError
from openprogram.runtime import Runtime


def make_runtime(server: LoopbackServer, sleeps: RecordedSleeps, **kw: Any) -> Runtime:
    retries = kw.pop("max_retries", 3)
    return runtime_for(server, retry=sleeps.policy(max_retries=retries), **kw)


def tool_results(server: LoopbackServer, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool results in a request body, as {id, content, is_error}."""
    if server.wire == "openai":
        return [
            {"id": m["tool_call_id"], "content": m["content"], "is_error": None}
            for m in body["messages"]
            if m["role"] == "tool"
        ]
    out = []
    for message in body["messages"]:
        if message["role"] == "user" and isinstance(message["content"], list):
            for block in message["content"]:
                if block["type"] == "tool_result":
                    out.append(
                        {
                            "id": block["tool_use_id"],
                            "content": block["content"],
                            "is_error": block.get("is_error", False),
                        }
                    )
    return out


def test_plain_reply_sends_the_wire_format(server: LoopbackServer, sleeps: RecordedSleeps) -> None:
    server.reply_text("Hello there", usage=(21, 4))
    with make_runtime(server, sleeps, system="Be brief.") as rt:
        result = rt.exec_full("Say hello")
    assert result.text == "Hello there"
    assert (result.usage.input_tokens, result.usage.output_tokens) == (21, 4)
    assert result.last_response.request_id == "req_1"
    [sent] = server.requests
    body = sent.json
    if server.wire == "openai":
        assert sent.path == "/v1/chat/completions"
        assert sent.headers["authorization"] == f"Bearer {SENTINEL_KEY}"
        assert body["model"] == "gpt-test"
        assert body["messages"] == [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Say hello"},
        ]
    else:
        assert sent.path == "/v1/messages"
        assert sent.headers["x-api-key"] == SENTINEL_KEY
        assert sent.headers["anthropic-version"] == "2023-06-01"
        assert body["system"] == "Be brief."
        assert body["max_tokens"] == 4096
        assert body["messages"] == [
            {"role": "user", "content": [{"type": "text", "text": "Say hello"}]}
        ]
    assert sleeps.delays == []


def test_content_blocks_pass_through(server: LoopbackServer, sleeps: RecordedSleeps) -> None:
    server.reply_text("ok")
    blocks = [{"type": "text", "text": "part one"}, {"type": "text", "text": "part two"}]
    with make_runtime(server, sleeps) as rt:
        assert rt.exec(blocks) == "ok"
    last = server.requests[0].json["messages"][-1]
    if server.wire == "openai":  # text-only parts go as one string (some servers take no list)
        assert last == {"role": "user", "content": "part one\n\npart two"}
    else:
        assert last == {"role": "user", "content": blocks}


def test_tool_call_round_trip(server: LoopbackServer, sleeps: RecordedSleeps) -> None:
    seen: list[list[dict[str, Any]]] = []

    def weather(city: str, unit: str = "C") -> str:
        """Current weather for a city."""
        return f"{city}: 21 {unit}"

    def second_turn(request: Received) -> Reply:
        results = tool_results(server, request.json)
        seen.append(results)
        if results != [
            {"id": "call_w1", "content": "Paris: 21 C", "is_error": results[0]["is_error"]}
        ]:
            return Reply(
                400, json.dumps({"error": {"message": f"bad tool result {results}"}}).encode()
            )
        payload = server.text_payload(f"It is {results[0]['content']}")
        return Reply(200, json.dumps(payload).encode(), {"content-type": "application/json"})

    server.reply_tool_calls([("call_w1", "weather", {"city": "Paris"})])
    server.reply_with(second_turn)
    with make_runtime(server, sleeps) as rt:
        result = rt.exec_full("Weather in Paris?", tools=[weather])
    assert result.text == "It is Paris: 21 C"
    assert [(c.name, c.arguments, c.result) for c in result.tool_calls] == [
        ("weather", {"city": "Paris"}, "Paris: 21 C")
    ]
    assert result.iterations == 2
    assert result.usage.input_tokens == 13 + 11
    first = server.requests[0].json
    if server.wire == "openai":
        [tool] = first["tools"]
        assert tool["type"] == "function" and tool["function"]["name"] == "weather"
        assert tool["function"]["parameters"]["required"] == ["city"]
        assistant = server.requests[1].json["messages"][1]
        assert assistant["tool_calls"][0]["id"] == "call_w1"
        assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"city": "Paris"}
    else:
        [tool] = first["tools"]
        assert tool["name"] == "weather" and tool["input_schema"]["required"] == ["city"]
        assistant = server.requests[1].json["messages"][1]
        assert assistant == {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "call_w1", "name": "weather", "input": {"city": "Paris"}}
            ],
        }
    assert len(seen) == 1


def test_tool_exception_is_fed_back_as_error_result(
    server: LoopbackServer, sleeps: RecordedSleeps
) -> None:
    def explode(reason: str) -> str:
        """Always fails."""
        raise RuntimeError(f"boom: {reason}")

    server.reply_tool_calls([("c1", "explode", {"reason": "disk"}), ("c2", "missing_tool", {})])
    server.reply_text("recovered")
    with make_runtime(server, sleeps) as rt:
        result = rt.exec_full("go", tools=[explode])
    assert result.text == "recovered"
    results = tool_results(server, server.requests[1].json)
    assert results[0]["content"] == "RuntimeError: boom: disk"
    assert "unknown tool 'missing_tool'" in results[1]["content"]
    assert all(r.is_error for r in result.tool_calls)
    if server.wire == "anthropic":
        assert [r["is_error"] for r in results] == [True, True]


SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "integer"}},
    "required": ["answer"],
}


def test_json_response_format(server: LoopbackServer, sleeps: RecordedSleeps) -> None:
    reply = '{"answer": 42}' if server.wire == "openai" else '```json\n{"answer": 42}\n```'
    server.reply_text(reply)
    with make_runtime(server, sleeps) as rt:
        text = rt.exec("What is six times seven?", response_format=SCHEMA)
    assert json.loads(text) == {"answer": 42}
    body = server.requests[0].json
    if server.wire == "openai":
        assert body["response_format"] == {
            "type": "json_schema",
            "json_schema": {"name": "response", "schema": SCHEMA},
        }
    else:
        assert "response_format" not in body
        assert '"answer"' in body["system"] and "JSON" in body["system"]


def test_anthropic_non_json_reply_under_response_format_is_a_clear_error(
    anthropic_server: LoopbackServer, sleeps: RecordedSleeps
) -> None:
    anthropic_server.reply_text("Sure! The answer is 42.")
    with make_runtime(anthropic_server, sleeps) as rt, pytest.raises(ProviderError) as info:
        rt.exec("?", response_format=SCHEMA)
    assert "not valid JSON" in str(info.value) and "req_1" in str(info.value)


def test_429_with_retry_after_then_success(server: LoopbackServer, sleeps: RecordedSleeps) -> None:
    server.reply_error(429, "rate limited", headers={"retry-after": "3"})
    server.reply_text("after the wait")
    with make_runtime(server, sleeps) as rt:
        assert rt.exec("hi") == "after the wait"
    assert sleeps.delays == [3.0]
    assert len(server.requests) == 2


def test_retry_after_past_the_cap_fails_at_once(
    server: LoopbackServer, sleeps: RecordedSleeps
) -> None:
    """A Retry-After longer than retry_after_cap_s is not cut to the cap (a retry before the
    server allows it): the call fails at once and says why. It used to wait 60 s and retry."""
    # the call budget (4 x 60 s + 3.5 s backoff) leaves 63.5 s for waiting before 3 more
    # attempts of 60 s: 62 s fits it, but not the 60 s cap
    server.reply_error(529 if server.wire == "anthropic" else 503, "busy", {"retry-after": "62"})
    server.reply_text("too early")
    with make_runtime(server, sleeps) as rt, pytest.raises(ProviderError) as info:
        rt.exec("hi")
    message = str(info.value)
    assert (
        "not retried: the server asked to wait 62 s (Retry-After) and no retry is made earlier, "
        "but retry_after_cap_s is 60 s" in message
    ), message
    assert "left for waiting" not in message  # the budget had room: only the cap is named
    assert sleeps.delays == [] and len(server.requests) == 1


def test_retry_after_within_the_cap_is_waited_in_full(
    server: LoopbackServer, sleeps: RecordedSleeps
) -> None:
    server.reply_error(503, "busy", {"retry-after": "62"})
    server.reply_text("ok")
    model = "gpt-test" if server.wire == "openai" else "claude-test"
    policy = sleeps.policy(max_retries=3, retry_after_cap_s=120.0)
    with Runtime(
        f"{server.wire}:{model}", base_url=server.base_url, api_key=SENTINEL_KEY, retry=policy
    ) as rt:
        assert rt.exec("hi") == "ok"
    assert sleeps.delays == [62.0]


@pytest.mark.parametrize("status", [408, 500, 502, 503, 504, 507, 520, 529])
def test_transient_statuses_are_retried(
    server: LoopbackServer, sleeps: RecordedSleeps, status: int
) -> None:
    """408 and every 5xx but 501 and 505 are transient (408 and 507 were not retried)."""
    server.reply_error(status, "try again")
    server.reply_text("second time lucky")
    with make_runtime(server, sleeps) as rt:
        assert rt.exec("hi") == "second time lucky"
    assert len(server.requests) == 2 and len(sleeps.delays) == 1


@pytest.mark.parametrize("status", [501, 505])
def test_permanent_server_errors_are_not_retried(
    server: LoopbackServer, sleeps: RecordedSleeps, status: int
) -> None:
    server.reply_error(status, "never going to work")
    server.reply_text("not asked for")
    with make_runtime(server, sleeps) as rt, pytest.raises(ProviderError) as info:
        rt.exec("hi")
    assert f"HTTP {status}" in str(info.value) and info.value.status == status
    assert len(server.requests) == 1 and sleeps.delays == []


def test_500_then_success_uses_jittered_backoff(
    server: LoopbackServer, sleeps: RecordedSleeps
) -> None:
    server.reply_error(500, "internal")
    server.reply_error(500, "internal")
    server.reply_text("fine now")
    with make_runtime(server, sleeps) as rt:
        assert rt.exec("hi") == "fine now"
    assert len(sleeps.delays) == 2
    assert 0.0 <= sleeps.delays[0] <= 0.5 and 0.0 <= sleeps.delays[1] <= 1.0


def test_persistent_5xx_names_provider_status_and_request_id(
    server: LoopbackServer, sleeps: RecordedSleeps
) -> None:
    for _ in range(3):
        server.reply_error(503, "overloaded, try later")
    with make_runtime(server, sleeps, max_retries=2) as rt, pytest.raises(ProviderError) as info:
        rt.exec("hi")
    err = info.value
    message = str(err)
    assert message.startswith(f"{server.wire}: HTTP 503")
    assert "req_3" in message and "overloaded, try later" in message and "3 attempts" in message
    assert (err.provider, err.status, err.request_id) == (server.wire, 503, "req_3")
    assert len(server.requests) == 3


def test_a_servers_error_body_cannot_drive_the_terminal(
    server: LoopbackServer, sleeps: RecordedSleeps, caplog: pytest.LogCaptureFixture
) -> None:
    """An error body with terminal control sequences (a title change, a screen clear, a
    fake green line) reaches the retry warning and the error only as visible escapes."""
    hostile = "\x1b]0;pwned\x07\x1b[2J\x1b[32mALL TESTS PASSED\x1b[0m \u202egnp.exe"
    for _ in range(2):
        server.reply_error(503, hostile)
    with (
        caplog.at_level("WARNING"),
        make_runtime(server, sleeps, max_retries=1) as rt,
        pytest.raises(ProviderError) as info,
    ):
        rt.exec("hi")
    shown = [str(info.value), *(r.getMessage() for r in caplog.records)]
    assert len(shown) == 2
    for text in shown:
        assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
        assert "\\x1b[32mALL TESTS PASSED" in text and "\\u202egnp.exe" in text


def test_timeout_retries_then_fails(server: LoopbackServer, sleeps: RecordedSleeps) -> None:
    server.reply_raw("{}", delay_s=1.0, content_type="application/json")
    server.reply_raw("{}", delay_s=1.0, content_type="application/json")
    with make_runtime(server, sleeps, max_retries=1, timeout_s=0.2) as rt:
        with pytest.raises(ProviderError) as info:
            rt.exec("hi")
    assert "timed out after 0.2 s" in str(info.value)
    assert "2 attempts" in str(info.value)
    assert info.value.status is None
    assert len(sleeps.delays) == 1


class _LongestBackoff(random.Random):
    """Full jitter that always draws its ceiling: the backoff uses its whole budget."""

    def uniform(self, a: float, b: float) -> float:
        return b


def test_an_attempt_that_overran_its_timeout_still_gets_its_retry(
    server: LoopbackServer, sleeps: RecordedSleeps
) -> None:
    """A timed-out attempt ends a little after its timeout; our own backoff is then shortened
    to fit the call's deadline, not refused (the retry was lost when the jitter drew near
    the ceiling: a flaky "gave up after 1 attempt" under load)."""
    server.reply_raw("{}", delay_s=1.0, content_type="application/json")
    server.reply_raw("{}", delay_s=1.0, content_type="application/json")
    policy = sleeps.policy(max_retries=1, rng=_LongestBackoff())
    model = "gpt-test" if server.wire == "openai" else "claude-test"
    with Runtime(
        f"{server.wire}:{model}",
        base_url=server.base_url,
        api_key=SENTINEL_KEY,
        retry=policy,
        timeout_s=0.2,
    ) as rt:
        with pytest.raises(ProviderError) as info:
            rt.exec("hi")
    assert "2 attempts" in str(info.value), info.value
    [delay] = sleeps.delays
    assert 0.0 <= delay <= policy.ceiling(1)
    assert len(server.requests) == 2


def test_per_call_timeout_overrides_runtime_timeout(
    server: LoopbackServer, sleeps: RecordedSleeps
) -> None:
    server.reply_raw("{}", delay_s=1.0, content_type="application/json")
    with make_runtime(server, sleeps, max_retries=0) as rt:
        with pytest.raises(ProviderError, match=r"timed out after 0\.15 s"):
            rt.exec("hi", timeout_s=0.15)


def test_malformed_json_body_is_not_retried(server: LoopbackServer, sleeps: RecordedSleeps) -> None:
    server.reply_raw('{"choices": [', content_type="application/json")
    with make_runtime(server, sleeps) as rt, pytest.raises(ProviderError) as info:
        rt.exec("hi")
    message = str(info.value)
    assert "not valid JSON" in message and "req_1" in message and '{"choices": [' in message
    assert info.value.status == 200
    assert len(server.requests) == 1


def test_wrong_json_shape_is_a_clear_error(server: LoopbackServer, sleeps: RecordedSleeps) -> None:
    server.reply_json({"unexpected": True})
    with make_runtime(server, sleeps) as rt, pytest.raises(ProviderError) as info:
        rt.exec("hi")
    assert "unexpected response shape" in str(info.value)


def test_html_error_page_is_retried_then_reported(
    server: LoopbackServer, sleeps: RecordedSleeps
) -> None:
    page = (
        "<html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gateway</h1></body></html>"
    )
    for _ in range(2):
        server.reply_raw(page, status=502)
    with make_runtime(server, sleeps, max_retries=1) as rt, pytest.raises(ProviderError) as info:
        rt.exec("hi")
    message = str(info.value)
    assert "HTTP 502" in message and "Bad Gateway" in message and "<html>" not in message
    assert info.value.status == 502 and info.value.request_id == "req_2"


def test_html_page_with_200_says_to_check_the_base_url(
    server: LoopbackServer, sleeps: RecordedSleeps
) -> None:
    server.reply_raw("<!doctype html><html><body>Welcome to nginx!</body></html>")
    with make_runtime(server, sleeps) as rt, pytest.raises(ProviderError) as info:
        rt.exec("hi")
    message = str(info.value)
    assert "not valid JSON" in message and "text/html" in message and "BASE_URL" in message.upper()
    assert len(server.requests) == 1


def test_connection_refused_retries_then_fails(
    closed_port_url: str, sleeps: RecordedSleeps
) -> None:
    for wire in WIRES:
        base = closed_port_url + ("/v1" if wire == "openai" else "")
        with Runtime(
            f"{wire}:m", base_url=base, api_key=SENTINEL_KEY, retry=sleeps.policy(max_retries=2)
        ) as rt:
            with pytest.raises(ProviderError) as info:
                rt.exec("hi")
        message = str(info.value)
        assert message.startswith(f"{wire}: cannot connect to {base}")
        assert "3 attempts" in message and "base_url" in message
    assert len(sleeps.delays) == 4


@pytest.mark.parametrize("status", [400, 401, 404])
def test_client_errors_are_not_retried(
    server: LoopbackServer, sleeps: RecordedSleeps, status: int
) -> None:
    server.reply_error(status, f"Incorrect API key provided: {SENTINEL_KEY}")
    with make_runtime(server, sleeps) as rt, pytest.raises(ProviderError) as info:
        rt.exec("hi")
    message = str(info.value)
    assert f"HTTP {status}" in message and "req_1" in message
    assert SENTINEL_KEY not in message and "Incorrect API key provided: ***" in message
    if status == 401:
        assert f"check {server.wire.upper()}_API_KEY" in message
    assert len(server.requests) == 1 and sleeps.delays == []


def test_effort_is_sent_as_reasoning_effort_on_openai(
    openai_server: LoopbackServer, sleeps: RecordedSleeps
) -> None:
    openai_server.reply_text("ok")
    with make_runtime(openai_server, sleeps) as rt:
        rt.exec("hi", effort="low")
    assert openai_server.requests[0].json["reasoning_effort"] == "low"


def test_openai_local_server_needs_no_key(
    openai_server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    openai_server.reply_text("local")
    with Runtime("openai:llama3.1:8b") as rt:
        assert rt.exec("hi") == "local"
    sent = openai_server.requests[0]
    assert "authorization" not in sent.headers
    assert sent.json["model"] == "llama3.1:8b"


async def test_async_tool_round_trip_and_retry(
    server: LoopbackServer, sleeps: RecordedSleeps
) -> None:
    async def lookup(key: str) -> dict[str, int]:
        """Look a key up."""
        return {key: 7}

    server.reply_error(500, "flaky")
    server.reply_tool_calls([("k1", "lookup", {"key": "x"})])
    server.reply_text("x is 7")
    async with make_runtime(server, sleeps) as rt:
        result = await rt.aexec_full("what is x?", tools=[lookup])
    assert result.text == "x is 7"
    assert result.tool_calls[0].result == '{"x": 7}'
    assert tool_results(server, server.requests[2].json)[0]["content"] == '{"x": 7}'
    assert len(sleeps.delays) == 1


async def test_async_connection_refused(closed_port_url: str, sleeps: RecordedSleeps) -> None:
    async with Runtime(
        "anthropic:m", base_url=closed_port_url, api_key=SENTINEL_KEY, retry=sleeps.policy(1)
    ) as rt:
        with pytest.raises(ProviderError, match="cannot connect"):
            await rt.aexec("hi")
    assert len(sleeps.delays) == 1


def test_no_retry_when_the_attempts_used_up_the_whole_deadline(
    server: LoopbackServer, sleeps: RecordedSleeps
) -> None:
    """With no backoff in the call's budget (``base_s=0``), a timed-out attempt that ran a
    little past its timeout leaves no room for another full attempt: the error says so
    (not "the next try is in 0 s")."""
    server.reply_raw("{}", delay_s=1.0, content_type="application/json")
    model = "gpt-test" if server.wire == "openai" else "claude-test"
    with Runtime(
        f"{server.wire}:{model}",
        base_url=server.base_url,
        api_key=SENTINEL_KEY,
        retry=sleeps.policy(max_retries=1, base_s=0.0),
        timeout_s=0.2,
    ) as rt:
        with pytest.raises(ProviderError) as info:
            rt.exec("hi")
    message = str(info.value)
    assert "not retried: the call's deadline leaves no time for 1 more attempt of up to 0.2 s" in (
        message
    ), message
    assert "next try" not in message and sleeps.delays == [] and len(server.requests) == 1


@pytest.mark.parametrize(
    ("wire", "tail", "received"),
    [
        ("openai", "/v1/chat/completions", "/v1/chat/completions"),
        ("openai", "/v1/chat/completions/", "/v1/chat/completions"),
        ("anthropic", "/v1/messages", "/v1/messages"),
        ("anthropic", "/v1", "/v1/messages"),
        ("anthropic", "/proxy/messages", "/proxy/messages"),
        # a query (Azure's api-version) stays the query, after the endpoint's path
        (
            "openai",
            "/openai/deployments/d?api-version=2024-06-01",
            "/openai/deployments/d/chat/completions?api-version=2024-06-01",
        ),
        ("openai", "/v1/chat/completions?api-version=1", "/v1/chat/completions?api-version=1"),
        ("anthropic", "/v1?beta=1", "/v1/messages?beta=1"),
    ],
)
def test_a_base_url_that_is_the_endpoint_is_not_extended_again(
    wire: str,
    tail: str,
    received: str,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A base URL copied whole from the provider's docs (the endpoint itself, or Anthropic's
    with /v1) is where the request goes, not .../chat/completions/chat/completions."""
    server: LoopbackServer = request.getfixturevalue(f"{wire}_server")
    monkeypatch.setenv(f"{wire.upper()}_BASE_URL", server.url + tail)
    monkeypatch.setenv(f"{wire.upper()}_API_KEY", SENTINEL_KEY)
    server.reply_text("found it")
    with Runtime(f"{wire}:model-x") as rt:
        assert rt.exec("hi") == "found it"
    assert [r.path for r in server.requests] == [received]
