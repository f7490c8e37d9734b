"""The API key never appears in logs, reprs, exception messages, cassettes or the store."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from loopback import SENTINEL_KEY, LoopbackServer, RecordedSleeps

from openprogram.errors import ProviderError
from openprogram.runtime import Runtime
from openprogram.runtime.secret import Secret, redact
from openprogram.scope import call_scope, use_writer
from openprogram.store import SessionNodeWriter, SessionStore


def echo_key_tool(text: str) -> str:
    """A tool whose failure message is harmless."""
    raise ValueError(f"cannot handle {text}")


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_sentinel_key_is_never_exposed(
    wire: str,
    request: pytest.FixtureRequest,
    sleeps: RecordedSleeps,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    closed_port_url: str,
) -> None:
    caplog.set_level(logging.DEBUG)  # every logger, including httpx/httpcore
    server: LoopbackServer = request.getfixturevalue(f"{wire}_server")
    leak = f"invalid key {SENTINEL_KEY} (Bearer {SENTINEL_KEY})"
    server.reply_tool_calls([("c1", "echo_key_tool", {"text": "x"})])
    server.reply_error(500, leak)
    server.reply_text("done")
    server.reply_error(401, leak)
    server.reply_error(503, leak)
    server.reply_error(503, leak)
    server.reply_raw(f"<html>{leak}</html>")
    errors: list[BaseException] = []
    texts: list[str] = []
    cassette = tmp_path / "rec.jsonl"
    store_root = tmp_path / "store"
    with SessionStore(store_root) as store:
        sid = store.create_session("secret-check")
        writer = SessionNodeWriter(store, sid)
        rt = Runtime(
            f"{wire}:model-x",
            base_url=server.base_url,
            api_key=SENTINEL_KEY,
            retry=sleeps.policy(max_retries=1),
            record_to=cassette,
        )
        with use_writer(writer), rt, call_scope("entry", inputs={"q": "hi"}):
            texts.append(rt.exec("hi", tools=[echo_key_tool]))
            for _ in range(3):  # 401, 503 x2 (gives up), HTML 200
                try:
                    rt.exec("again")
                except ProviderError as exc:
                    errors.append(exc)
        reprs = [repr(rt), repr(rt.provider), repr(rt.provider._transport), str(rt.__dict__)]  # type: ignore[attr-defined]
        with pytest.raises(ProviderError) as refused:
            Runtime(
                f"{wire}:m", base_url=closed_port_url, api_key=SENTINEL_KEY, retry=sleeps.policy(0)
            ).exec("x")
        errors.append(refused.value)
    assert texts == ["done"]
    assert [getattr(e, "status", None) for e in errors] == [401, 503, 200, None]
    # the server did receive the key, so the check below is not vacuous
    assert any(SENTINEL_KEY in str(r.headers) for r in server.requests)
    for error in errors:
        assert SENTINEL_KEY not in str(error) and SENTINEL_KEY not in repr(error)
        assert "***" in str(error) or error is errors[-1]
    for text in reprs:
        assert SENTINEL_KEY not in text
    assert caplog.records, "expected log lines"
    for record in caplog.records:
        assert SENTINEL_KEY not in record.getMessage()
    assert SENTINEL_KEY not in caplog.text
    stored = b"".join(p.read_bytes() for p in store_root.rglob("*") if p.is_file())
    assert b"secret-check" in stored  # the store really holds the session
    assert SENTINEL_KEY.encode() not in stored
    assert SENTINEL_KEY not in cassette.read_text()


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
@pytest.mark.parametrize("cut", [3, 10, 20])
def test_a_key_cut_by_the_excerpt_is_masked_before_the_cut(
    wire: str, cut: int, request: pytest.FixtureRequest, sleeps: RecordedSleeps
) -> None:
    """The excerpt of an error body ends at 200 characters; a key the server echoes across
    that boundary is masked first. Before, the cut key was no longer recognised and its
    first ``cut`` characters were shown."""
    server: LoopbackServer = request.getfixturevalue(f"{wire}_server")
    padding = "x" * (197 - cut)  # the excerpt keeps 197 characters and "..."
    server.reply_error(401, f"{padding}{SENTINEL_KEY} is not a valid key")
    with Runtime(
        f"{wire}:model-x", base_url=server.base_url, api_key=SENTINEL_KEY, retry=sleeps.policy(0)
    ) as rt:
        with pytest.raises(ProviderError) as info:
            rt.exec("hi")
    message = str(info.value)
    assert f"{padding}***" in message, message
    assert SENTINEL_KEY[:cut] not in message


def test_secret_wrapper_hides_the_value() -> None:
    secret = Secret(SENTINEL_KEY)
    assert SENTINEL_KEY not in repr(secret) and SENTINEL_KEY not in str(secret)
    assert secret.reveal() == SENTINEL_KEY
    assert redact(f"x {SENTINEL_KEY} y", secret) == "x *** y"
    with pytest.raises(TypeError):
        import pickle

        pickle.dumps(secret)
    import copy

    assert copy.deepcopy(secret) is secret
