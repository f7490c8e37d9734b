"""Context at request time (issue 11 items 9, 10): the turn's Context is the request's,
a bound Context's session records method and model nodes as parent and child, and
providers run at every model request, tool-loop iterations included."""

from __future__ import annotations

from typing import Any

import agent_server
from agent_server import ChatServer, tool_call

from openprogram import Agent, Context, TurnRequest
from openprogram.runtime import Runtime
from openprogram.store import SessionNodeWriter, SessionStore

_restore_registry = agent_server._restore_registry
chat = agent_server.chat
rt = agent_server.rt
store = agent_server.store
writer = agent_server.writer


def contexts(texts: list[str]) -> list[str]:
    return [t for t in texts if t.startswith("<context ")]


# ------------------------------------------------------------------ item 9


def test_run_turn_uses_the_context_it_is_given(
    chat: ChatServer, rt: Runtime, store: SessionStore
) -> None:
    store.create_session("chat", agent_id="a")
    own = Context({"persona": "the Agent's own"})
    helper = Agent(context=own, runtime=rt, tools=[])
    chat.reply("first", "second")
    given = Context.for_session(store, "chat", blocks={"persona": "the turn's"})
    assert helper.run_turn(TurnRequest("hello"), context=given).output == "first"
    assert contexts(chat.user_texts(0)) == ['<context name="persona">\nthe turn\'s\n</context>']

    quiet = Context.for_session(store, "chat", blocks={"persona": "quiet"})
    quiet.history_filter = False
    assert helper.run_turn(TurnRequest("again"), context=quiet).output == "second"
    texts = chat.user_texts(1)
    assert agent_server.history_block(texts) is None  # its history filter applies
    assert contexts(texts) == ['<context name="persona">\nquiet\n</context>']


class Summarizer(Agent):
    tools = []

    def summarize(self, text: str) -> str:
        """Summarize the text."""
        return self(f"Summarize: {text}")


def test_method_inside_a_bound_session_context_records_code_then_llm(
    chat: ChatServer, rt: Runtime, writer: SessionNodeWriter, store: SessionStore
) -> None:
    chat.reply("short")
    with Context(store=writer).bind():
        assert Summarizer(runtime=rt).summarize("a long text") == "short"
    nodes = store.list_nodes("s1")
    assert [(n.kind, n.name) for n in nodes] == [("code", "summarize"), ("llm", "test-model")]
    code, llm = nodes
    assert llm.caller_id == code.id and code.output == "short"
    assert code.input == {"text": "a long text"}


# ------------------------------------------------------------------ item 10


def test_providers_run_at_every_request_of_a_tool_loop(chat: ChatServer, rt: Runtime) -> None:
    state = {"files": 0}

    def add_file(name: str) -> str:
        """Add a file."""
        state["files"] += 1
        return f"added {name}"

    evaluated: list[int] = []

    def file_count(current: Context) -> Any:
        evaluated.append(state["files"])
        return state["files"]

    worker = Agent(context=Context(providers={"file_count": file_count}), runtime=rt)
    chat.reply(tool_call("add_file", {"name": "a"}), tool_call("add_file", {"name": "b"}), "done")
    assert worker("Add two files", tools=[add_file]) == "done"
    assert evaluated == [0, 1, 2]
    seen = [contexts(chat.user_texts(i)) for i in range(3)]
    assert seen == [[f'<context name="file_count">\n{n}\n</context>'] for n in (0, 1, 2)]
    assert [m["role"] for m in chat.messages(2)] == [
        "user", "assistant", "tool", "assistant", "tool",
    ]  # fmt: skip


def test_blocks_changed_by_a_tool_show_in_the_next_request(chat: ChatServer, rt: Runtime) -> None:
    context = Context({"stage": "planning"})

    def advance(stage: str) -> str:
        """Move to another stage."""
        context["stage"] = stage
        return "moved"

    chat.reply(tool_call("advance", {"stage": "building"}), "done")
    assert Agent(context=context, runtime=rt)("Work", tools=[advance]) == "done"
    assert contexts(chat.user_texts(0)) == ['<context name="stage">\nplanning\n</context>']
    assert contexts(chat.user_texts(1)) == ['<context name="stage">\nbuilding\n</context>']
