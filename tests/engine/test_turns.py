"""Turns on a scripted runtime and a real SQLite session store."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from openprogram import ChatAgent, Context, TurnRequest, TurnResult
from openprogram.store import SessionStore


def make_agent() -> ChatAgent:
    from openprogram.runtime import create_runtime

    return ChatAgent(runtime=create_runtime("scripted:echo"), tools=[])


def test_turn_records_into_the_context_session(tmp_path: Path) -> None:
    events: list[dict[str, Any]] = []
    with SessionStore(tmp_path / "st") as store:
        store.create_session("chat")
        ctx = Context.for_session(store, "chat")
        result = make_agent().run_turn(
            TurnRequest("hello there", session_id="chat"), context=ctx, on_event=events.append
        )
        assert isinstance(result, TurnResult)
        assert result.status == "completed" and "hello there" in str(result.output)
        assert result.session_id == "chat" and result.continuation is None
        assert any(n.kind == "llm" for n in store.list_nodes("chat"))
    assert [e["type"] for e in events] == ["turn_started", "turn_completed"]


def test_request_for_another_session_is_rejected(tmp_path: Path) -> None:
    with SessionStore(tmp_path / "st") as store:
        store.create_session("a")
        ctx = Context.for_session(store, "a")
        with pytest.raises(ValueError, match="session 'b'"):
            make_agent().run_turn(TurnRequest("hi", session_id="b"), context=ctx)
        assert store.list_nodes("a") == []


def test_cancel_before_start_then_resume() -> None:
    cancel = threading.Event()
    cancel.set()
    agent = make_agent()
    first = agent.run_turn(TurnRequest("again"), cancel_event=cancel)
    assert first.status == "cancelled" and first.continuation is not None
    second = agent.resume_turn(first)
    assert second.status == "completed" and "again" in str(second.output)
    assert second.request_id == first.request_id


async def test_arun_turn() -> None:
    result = await make_agent().arun_turn(TurnRequest("async hello"))
    assert result.status == "completed" and "async hello" in str(result.output)
