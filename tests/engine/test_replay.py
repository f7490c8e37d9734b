"""replay: a run recorded against the loopback server replays offline with identical results."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from loopback import SENTINEL_KEY, LoopbackServer, RecordedSleeps

from openprogram import agent
from openprogram.errors import ConfigError, ProviderError, ReplayMismatch, StoreError
from openprogram.runtime import BlockedRequestError, ExecResult, Runtime, load_cassette
from openprogram.scope import call_scope, use_writer
from openprogram.store import SessionNodeWriter, SessionStore


def get_time(city: str) -> str:
    """The local time in a city."""
    return f"12:00 in {city}"


def program(rt: Runtime, question: str) -> ExecResult:
    """A tiny Program: one tool-using turn and one JSON turn."""
    first = rt.exec_full(question, tools=[get_time], system="You tell the time.")
    rt.exec("Summarise as JSON", response_format={"type": "object"})
    return first


def script_server(server: LoopbackServer) -> None:
    server.reply_tool_calls([("call_t1", "get_time", {"city": "Oslo"})])
    server.reply_text("It is 12:00 in Oslo.", usage=(30, 8))
    server.reply_text('{"time": "12:00"}')


def live_runtime(server: LoopbackServer, sleeps: RecordedSleeps, **kw: Any) -> Runtime:
    model = "gpt-test" if server.wire == "openai" else "claude-test"
    return Runtime(
        f"{server.wire}:{model}",
        base_url=server.base_url,
        api_key=SENTINEL_KEY,
        retry=sleeps.policy(),
        **kw,
    )


def outcome(result: ExecResult) -> tuple[Any, ...]:
    return (
        result.text,
        [(c.name, c.arguments, c.result) for c in result.tool_calls],
        (result.usage.input_tokens, result.usage.output_tokens),
        [(m.role, m.content, [c.id for c in m.tool_calls]) for m in result.messages],
    )


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_session_replays_offline_with_identical_results(
    wire: str, request: pytest.FixtureRequest, sleeps: RecordedSleeps, tmp_path: Path
) -> None:
    server: LoopbackServer = request.getfixturevalue(f"{wire}_server")
    script_server(server)
    with SessionStore(tmp_path / "store") as store:
        sid = store.create_session("recorded")
        with use_writer(SessionNodeWriter(store, sid)), live_runtime(server, sleeps) as rt:
            with call_scope("program"):
                live = program(rt, "What time is it in Oslo?")
        assert len(server.requests) == 3
        server.close()  # offline from here on

        replay_sid = store.create_session("replayed")
        with use_writer(SessionNodeWriter(store, replay_sid)):
            with Runtime(f"replay:session:{sid}", store=store) as rt:
                with call_scope("program"):
                    replayed = program(rt, "What time is it in Oslo?")
                assert rt.provider.remaining == 0  # type: ignore[attr-defined]
        assert outcome(replayed) == outcome(live)
        recorded = [n for n in store.list_nodes(sid) if n.kind == "llm"]
        again = [n for n in store.list_nodes(replay_sid) if n.kind == "llm"]
        strip = lambda n: {k: v for k, v in n.input.items() if k != "provider"}  # noqa: E731
        assert [strip(n) for n in again] == [strip(n) for n in recorded]
        assert [n.output for n in again] == [n.output for n in recorded]
        assert [n.metadata["usage"] for n in again] == [n.metadata["usage"] for n in recorded]


def test_changed_prompt_raises_mismatch_with_readable_diff(
    openai_server: LoopbackServer, sleeps: RecordedSleeps, tmp_path: Path
) -> None:
    script_server(openai_server)
    with SessionStore(tmp_path) as store:
        sid = store.create_session("rec")
        with use_writer(SessionNodeWriter(store, sid)), live_runtime(openai_server, sleeps) as rt:
            program(rt, "What time is it in Oslo?")
        with Runtime(f"replay:session:{sid}", store=store) as rt:
            with pytest.raises(ReplayMismatch) as info:
                program(rt, "What time is it in Bergen?")
    message = str(info.value)
    assert message.startswith("replay: request #1 differs from the recording at session rec")
    assert "--- recorded request" in message and "+++ actual request" in message
    assert '-      "content": "What time is it in Oslo?",' in message
    assert '+      "content": "What time is it in Bergen?",' in message


def test_cassette_recording_and_replay(
    anthropic_server: LoopbackServer, sleeps: RecordedSleeps, tmp_path: Path
) -> None:
    cassette = tmp_path / "run.jsonl"
    script_server(anthropic_server)
    with live_runtime(anthropic_server, sleeps, record_to=cassette) as rt:
        live = program(rt, "What time is it in Oslo?")
    lines = [json.loads(x) for x in cassette.read_text().splitlines()]
    assert len(lines) == 3
    assert set(lines[0]) == {"request", "response"}
    assert "provider" not in lines[0]["request"]
    assert lines[1]["response"]["usage"] == {"input_tokens": 30, "output_tokens": 8}
    assert SENTINEL_KEY not in cassette.read_text()

    with Runtime(f"replay:{cassette}") as rt:
        assert rt.model == "replay:claude-test"
        assert outcome(program(rt, "What time is it in Oslo?")) == outcome(live)
        with pytest.raises(ReplayMismatch, match=r"request #4 has no recording left"):
            rt.exec("one more")


def test_changed_tools_mismatch(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    with Runtime("scripted:echo", record_to=cassette) as rt:
        rt.exec("hi", tools=[get_time])
    with Runtime(f"replay:{cassette}") as rt, pytest.raises(ReplayMismatch) as info:
        rt.exec("hi")
    assert '"name": "get_time"' in str(info.value)


def test_a_request_equal_to_a_later_recording_is_a_mismatch(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    with Runtime("scripted:echo", record_to=cassette) as rt:
        rt.exec("a")
        rt.exec("b")
    with Runtime(f"replay:{cassette}") as rt, pytest.raises(ReplayMismatch) as info:
        rt.exec("b")
    message = str(info.value)
    assert "request #1 differs from the recording at" in message and "c.jsonl:1" in message
    assert "expected: user message 'a'" in message
    assert "received: user message 'b'" in message
    assert "equals the later recording at" in message and "c.jsonl:2" in message


def test_recorded_errors_replay_as_errors(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    with Runtime("scripted:block", record_to=cassette) as rt, pytest.raises(BlockedRequestError):
        rt.exec("x")
    with (
        Runtime(f"replay:{cassette}") as rt,
        pytest.raises(ProviderError, match="recorded request failed"),
    ):
        rt.exec("x")


def test_bad_cassettes_and_sessions(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="replay cassette not found"):
        Runtime(f"replay:{tmp_path / 'missing.jsonl'}")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"request": {}, "response": {}}\nnot json\n')
    with pytest.raises(ConfigError, match=r"bad.jsonl:2: not valid JSON"):
        Runtime(f"replay:{bad}")
    bad.write_text('{"request": {}}\n')
    with pytest.raises(ConfigError, match=r"bad.jsonl:1: expected a 'response' object"):
        Runtime(f"replay:{bad}")
    with SessionStore(tmp_path / "store") as store:
        with pytest.raises(ConfigError, match="session 'nope' not found"):
            Runtime("replay:session:nope", store=store)
    with pytest.raises(ConfigError, match="add the session id"):
        Runtime("replay:session:")


def test_session_replay_from_the_default_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENPROGRAM_STORE", str(tmp_path / "default"))
    with SessionStore() as store:
        sid = store.create_session("env-store")
        with use_writer(SessionNodeWriter(store, sid)), Runtime("scripted:echo") as rt:
            rt.exec("ping")
    with Runtime(f"replay:session:{sid}") as rt:
        assert rt.exec("ping") == "ping"
    monkeypatch.setenv("OPENPROGRAM_STORE", str(tmp_path / "absent"))
    with pytest.raises(StoreError, match="no store"):
        Runtime("replay:session:x")
    assert not (tmp_path / "absent").exists()


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cassettes" / "tell_time.jsonl"


def test_shipped_example_cassette_replays() -> None:
    assert len(load_cassette(EXAMPLE)) == 3
    with Runtime(f"replay:{EXAMPLE}") as rt:
        result = program(rt, "What time is it in Oslo?")
    assert result.text == "It is 12:00 in Oslo."


CHOICES = {"close": "CLOSED", "escalate": "ESC"}


def record_a_decision_retry_after_a_tool_call(
    server: LoopbackServer, sleeps: RecordedSleeps, cassette: Path
) -> list[dict[str, Any]]:
    """Record ``agent(choices=...)`` whose turn used a tool and whose first answer was
    no decision; returns the cassette's lines (the third is the retry)."""
    server.reply_tool_calls([("call_t1", "get_time", {"city": "Oslo"})])
    server.reply_text("I cannot decide.")
    server.reply_text('{"call": "close"}')
    with live_runtime(server, sleeps, record_to=cassette) as rt:
        assert agent("Handle it", tools=[get_time], choices=CHOICES, runtime=rt) == "CLOSED"
    return [json.loads(x) for x in cassette.read_text().splitlines()]


def test_a_cassette_whose_decision_retry_was_recorded_without_tools_still_replays(
    openai_server: LoopbackServer, sleeps: RecordedSleeps, tmp_path: Path
) -> None:
    """Before the decision retry after tool calls carried the turn's tool definitions
    (tool_choice "none"), it was recorded with ``"tools": []``; such a cassette replays."""
    cassette = tmp_path / "run.jsonl"
    lines = record_a_decision_retry_after_a_tool_call(openai_server, sleeps, cassette)
    assert [t["name"] for t in lines[2]["request"]["tools"]] == ["get_time"]
    with Runtime(f"replay:{cassette}") as rt:  # the cassette as recorded now
        assert agent("Handle it", tools=[get_time], choices=CHOICES, runtime=rt) == "CLOSED"

    lines[2]["request"]["tools"] = []  # the shape older versions recorded
    old = tmp_path / "old.jsonl"
    old.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with Runtime(f"replay:{old}") as rt:
        assert agent("Handle it", tools=[get_time], choices=CHOICES, runtime=rt) == "CLOSED"
        assert rt.provider.remaining == 0  # type: ignore[attr-defined]

    # only tools that cannot be called are left out: the first request offers them
    lines[0]["request"]["tools"] = []
    old.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with Runtime(f"replay:{old}") as rt, pytest.raises(ReplayMismatch, match="request #1"):
        agent("Handle it", tools=[get_time], choices=CHOICES, runtime=rt)
