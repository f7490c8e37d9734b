"""The code/llm node lifecycle through ``openprogram.scope`` into a real store."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from openprogram.runtime.types import (
    Message,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolSpec,
    Usage,
)
from openprogram.scope import call_scope, record_llm_call, set_output, use_writer
from openprogram.store import SessionNodeWriter, SessionStore


@pytest.fixture
def writer(tmp_path: Path) -> Iterator[SessionNodeWriter]:
    store = SessionStore(tmp_path)
    yield SessionNodeWriter(store, store.create_session("run"))
    store.close()


def _request() -> ModelRequest:
    return ModelRequest(
        model_id="scripted:test",
        messages=[Message(role="user", content="What is 2+2?")],
        system="Be brief.",
        tools=[ToolSpec("calc", "Calculate.", {"type": "object", "properties": {}})],
    )


def _response() -> ModelResponse:
    return ModelResponse(
        text="4",
        tool_calls=[ToolCall(id="c1", name="calc", arguments={"x": 2})],
        usage=Usage(input_tokens=11, output_tokens=3),
        model="scripted-1",
        request_id="req-9",
        finish_reason="stop",
    )


def test_code_node_is_running_inside_and_completed_after(writer: SessionNodeWriter) -> None:
    store = writer.store
    with use_writer(writer):
        with call_scope("summarise", inputs={"text": "abc"}, doc="Summarise text.") as frame:
            inside = store.get_node(frame.node_id or "")
            assert inside is not None
            assert (inside.kind, inside.name, inside.status) == ("code", "summarise", "running")
            assert inside.output is None and inside.input == {"text": "abc"}
            assert inside.metadata["doc"] == "Summarise text."
            set_output(frame, {"summary": "a"})
    done = store.get_node(frame.node_id or "")
    assert done is not None and done.status == "completed"
    assert done.output == {"summary": "a"}
    assert done.metadata["doc"] == "Summarise text." and done.metadata["duration_s"] >= 0


def test_nested_calls_and_llm_nodes_record_caller_edges(writer: SessionNodeWriter) -> None:
    with use_writer(writer):
        with call_scope("outer") as outer:
            with call_scope("inner") as inner:
                llm_id = record_llm_call(
                    provider="scripted",
                    request=_request(),
                    response=_response(),
                    duration_s=0.25,
                )
                set_output(inner, 4)
            set_output(outer, "ok")
    nodes = writer.load_graph()
    assert [(n.kind, n.name) for n in nodes] == [
        ("code", "outer"),
        ("code", "inner"),
        ("llm", "scripted:test"),
    ]
    outer_n, inner_n, llm_n = nodes
    assert inner_n.caller_id == outer_n.id and llm_n.caller_id == inner_n.id
    assert llm_n.id == llm_id and llm_n.status == "completed"
    assert llm_n.input["messages"][0]["content"] == "What is 2+2?"
    assert llm_n.input["system"] == "Be brief." and llm_n.input["tools"][0]["name"] == "calc"
    assert llm_n.output == {
        "text": "4",
        "tool_calls": [{"id": "c1", "name": "calc", "arguments": {"x": 2}}],
        "finish_reason": "stop",
    }
    assert llm_n.metadata["usage"] == {"input_tokens": 11, "output_tokens": 3}
    assert llm_n.metadata["request_id"] == "req-9" and llm_n.metadata["duration_s"] == 0.25
    assert [n.seq for n in nodes] == [1, 2, 3]
    assert all(n.status == "completed" for n in nodes)


def test_failed_llm_call_is_an_error_node(writer: SessionNodeWriter) -> None:
    with use_writer(writer):
        record_llm_call(
            provider="scripted", request=_request(), response=None, error=TimeoutError("slow")
        )
    (node,) = writer.load_graph()
    assert node.status == "error" and node.output == {"error": "slow"}
    assert node.metadata["error_type"] == "TimeoutError"


def test_exception_marks_error_and_cancellation_marks_cancelled(
    writer: SessionNodeWriter,
) -> None:
    with use_writer(writer):
        with pytest.raises(ValueError):
            with call_scope("bad"):
                raise ValueError("boom")

        async def cancelled() -> None:
            with call_scope("slow"):
                raise asyncio.CancelledError

        with pytest.raises(asyncio.CancelledError):
            asyncio.run(cancelled())
    bad, slow = writer.load_graph()
    assert bad.status == "error" and bad.output == {"error": "ValueError: boom"}
    assert bad.metadata["error_type"] == "ValueError"
    assert slow.status == "cancelled"


def test_hidden_scope_writes_nothing(writer: SessionNodeWriter) -> None:
    with use_writer(writer):
        with call_scope("secret", options={"expose": "hidden"}):
            assert record_llm_call(provider="p", request=_request(), response=_response()) is None
    assert writer.load_graph() == []


def test_recording_is_a_no_op_without_a_writer(writer: SessionNodeWriter) -> None:
    with call_scope("plain", inputs={"a": 1}) as frame:
        assert frame.node_id is None
        assert record_llm_call(provider="p", request=_request(), response=_response()) is None
        set_output(frame, 1)
    assert writer.load_graph() == []


def test_explicit_writer_argument_and_non_json_values(writer: SessionNodeWriter) -> None:
    class Opaque:
        def __repr__(self) -> str:
            return "<opaque>"

    with call_scope("f", inputs={"obj": Opaque()}, writer=writer) as frame:
        set_output(frame, Opaque())
    (node,) = writer.load_graph()
    assert node.input == {"obj": "<opaque>"} and node.output == "<opaque>"
