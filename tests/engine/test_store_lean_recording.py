"""The lean recording path of ``openprogram.scope`` (pre-encoded JSON, one statement per
write) stores exactly what the general ``SessionNodeWriter.append``/``update`` path stores."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openprogram.branches import in_branch
from openprogram.errors import StoreError
from openprogram.runtime.types import (
    Message,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolSpec,
    Usage,
)
from openprogram.scope import (
    call_scope,
    record_llm_call,
    request_json,
    request_to_json,
    response_json,
    response_to_json,
    runtime_for_call,
    set_output,
    use_writer,
)
from openprogram.store import Node, SessionNodeWriter, SessionStore


def _writers(tmp_path: Path) -> tuple[SessionStore, SessionNodeWriter, SessionNodeWriter]:
    store = SessionStore(tmp_path)
    lean = SessionNodeWriter(store, store.create_session("lean"))
    general = SessionNodeWriter(store, store.create_session("general"))
    general._lean = None  # force SessionNodeWriter.append/update
    assert lean._lean is not None
    return store, lean, general


def _shape(nodes: list[Node]) -> list[tuple[Any, ...]]:
    """Every field except ids, timestamps and the measured duration."""
    ids = {n.id: i for i, n in enumerate(nodes)}
    out = []
    for n in nodes:
        meta = {k: v for k, v in n.metadata.items() if k != "duration_s"}
        out.append(
            (
                n.seq, n.kind, n.name, ids.get(n.caller_id or ""), ids.get(n.predecessor_id or ""),
                n.input, n.output, n.status, meta, "duration_s" in n.metadata,
            )
        )  # fmt: skip
    return out


class Opaque:
    def __repr__(self) -> str:
        return "Opaque()"


def _program() -> None:
    with call_scope("outer", inputs={"a": 1, "b": [1, "é", None]}, doc="Outer.") as outer:
        with call_scope("plain", inputs={"x": Opaque(), "t": (1, 2)}) as f:
            set_output(f, {"k": Opaque()})
        with call_scope("none"):
            pass
        with call_scope("paused", options={"expose": "full"}) as f:
            f.extras["status"] = "paused"
            set_output(f, "later")
        with pytest.raises(ValueError), call_scope("boom", inputs={"n": float("nan")}):
            raise ValueError("bad")
        record_llm_call(
            provider="scripted",
            request=ModelRequest(
                model_id="scripted:x",
                messages=[
                    Message(role="system", content="Be terse. ü"),
                    Message(role="user", content=[{"type": "text", "text": "hi"}]),
                    Message(
                        role="assistant",
                        content="",
                        tool_calls=[ToolCall("c1", "look", {"q": "w"})],
                    ),
                    Message(role="tool", content="ok", tool_call_id="c1", name="look"),
                    Message(role="tool", content="no", tool_call_id="c2", is_error=True),
                ],
                system=None,
                tools=[ToolSpec("look", "Look up.", {"type": "object"})],
                response_format={"type": "json_schema", "schema": {"type": "object"}},
                effort="low",
            ),
            response=ModelResponse(
                text="done",
                tool_calls=[ToolCall("c3", "look", {"q": "z"})],
                usage=Usage(3, 4),
                model="m-1",
                request_id="req-9",
                finish_reason="tool_calls",
            ),
            duration_s=0.25,
        )
        record_llm_call(
            provider="scripted",
            request=ModelRequest(model_id="scripted:y", messages=[Message("user", "q")]),
            response=None,
            error=TimeoutError("slow"),
            duration_s=1.5,
        )
        set_output(outer, [1, 2])


def test_lean_and_general_paths_store_the_same_nodes(tmp_path: Path) -> None:
    store, lean, general = _writers(tmp_path)
    for w in (lean, general):
        with use_writer(w):
            _program()
    got = _shape(store.list_nodes("lean"))
    assert got == _shape(store.list_nodes("general"))
    assert [g[1:3] for g in got] == [
        ("code", "outer"),
        ("code", "plain"),
        ("code", "none"),
        ("code", "paused"),
        ("code", "boom"),
        ("llm", "scripted:x"),
        ("llm", "scripted:y"),
    ]
    assert got[1][5:8] == ({"x": "Opaque()", "t": [1, 2]}, {"k": "Opaque()"}, "completed")
    assert got[3][7] == "paused" and got[4][7] == "error" and got[6][7] == "error"
    store.close()


def test_both_paths_record_the_forks_of_a_nested_parallel_branch(tmp_path: Path) -> None:
    store, lean, general = _writers(tmp_path)
    for w in (lean, general):
        with use_writer(w), in_branch("parallel[1]", "f1", 1), in_branch("parallel[0]", "f2", 0):
            _program()
    got = _shape(store.list_nodes("lean"))
    assert got == _shape(store.list_nodes("general"))
    forks = [["f1", 1], ["f2", 0]]
    assert all(g[8]["forks"] == forks for g in got)
    assert [g[8]["branch"] for g in got if g[1] == "llm"] == ["parallel[1]/parallel[0]"] * 2
    store.close()


def test_non_json_llm_request_is_a_store_error_on_both_paths(tmp_path: Path) -> None:
    store, lean, general = _writers(tmp_path)
    request = ModelRequest(
        model_id="scripted:x",
        messages=[Message("user", "q")],
        tools=[ToolSpec("t", "d", {"default": Opaque()})],
    )
    for w in (lean, general):
        with use_writer(w), pytest.raises(StoreError, match="must be JSON values"):
            record_llm_call(provider="scripted", request=request, response=None)
    assert store.list_nodes("lean") == [] == store.list_nodes("general")
    store.close()


def test_invalid_exit_status_is_refused(tmp_path: Path) -> None:
    store, lean, _ = _writers(tmp_path)
    with use_writer(lean), pytest.raises(StoreError, match="node status must be one of"):
        with call_scope("f") as frame:
            frame.extras["status"] = "finished"
    store.close()


def test_lean_appends_interleave_with_another_connection(tmp_path: Path) -> None:
    store, lean, _ = _writers(tmp_path)
    other_store = SessionStore(tmp_path)
    other = SessionNodeWriter(other_store, "lean")
    with use_writer(lean):
        with call_scope("a"):
            pass
        other.append("user", "u", input="hi", status="completed")
        with call_scope("b"):
            pass
    nodes = store.list_nodes("lean")
    assert [(n.seq, n.name) for n in nodes] == [(1, "a"), (2, "u"), (3, "b")]
    assert nodes[2].predecessor_id == nodes[1].id and nodes[2].status == "completed"
    other_store.close()
    store.close()


def test_closing_a_missing_node_is_a_store_error(tmp_path: Path) -> None:
    store, lean, _ = _writers(tmp_path)
    with pytest.raises(StoreError, match="does not exist"):
        lean._lean.close_node("nope", "completed", None, 0.1, 1.0)
    store.close()


def test_every_node_exit_writes_the_same_row(tmp_path: Path) -> None:
    """A node's exit as the lean recording writes it (``close_node``), as a returned step
    writes it (``finish_node``, in the caller's transaction) and as the general path does
    (``update_node``): the same output, status, time and metadata, the duration merged
    into what the node had."""
    store = SessionStore(tmp_path)
    backend = store.backend
    writer = SessionNodeWriter(store, store.create_session("exits"))
    ids = [
        writer.append("code", name, input={"x": 1}, metadata={"k": "v"}).id
        for name in ("close", "finish", "update")
    ]
    backend.close_node(ids[0], "completed", '{"r": [1, 2]}', 0.25, 5.0)
    with backend.transaction() as conn:
        backend.finish_node(conn, ids[1], '{"r": [1, 2]}', 0.25, 5.0)
    meta = {"duration_s": 0.25}
    backend.update_node(ids[2], output={"r": [1, 2]}, status="completed", metadata=meta, now=5.0)
    rows = [(n.output, n.status, n.updated_at, n.metadata) for n in store.list_nodes("exits")]
    assert rows == [({"r": [1, 2]}, "completed", 5.0, {"k": "v", "duration_s": 0.25})] * 3
    store.close()


_text = st.text(max_size=8)
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=6,
)
_messages = st.builds(
    Message,
    role=st.sampled_from(["user", "assistant", "tool", "system"]),
    content=_text | st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": _text})),
    tool_calls=st.lists(
        st.builds(ToolCall, _text, _text, st.dictionaries(_text, _json)), max_size=2
    ),
    tool_call_id=st.none() | _text,
    name=st.none() | _text,
    is_error=st.booleans(),
)


@settings(max_examples=150, deadline=None)
@given(
    provider=_text,
    model=_text,
    system=st.none() | _text,
    messages=st.lists(_messages, max_size=3),
    tools=st.lists(st.builds(ToolSpec, _text, _text, st.dictionaries(_text, _json)), max_size=2),
    response_format=st.none() | st.dictionaries(_text, _json, max_size=2),
    effort=st.none() | _text,
    text=_text,
    calls=st.lists(st.builds(ToolCall, _text, _text, st.dictionaries(_text, _json)), max_size=2),
    finish=st.none() | _text,
)
def test_text_encoders_equal_encoding_the_dicts(
    provider: str,
    model: str,
    system: str | None,
    messages: list[Message],
    tools: list[ToolSpec],
    response_format: dict[str, Any] | None,
    effort: str | None,
    text: str,
    calls: list[ToolCall],
    finish: str | None,
) -> None:
    request = ModelRequest(
        model_id=model,
        messages=messages,
        system=system,
        tools=tools,
        response_format=response_format,
        effort=effort,
    )
    response = ModelResponse(text=text, tool_calls=calls, finish_reason=finish)
    assert request_json(request, provider) == json.dumps(request_to_json(request, provider))
    assert response_json(response) == json.dumps(response_to_json(response))


@settings(max_examples=150, deadline=None)
@given(
    provider=_text,
    duration=st.floats() | st.integers(min_value=-(10**20), max_value=10**20),
    has_response=st.booleans(),
    tokens=st.tuples(st.integers(), st.integers()),
    request_id=st.none() | _text,
    model=_text,
    error=st.none() | st.sampled_from([TimeoutError("t"), ValueError("v")]),
)
def test_llm_metadata_text_equals_encoding_the_dict(
    provider: str,
    duration: float,
    has_response: bool,
    tokens: tuple[int, int],
    request_id: str | None,
    model: str,
    error: BaseException | None,
) -> None:
    from openprogram.scope import _llm_meta, _llm_meta_json

    response = (
        ModelResponse(text="", usage=Usage(*tokens), model=model, request_id=request_id)
        if has_response
        else None
    )
    want = json.dumps(_llm_meta(provider, response, error, duration))
    assert _llm_meta_json(provider, response, error, duration) == want


def test_non_json_option_in_metadata_is_a_store_error(tmp_path: Path) -> None:
    store, lean, _ = _writers(tmp_path)
    with use_writer(lean), pytest.raises(StoreError, match="must be JSON values"):
        with call_scope("f", options={"render_range": Opaque()}):
            pass
    assert store.list_nodes("lean") == []
    # the failed entry left no outermost-call runtime behind for later top-level calls
    assert runtime_for_call() is None
    store.close()
