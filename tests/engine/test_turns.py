"""Turns: admission, events, cooperative cancellation at safe points, resume.

Model requests go to a real loopback Chat Completions server (``openai_server`` from
conftest); sessions live in a real SQLite store in a tmp dir.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from loopback import SENTINEL_KEY, OpenAIServer

from openprogram import ChatAgent, Context, TurnRequest, TurnResult
from openprogram.programs.registry import isolated_registry
from openprogram.runtime import Runtime
from openprogram.safepoints import (
    TurnCancelled,
    TurnControl,
    checkpoint,
    current_control,
    turn_control,
)
from openprogram.store import SessionStore


@pytest.fixture(autouse=True)
def _isolated() -> Iterator[None]:
    """Agent classes defined by these tests register their tools in a throwaway registry."""
    with isolated_registry():
        yield


@pytest.fixture
def rt(openai_server: OpenAIServer) -> Iterator[Runtime]:
    runtime = Runtime("openai:gpt-test", base_url=openai_server.base_url, api_key=SENTINEL_KEY)
    yield runtime
    runtime.close()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SessionStore]:
    with SessionStore(tmp_path / "st") as st:
        st.create_session("chat")
        yield st


class Tools:
    """Two plain tools that log their calls."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def functions(self) -> list[Any]:
        def first(topic: str) -> str:
            """Look something up."""
            self.calls.append(f"first:{topic}")
            return "first-result"

        def second(topic: str) -> str:
            """Look something else up."""
            self.calls.append(f"second:{topic}")
            return "second-result"

        return [first, second]


def two_tool_calls(server: OpenAIServer) -> None:
    server.reply_tool_calls([("c1", "first", {"topic": "a"}), ("c2", "second", {"topic": "b"})])


def bodies(server: OpenAIServer) -> list[str]:
    return [r.body.decode() for r in server.requests]


def test_cancel_at_first_tool_stops_before_second_tool_and_next_request(
    openai_server: OpenAIServer, rt: Runtime, store: SessionStore
) -> None:
    tools = Tools()
    agent = ChatAgent(runtime=rt, tools=tools.functions())
    ctx = Context.for_session(store, "chat")
    openai_server.reply_text("hello back")
    assert agent.run_turn(TurnRequest("hi", session_id="chat"), context=ctx).status == "completed"

    cancel = threading.Event()
    events: list[dict[str, Any]] = []

    def on_event(event: dict[str, Any]) -> None:
        events.append(event)
        if event["type"] == "tool.started" and event["name"] == "first":
            cancel.set()

    two_tool_calls(openai_server)
    result = agent.run_turn(
        TurnRequest("research a and b", session_id="chat"),
        context=ctx,
        on_event=on_event,
        cancel_event=cancel,
    )
    assert result.status == "cancelled" and result.continuation is not None
    assert tools.calls == ["first:a"]  # the dispatched tool ran, the second never did
    assert len(openai_server.requests) == 2  # no model request after the cancel
    assert result.continuation["stopped_at"] == {
        "type": "tool.started",
        "name": "second",
        "call_id": "c2",
        "iteration": 1,
    }
    assert [e["type"] for e in events] == [
        "turn.started",
        "llm.request",
        "llm.response",
        "tool.started",
        "tool.finished",
        "turn.cancelled",
    ]
    turn = store.get_node(result.turn_node_id or "")
    assert turn is not None and turn.name == "turn" and turn.status == "cancelled"
    assert "TurnCancelled" in json.dumps(turn.output)
    assert turn.metadata["continuation"]["request"]["request_id"] == result.request_id
    nodes = store.list_nodes("chat")
    assert not [n for n in nodes if n.status == "running"]
    inside = [n for n in nodes if n.caller_id == turn.id]
    assert [(n.kind, n.status) for n in inside] == [("llm", "completed")]

    # resume: same request id, from the branch point the turn started at
    openai_server.reply_tool_calls([("c3", "second", {"topic": "b"})])
    openai_server.reply_text("all done")
    resumed = agent.resume_turn(result, context=ctx)
    assert resumed.status == "completed" and resumed.output == "all done"
    assert resumed.request_id == result.request_id and resumed.continuation is None
    assert tools.calls == ["first:a", "second:b"]
    first_resumed = bodies(openai_server)[2]
    assert "hello back" in first_resumed  # the earlier completed exchange is history
    assert "first-result" not in first_resumed and '\\"topic\\"' not in first_resumed
    node = store.get_node(resumed.turn_node_id or "")
    assert node is not None and node.status == "completed"
    assert node.metadata["resumed_from"] == result.turn_node_id
    assert len(openai_server.requests) == 4


def test_resume_from_the_persisted_turn_node(
    openai_server: OpenAIServer, rt: Runtime, tmp_path: Path
) -> None:
    tools = Tools()
    cancel = threading.Event()
    with SessionStore(tmp_path / "st") as st:
        st.create_session("chat")
        two_tool_calls(openai_server)
        result = ChatAgent(runtime=rt, tools=tools.functions()).run_turn(
            TurnRequest("go"),
            context=Context.for_session(st, "chat"),
            on_event=lambda e: cancel.set() if e["type"] == "tool.finished" else None,
            cancel_event=cancel,
        )
    assert result.status == "cancelled" and result.turn_node_id is not None
    openai_server.reply_text("resumed answer")
    with SessionStore(tmp_path / "st") as st:  # a new process would do the same
        ctx = Context.for_session(st, "chat")
        resumed = ChatAgent(runtime=rt, tools=tools.functions()).resume_turn(
            result.turn_node_id, context=ctx
        )
        assert resumed.status == "completed" and resumed.output == "resumed answer"
        assert resumed.request_id == result.request_id
        assert "go" in bodies(openai_server)[-1]
        with pytest.raises(ValueError, match="holds no turn continuation"):
            ChatAgent(runtime=rt).resume_turn(resumed.turn_node_id or "", context=ctx)


def test_events_for_a_tool_round_trip(openai_server: OpenAIServer, rt: Runtime) -> None:
    def lookup(topic: str) -> str:
        """Look up a topic."""
        return f"facts about {topic}"

    def broken(topic: str) -> str:
        """Always fails."""
        raise ValueError(f"no data for {topic}")

    openai_server.reply_tool_calls(
        [("c1", "lookup", {"topic": "x"}), ("c2", "broken", {"topic": "y"})]
    )
    openai_server.reply_text("answer")
    events: list[dict[str, Any]] = []
    threads: set[int] = set()

    def on_event(event: dict[str, Any]) -> None:
        threads.add(threading.get_ident())
        events.append(event)

    result = ChatAgent(runtime=rt, tools=[lookup, broken]).run_turn(
        TurnRequest("tell me", request_id="r1"), on_event=on_event
    )
    assert result.status == "completed" and result.output == "answer"
    assert threads == {threading.get_ident()}  # delivered on the executing thread
    assert [e["type"] for e in events] == [
        "turn.started",
        "llm.request",
        "llm.response",
        "tool.started",
        "tool.finished",
        "tool.started",
        "tool.finished",
        "llm.request",
        "llm.response",
        "turn.completed",
    ]
    assert all(e["request_id"] == "r1" for e in events)
    by_type = [
        (e["type"], {k: v for k, v in e.items() if k not in ("type", "request_id")}) for e in events
    ]
    assert by_type[1] == ("llm.request", {"model": "openai:gpt-test", "iteration": 1})
    assert by_type[2][1]["usage"] == {"input_tokens": 13, "output_tokens": 5}
    assert by_type[2][1]["tool_calls"] == ["lookup", "broken"]
    assert by_type[4][1] == {"name": "lookup", "call_id": "c1", "ok": True}
    assert by_type[6][1]["ok"] is False and "ValueError: no data for y" in by_type[6][1]["error"]
    assert by_type[7][1]["iteration"] == 2 and by_type[8][1]["tool_calls"] == []
    assert by_type[9][1]["output"] == "answer"
    dumped = json.dumps(events)  # JSON-serialisable
    assert SENTINEL_KEY not in dumped and "authorization" not in dumped.lower()


def test_cancel_inside_a_scoped_method_marks_its_nodes_cancelled(
    openai_server: OpenAIServer, rt: Runtime, store: SessionStore
) -> None:
    class Researcher(ChatAgent):
        """A chat agent whose tool is a scoped method that calls the model itself."""

        method_options = {"research": {"tool": True}}

        def research(self, topic: str) -> str:
            """Research one topic with a nested model request."""
            return str(self(f"research {topic}", tools=[]))

    agent = Researcher(runtime=rt)
    cancel = threading.Event()
    openai_server.reply_tool_calls([("c1", "research", {"topic": "owls"})])

    def on_event(event: dict[str, Any]) -> None:
        if event["type"] == "call.started":  # the method body runs, its model request won't
            cancel.set()

    result = agent.run_turn(
        TurnRequest("owls?"),
        context=Context.for_session(store, "chat"),
        on_event=on_event,
        cancel_event=cancel,
    )
    assert result.status == "cancelled"
    assert result.continuation is not None
    assert result.continuation["stopped_at"]["type"] == "llm.request"
    assert len(openai_server.requests) == 1
    statuses = [(n.kind, n.name, n.status) for n in store.list_nodes("chat")]
    assert statuses == [
        ("code", "turn", "cancelled"),
        ("llm", "gpt-test", "completed"),
        ("code", "research", "cancelled"),
    ]


def test_cancel_at_method_entry_runs_no_body(openai_server: OpenAIServer, rt: Runtime) -> None:
    ran: list[str] = []

    class Guarded(ChatAgent):
        method_options = {"act": {"tool": True}}

        def act(self, what: str) -> str:
            """Do something."""
            ran.append(what)
            return "done"

    cancel = threading.Event()
    openai_server.reply_tool_calls([("c1", "act", {"what": "x"})])
    result = Guarded(runtime=rt).run_turn(
        TurnRequest("act"),
        on_event=lambda e: cancel.set() if e["type"] == "tool.started" else None,
        cancel_event=cancel,
    )
    assert result.status == "cancelled" and ran == []
    assert result.continuation is not None
    assert result.continuation["stopped_at"] == {"type": "call.started", "name": "Guarded.act"}


async def test_cancelling_the_arun_turn_task_stops_the_worker_at_the_next_safe_point(
    openai_server: OpenAIServer, rt: Runtime, store: SessionStore
) -> None:
    entered = threading.Event()
    proceed = threading.Event()
    calls: list[str] = []

    def slow(topic: str) -> str:
        """A tool that waits until the test lets it finish."""
        calls.append(topic)
        entered.set()
        proceed.wait(10)
        return "slow-result"

    openai_server.reply_tool_calls([("c1", "slow", {"topic": "t"})])
    agent = ChatAgent(runtime=rt, tools=[slow])
    cancel = threading.Event()
    task = asyncio.ensure_future(
        agent.arun_turn(
            TurnRequest("go"), context=Context.for_session(store, "chat"), cancel_event=cancel
        )
    )
    assert await asyncio.to_thread(entered.wait, 10)
    task.cancel()
    assert await asyncio.to_thread(cancel.wait, 10)  # task cancellation set the turn's event
    proceed.set()
    with pytest.raises(TurnCancelled) as info:
        await task
    assert isinstance(info.value, asyncio.CancelledError)
    result = info.value.result
    assert isinstance(result, TurnResult) and result.status == "cancelled"
    assert calls == ["t"] and len(openai_server.requests) == 1
    assert result.continuation is not None
    assert result.continuation["stopped_at"]["type"] == "llm.request"
    assert [n.status for n in store.list_nodes("chat") if n.kind == "code"] == ["cancelled"]

    openai_server.reply_tool_calls([("c2", "slow", {"topic": "u"})])
    openai_server.reply_text("finally")
    resumed = await agent.aresume_turn(result, context=Context.for_session(store, "chat"))
    assert resumed.status == "completed" and resumed.output == "finally"


def test_request_for_another_session_is_rejected(rt: Runtime, store: SessionStore) -> None:
    store.create_session("other")
    ctx = Context.for_session(store, "chat")
    with pytest.raises(ValueError, match="session 'other'"):
        ChatAgent(runtime=rt).run_turn(TurnRequest("hi", session_id="other"), context=ctx)
    assert store.list_nodes("chat") == [] and store.list_nodes("other") == []


def test_resume_into_another_session_is_rejected(
    openai_server: OpenAIServer, rt: Runtime, store: SessionStore
) -> None:
    store.create_session("other")
    cancel = threading.Event()
    cancel.set()
    first = ChatAgent(runtime=rt).run_turn(
        TurnRequest("hi"), context=Context.for_session(store, "chat"), cancel_event=cancel
    )
    assert first.status == "cancelled" and first.session_id == "chat"
    with pytest.raises(ValueError, match=r"session 'chat'.*'other'"):
        ChatAgent(runtime=rt).resume_turn(first, context=Context.for_session(store, "other"))
    assert openai_server.requests == []
    assert store.list_nodes("chat") == [] and store.list_nodes("other") == []


def test_completed_turn_cannot_be_resumed() -> None:
    done = TurnResult(request_id="r", status="completed")
    with pytest.raises(ValueError, match="only a cancelled"):
        make_echo().resume_turn(done)


def make_echo() -> ChatAgent:
    from openprogram.runtime import create_runtime

    return ChatAgent(runtime=create_runtime("scripted:echo"), tools=[])


def test_cancel_before_start_then_resume() -> None:
    cancel = threading.Event()
    cancel.set()
    agent = make_echo()
    events: list[str] = []
    first = agent.run_turn(
        TurnRequest("again"), cancel_event=cancel, on_event=lambda e: events.append(e["type"])
    )
    assert first.status == "cancelled" and first.continuation is not None
    assert events == ["turn.started", "turn.cancelled"]
    second = agent.resume_turn(first)
    assert second.status == "completed" and "again" in str(second.output)
    assert second.request_id == first.request_id


def test_failed_turn_reports_the_error_and_keeps_a_continuation(
    openai_server: OpenAIServer, rt: Runtime
) -> None:
    openai_server.reply_error(400, "bad request body")
    events: list[dict[str, Any]] = []
    result = ChatAgent(runtime=rt).run_turn(TurnRequest("x"), on_event=events.append)
    assert result.status == "failed" and "bad request body" in (result.error or "")
    assert result.continuation is not None
    assert events[-1]["type"] == "turn.failed"
    assert SENTINEL_KEY not in json.dumps(events)


def test_failing_event_sink_does_not_break_the_turn() -> None:
    def sink(event: dict[str, Any]) -> None:
        raise RuntimeError("ui bug")

    assert make_echo().run_turn(TurnRequest("still works"), on_event=sink).status == "completed"


def test_checkpoint_outside_a_turn_is_a_no_op() -> None:
    assert current_control() is None
    checkpoint("llm.request", model="m", iteration=1)  # nothing to cancel, nowhere to emit


async def test_arun_turn() -> None:
    result = await make_echo().arun_turn(TurnRequest("async hello"))
    assert result.status == "completed" and "async hello" in str(result.output)


async def test_aexec_stops_at_its_safe_point(openai_server: OpenAIServer, rt: Runtime) -> None:
    cancel = threading.Event()
    events: list[dict[str, Any]] = []
    openai_server.reply_text("one")
    with turn_control(TurnControl("r", cancel_event=cancel, on_event=events.append)):
        assert await rt.aexec("first") == "one"
        cancel.set()
        with pytest.raises(TurnCancelled, match=r"llm\.request"):
            await rt.aexec("second")
    assert len(openai_server.requests) == 1
    assert [e["type"] for e in events] == ["llm.request", "llm.response"]
