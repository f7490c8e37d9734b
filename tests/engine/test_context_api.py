"""Context: blocks, inheritance, providers, derive/merge/bind/current, sessions."""

from __future__ import annotations

from typing import Any

import agent_server
import pytest
from agent_server import ChatServer, history_block

from openprogram import Agent, Context, llm
from openprogram.context import ContextProviderError
from openprogram.runtime import Runtime
from openprogram.store import SessionNodeWriter, SessionStore

# fixtures shared by the Agent/llm/registry tests (tests/engine/agent_server.py)
_restore_registry = agent_server._restore_registry
chat = agent_server.chat
rt = agent_server.rt
store = agent_server.store
writer = agent_server.writer


def test_blocks_inherit_from_parent() -> None:
    parent = Context({"a": 1, "b": 2})
    child = Context({"b": 20, "c": 30}, parent=parent)
    assert dict(child) == {"a": 1, "b": 20, "c": 30}
    assert len(child) == 3 and list(child) == ["a", "b", "c"]
    child["a"] = 10
    assert parent["a"] == 1 and child["a"] == 10
    del child["a"]
    assert child["a"] == 1
    with pytest.raises(KeyError, match="inherited blocks stay"):
        del child["a"]


def test_derive_has_independent_content() -> None:
    base = Context({"x": 1}, providers={"p": lambda c: "v"}, history_filter="current_call")
    child = base.derive({"y": 2})
    child["x"] = 5
    assert base["x"] == 1 and "y" not in base
    assert child.history_filter == "current_call"
    assert child.evaluate() == {"x": 5, "y": 2, "p": "v"}
    assert child.parent is base


def test_merge_overrides_content_and_rules_but_not_call_identity() -> None:
    mine = Context({"a": 1}, call_id="node-1")
    other = Context({"a": 2, "b": 3}, providers={"p": lambda c: 4}, history_filter=False)
    assert mine.merge(other) is mine
    assert dict(mine) == {"a": 2, "b": 3}
    assert mine.history_filter is False
    assert mine.evaluate()["p"] == 4
    assert mine.call_id == "node-1"
    assert dict(Context({"a": 1}).merge({"c": 9})) == {"a": 1, "c": 9}


def test_bind_and_current() -> None:
    assert Context.current() is None
    ctx = Context({"a": 1})
    with ctx.bind() as bound:
        assert bound is ctx and Context.current() is ctx
        inner = ctx.derive()
        with inner.bind():
            assert Context.current() is inner
        assert Context.current() is ctx
    assert Context.current() is None


def test_providers_receive_the_context_and_run_each_time() -> None:
    seen: list[Any] = []
    ctx = Context({"name": "x"}, providers={"echo": lambda c: seen.append(c) or c["name"]})
    assert ctx.evaluate()["echo"] == "x"
    ctx.evaluate()
    assert seen == [ctx, ctx]


def test_bad_providers_and_filters() -> None:
    with pytest.raises(TypeError, match="expression strings are never evaluated"):
        Context(providers={"topic": "1 + 1"})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="history_filter must be"):
        Context(history_filter="everything")

    async def later(c: Context) -> str:
        return "x"

    with pytest.raises(ContextProviderError, match="returned an awaitable"):
        Context(providers={"later": later}).evaluate()
    with pytest.raises(ContextProviderError, match=r"provider 'div' failed: ZeroDivisionError"):
        Context(providers={"div": lambda c: 1 / 0}).evaluate()
    with pytest.raises(TypeError, match="SessionNodeWriter"):
        Context(store=object())  # type: ignore[arg-type]


def test_for_session_and_session_id(store: SessionStore) -> None:
    store.create_session("chat-1")
    ctx = Context.for_session(store, "chat-1", blocks={"a": 1}, providers={"p": lambda c: 2})
    assert ctx.session_id == "chat-1"
    assert ctx.derive().session_id == "chat-1"
    assert ctx.evaluate() == {"a": 1, "p": 2}
    assert Context().session_id is None


def test_agent_context_blocks_reach_the_prompt(chat: ChatServer, rt: Runtime) -> None:
    context = Context(
        {"notes": "Use the project terminology."},
        providers={"current_topic": lambda current: "Agent context"},
    )
    researcher = Agent(context=context, tools=[], runtime=rt)
    chat.reply("ok")
    researcher("What now?")
    assert chat.user_texts() == [
        '<context name="notes">\nUse the project terminology.\n</context>',
        '<context name="current_topic">\nAgent context\n</context>',
        "What now?",
    ]


def test_method_sees_agent_context_with_call_identity(
    chat: ChatServer, rt: Runtime, store: SessionStore
) -> None:
    store.create_session("explicit")
    writer = SessionNodeWriter(store, "explicit")

    class Notes(Agent):
        context = Context({"style": "terse"}, store=writer)
        tools = []

        def note(self, text: str) -> str:
            """Write a note."""
            return llm(f"Note: {text}")

    chat.reply("n1", "n2")
    notes = Notes(runtime=rt)
    notes.note("a")
    notes.note("b")
    # the explicit store recorded both calls in one session, and the second saw the first
    assert [n.name for n in store.list_nodes("explicit") if n.kind == "code"] == ["note", "note"]
    assert history_block(chat.user_texts(1)) == (
        '# Write a note.\nnote(text="a") -> "n1"\n  user: Note: a\n  assistant: n1'
    )
    assert chat.user_texts(1)[0] == '<context name="style">\nterse\n</context>'
