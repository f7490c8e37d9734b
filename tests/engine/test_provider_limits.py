"""Provider reliability under hostile servers (issue 16, items 3, 4, 5, 10).

Real HTTP servers on 127.0.0.1 speaking the OpenAI and Anthropic wire formats: a server
that trickles its body, one that asks to retry after an hour, bodies past the size limit,
malformed ``usage`` fields, and a base URL carrying ``user:password@``.
"""

from __future__ import annotations

import base64
import itertools
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from loopback import LoopbackServer, RecordedSleeps, runtime_for

from openprogram import Runtime
from openprogram.errors import ConfigError, ProviderError
from openprogram.runtime import RetryPolicy
from openprogram.runtime.http import MAX_RESPONSE_BYTES
from openprogram.runtime.providers import AnthropicProvider, OpenAIProvider

MiB = 1024 * 1024


def runtime(server: LoopbackServer, sleeps: RecordedSleeps, **kw: Any) -> Runtime:
    retries = kw.pop("max_retries", 1)
    return runtime_for(
        server, retry=sleeps.policy(max_retries=retries), api_key="sk-test-key-123456", **kw
    )


def trickle() -> Iterator[bytes]:
    """JSON whitespace, one byte at a time, for ever (until the client hangs up)."""
    return itertools.repeat(b" ")


# -- item 4: the timeout is a deadline ---------------------------------------------------


@pytest.mark.timeout(60)
def test_a_trickling_body_hits_the_attempt_deadline(
    server: LoopbackServer, sleeps: RecordedSleeps
) -> None:
    # headers at once, then a byte every 0.25 s: every read is far inside timeout_s
    for _ in range(2):
        server.reply_stream(trickle(), chunk_delay_s=0.25, headers={"content-length": "100000"})
    with runtime(server, sleeps, timeout_s=1.0) as rt, pytest.raises(ProviderError) as info:
        rt.exec("hi")
    message = str(info.value)
    assert "timed out after 1 s" in message and "2 attempts" in message, message
    assert len(server.requests) == 2 and len(sleeps.delays) == 1, (server.requests, sleeps)


@pytest.mark.timeout(60)
async def test_a_trickling_body_hits_the_deadline_async(
    server: LoopbackServer, sleeps: RecordedSleeps
) -> None:
    server.reply_stream(trickle(), chunk_delay_s=0.25, headers={"content-length": "100000"})
    rt = runtime(server, sleeps, timeout_s=1.0, max_retries=0)
    with pytest.raises(ProviderError, match=r"timed out after 1 s"):
        await rt.aexec("hi")
    await rt.aclose()


def test_retry_after_beyond_the_call_deadline_fails_fast(
    server: LoopbackServer, sleeps: RecordedSleeps
) -> None:
    server.reply_error(429, "slow down", headers={"retry-after": "3600"})
    server.reply_text("never asked for")
    with runtime(server, sleeps, timeout_s=5.0, max_retries=3) as rt:
        with pytest.raises(ProviderError) as info:
            rt.exec("hi")
    message = str(info.value)
    assert "HTTP 429" in message and "not retried" in message and "3600 s" in message
    assert info.value.status == 429
    assert sleeps.delays == [] and len(server.requests) == 1


def test_the_call_budget_is_attempts_times_timeout_plus_backoff_ceilings() -> None:
    # the figure README documents for the defaults: 5 x 60 s + (0.5 + 1 + 2 + 4) s
    assert RetryPolicy().call_budget(60.0) == 307.5
    assert RetryPolicy(max_retries=0).call_budget(2.0) == 2.0


# -- item 5: bodies are capped ---------------------------------------------------------


def big_text_body(server: LoopbackServer, size: int) -> Iterator[bytes]:
    """A valid reply whose text is ``size`` bytes, produced 1 MiB at a time."""
    head, _, tail = json.dumps(server.text_payload("@")).partition("@")
    yield head.encode()
    for _ in range(size // MiB):
        yield b"a" * MiB
    yield tail.encode()


def test_a_body_declared_past_the_limit_is_refused(
    server: LoopbackServer, sleeps: RecordedSleeps
) -> None:
    size = MAX_RESPONSE_BYTES + 8 * MiB
    length = str(size + len(json.dumps(server.text_payload(""))))
    server.reply_stream(big_text_body(server, size), headers={"content-length": length})
    with runtime(server, sleeps) as rt, pytest.raises(ProviderError) as info:
        rt.exec("hi")
    message = str(info.value)
    assert "too large" in message and "Content-Length" in message
    assert f"{MAX_RESPONSE_BYTES:,} bytes" in message and "max_response_bytes" in message
    assert len(server.requests) == 1  # not retried


def test_an_undeclared_body_is_cut_off_at_the_limit(
    server: LoopbackServer, sleeps: RecordedSleeps
) -> None:
    server.reply_stream(big_text_body(server, MAX_RESPONSE_BYTES + 8 * MiB))
    with runtime(server, sleeps) as rt, pytest.raises(ProviderError, match="too large"):
        rt.exec("hi")


async def test_the_limit_is_configurable_and_applies_to_async_calls(
    server: LoopbackServer, sleeps: RecordedSleeps
) -> None:
    cls = OpenAIProvider if server.wire == "openai" else AnthropicProvider
    provider = cls(
        base_url=server.base_url,
        api_key="sk-test-key-123456",
        retry=sleeps.policy(max_retries=0),
        max_response_bytes=MiB,
    )
    server.reply_stream(big_text_body(server, 2 * MiB))
    server.reply_text("small enough")
    with pytest.raises(ProviderError, match="limit is 1,048,576 bytes"):
        await Runtime(provider=provider).aexec("hi")
    assert await Runtime(provider=provider).aexec("hi") == "small enough"
    await provider.aclose()


# -- item 10: malformed usage ----------------------------------------------------------

MALFORMED_USAGE = [
    [1, 2],
    "lots",
    {"prompt_tokens": "abc", "completion_tokens": "abc"},
    {"input_tokens": "abc", "output_tokens": "abc"},
    {"prompt_tokens": -3, "input_tokens": -3, "completion_tokens": 2.5, "output_tokens": 2.5},
    {"prompt_tokens": True, "input_tokens": True},
    {"prompt_tokens": [7], "input_tokens": {"n": 7}},
    None,
]


@pytest.mark.parametrize("usage", MALFORMED_USAGE, ids=repr)
def test_malformed_usage_counts_as_unknown(
    server: LoopbackServer, sleeps: RecordedSleeps, usage: Any
) -> None:
    payload = server.text_payload("content is fine")
    payload["usage"] = usage
    server.reply_json(payload)
    with runtime(server, sleeps) as rt:
        result = rt.exec_full("hi")
    assert result.text == "content is fine"
    assert (result.usage.input_tokens, result.usage.output_tokens) == (0, 0)


@pytest.mark.parametrize("literal", ["Infinity", "-Infinity", "NaN", "1e400"])
def test_non_finite_usage_counts_as_unknown(
    server: LoopbackServer, sleeps: RecordedSleeps, literal: str
) -> None:
    keys = ("prompt_tokens", "completion_tokens")
    if server.wire == "anthropic":
        keys = ("input_tokens", "output_tokens")
    payload = server.text_payload("fine")
    payload["usage"] = {keys[0]: "@", keys[1]: 4}
    body = json.dumps(payload).replace('"@"', literal)
    server.reply_raw(body, content_type="application/json")
    with runtime(server, sleeps) as rt:
        result = rt.exec_full("hi")
    assert result.text == "fine"
    assert (result.usage.input_tokens, result.usage.output_tokens) == (0, 4)


# -- item 3: userinfo in the base URL ----------------------------------------------------

PASSWORD = "pw-SENTINEL-91c4e2"


def test_userinfo_in_openai_base_url_is_sent_as_basic_auth_and_never_logged(
    openai_server: LoopbackServer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    host = openai_server.base_url.removeprefix("http://")
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://alice:{PASSWORD}@{host}")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    caplog.set_level(logging.DEBUG)
    openai_server.reply_text("hello")
    openai_server.reply_error(400, f"echoing alice:{PASSWORD}")
    with Runtime("openai:gpt-test", retry=RetryPolicy(max_retries=0)) as rt:
        assert rt.exec("hi") == "hello"
        with pytest.raises(ProviderError) as info:
            rt.exec("again")
        shown = f"{rt!r} {rt.provider!r} {info.value}"
    assert "HTTP Request: POST" in caplog.text  # httpx's INFO line was captured
    assert PASSWORD not in caplog.text and PASSWORD not in shown
    credentials = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
    assert openai_server.requests[0].headers["authorization"] == f"Basic {credentials}"


def test_userinfo_never_reaches_connection_or_config_errors(
    closed_port_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    url = closed_port_url.replace("//", f"//alice:{PASSWORD}@") + "/v1"
    provider = OpenAIProvider(base_url=url, retry=RetryPolicy(max_retries=0))
    with pytest.raises(ProviderError) as info:
        Runtime(provider=provider).exec("hi")
    assert "cannot connect" in str(info.value) and PASSWORD not in str(info.value)
    with pytest.raises(ConfigError) as bad:
        OpenAIProvider(base_url=f"ftp://alice:{PASSWORD}@example.com/v1")
    assert "ftp://alice:***@example.com/v1" in str(bad.value) and PASSWORD not in str(bad.value)
    assert PASSWORD not in caplog.text


# The password as written in the URL: an "@" left unencoded and a percent-encoded "/".
WRITTEN = "p@ss%2Fw0rd-SENTINEL"
DECODED = "p@ss/w0rd-SENTINEL"


def no_piece_of_the_password(text: str) -> bool:
    return "w0rd" not in text and "SENTINEL" not in text and "ss%2F" not in text


def test_a_base_url_password_in_any_form_is_masked_everywhere(
    server: LoopbackServer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    closed_port_url: str,
) -> None:
    """``https://user:PASSWORD@host/v1`` in the environment: the password never shows in an
    error, a log line or a repr, whether the server echoes it as written, percent-decoded
    or as the Basic credentials, and whether the URL is refused, times out or is malformed.
    Before, the form written in the URL, the Basic credentials and the part after an
    unencoded "@" were shown."""
    caplog.set_level(logging.DEBUG)
    env = f"{server.wire.upper()}_BASE_URL"
    url = server.base_url.replace("//", f"//alice:{WRITTEN}@")
    monkeypatch.setenv(env, url)
    basic = base64.b64encode(f"alice:{DECODED}".encode()).decode()
    server.reply_error(400, f"bad user: {url} / {DECODED} / Basic {basic}")
    server.reply_raw("{}", delay_s=1.0, content_type="application/json")
    model = f"{server.wire}:m"
    shown: list[str] = []
    with Runtime(model, api_key="sk-test-key-123456", retry=RetryPolicy(max_retries=0)) as rt:
        for timeout in (None, 0.2):
            with pytest.raises(ProviderError) as info:
                rt.exec("hi", timeout_s=timeout)
            shown.append(str(info.value))
        shown += [repr(rt), repr(rt.provider), repr(rt.provider._transport)]  # type: ignore[attr-defined]
    assert server.requests[0].headers["authorization"] == f"Basic {basic}"
    assert "bad user: http://alice:***@127.0.0.1" in shown[0], shown[0]
    assert (
        "request to http://alice:***@127.0.0.1" in shown[1] and "timed out after 0.2 s" in shown[1]
    ), shown[1]
    monkeypatch.setenv(env, closed_port_url.replace("//", f"//alice:{WRITTEN}@"))
    with pytest.raises(ProviderError) as refused:
        Runtime(model, api_key="sk-test-key-123456", retry=RetryPolicy(max_retries=0)).exec("hi")
    shown.append(str(refused.value))
    assert "cannot connect to http://alice:***@127.0.0.1:" in shown[-1]
    monkeypatch.setenv(env, f"http://alice:{WRITTEN}@127.0.0.1:99999/v1")
    with pytest.raises(ConfigError) as bad_port:
        Runtime(model, api_key="sk-test-key-123456")
    shown.append(str(bad_port.value))
    assert f"invalid {env} 'http://alice:***@127.0.0.1:99999/v1'" in shown[-1], shown[-1]
    for text in [*shown, caplog.text]:
        assert no_piece_of_the_password(text), text
