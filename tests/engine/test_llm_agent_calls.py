"""llm(), agent(), agent_async() against a loopback Chat Completions server."""

from __future__ import annotations

import json
from typing import Any

import agent_server
import pytest
from agent_server import ChatServer, tool_call

from openprogram import Context, agent, agent_async, llm
from openprogram.decision import DECISION_FINISH_INSTRUCTION, DecisionError
from openprogram.programs import function
from openprogram.runtime import Runtime
from openprogram.scope import use_writer
from openprogram.store import SessionNodeWriter, SessionStore

# fixtures shared by the Agent/llm/registry tests (tests/engine/agent_server.py)
_restore_registry = agent_server._restore_registry
chat = agent_server.chat
rt = agent_server.rt
store = agent_server.store
writer = agent_server.writer


def test_llm_one_request_without_tools(chat: ChatServer, rt: Runtime) -> None:
    @function
    def lookup(q: str) -> str:
        return q

    chat.reply("hello there")
    assert llm("Say hello", runtime=rt) == "hello there"
    assert len(chat.requests) == 1
    assert "tools" not in chat.requests[0]
    assert chat.messages() == [{"role": "user", "content": "Say hello"}]


def test_llm_records_one_llm_node(chat: ChatServer, rt: Runtime, writer: SessionNodeWriter) -> None:
    chat.reply("answer")
    with use_writer(writer):
        llm("Question?", runtime=rt)
    nodes = writer.load_graph()
    assert [(n.kind, n.status) for n in nodes] == [("llm", "completed")]
    assert nodes[0].output["text"] == "answer"
    assert nodes[0].metadata["usage"] == {"input_tokens": 3, "output_tokens": 2}


def test_agent_tool_loop_with_plain_function(chat: ChatServer, rt: Runtime) -> None:
    seen: list[int] = []

    def add(a: int, b: int) -> int:
        """Add two numbers."""
        seen.append(a + b)
        return a + b

    chat.reply(tool_call("add", {"a": 2, "b": 3}), "The sum is 5.")
    assert agent("Add 2 and 3", tools=[add], runtime=rt) == "The sum is 5."
    assert seen == [5]
    assert chat.tool_names(0) == ["add"]
    assert chat.tool_results(1) == ["5"]


def test_agent_tools_none_offers_registered_tools_and_empty_list_none(
    chat: ChatServer, rt: Runtime
) -> None:
    @function
    def search(query: str) -> str:
        """Search the notes."""
        return "found"

    chat.reply("a", "b")
    agent("Find it", runtime=rt)
    agent("Find it", tools=[], runtime=rt)
    assert chat.tool_names(0) == ["search"]
    assert "tools" not in chat.requests[1]


def test_agent_toolset_selects_registered_tools(chat: ChatServer, rt: Runtime) -> None:
    @function(toolset=("files",))
    def read_file(path: str) -> str:
        return "content"

    @function(toolset=("web",))
    def fetch(url: str) -> str:
        return "page"

    chat.reply("done")
    agent("Read", toolset="files", runtime=rt)
    assert chat.tool_names() == ["read_file"]
    # The runtime itself resolves toolset names through the registry too.
    chat.reply("done")
    rt.exec("Read", toolset="web")
    assert chat.tool_names() == ["fetch"]


def test_choices_appends_instruction_and_resolves(chat: ChatServer, rt: Runtime) -> None:
    chat.reply('I choose:\n```json\n{"call": "approve"}\n```')
    result = agent(
        "Review the change", tools=[], choices={"approve": "ok", "reject": "no"}, runtime=rt
    )
    assert result == "ok"
    text = chat.user_texts()[0]
    assert text.startswith("Review the change\n\n" + DECISION_FINISH_INSTRUCTION)
    assert "approve" in text and "reject" in text


def test_choices_retry_is_a_recorded_model_call(
    chat: ChatServer, rt: Runtime, writer: SessionNodeWriter
) -> None:
    chat.reply("no json here", '{"call": "reject"}')
    with use_writer(writer):
        result = llm("Decide", choices={"approve": 1, "reject": 2}, runtime=rt)
    assert result == 2
    assert len(chat.requests) == 2
    retry = chat.messages(1)
    assert [m["role"] for m in retry] == ["user", "assistant", "user"]
    assert retry[1]["content"] == "no json here"
    assert "Error (no_json)" in retry[2]["content"]
    assert [n.kind for n in writer.load_graph()] == ["llm", "llm"]


def test_choices_exhausted_raises_decision_error(chat: ChatServer, rt: Runtime) -> None:
    chat.reply("nothing", "still nothing")
    with pytest.raises(DecisionError) as info:
        llm("Decide", choices=["yes", "no"], runtime=rt)
    assert info.value.kind == "no_json"


def test_runtime_created_from_environment_is_closed(
    chat: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENPROGRAM_MODEL", "openai:env-model")
    monkeypatch.setenv("OPENAI_BASE_URL", chat.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-sentinel")
    closed: list[Runtime] = []
    original = Runtime.close

    def spy(self: Runtime) -> None:
        closed.append(self)
        original(self)

    monkeypatch.setattr(Runtime, "close", spy)
    chat.reply("from env")
    assert llm("Hi") == "from env"
    assert chat.requests[0]["model"] == "env-model"
    assert len(closed) == 1


def test_runtime_argument_is_not_closed(chat: ChatServer, rt: Runtime) -> None:
    chat.reply("one", "two")
    llm("a", runtime=rt)
    assert llm("b", runtime=rt) == "two"  # still usable


def test_model_and_effort_reach_the_wire(chat: ChatServer, rt: Runtime) -> None:
    chat.reply("x")
    agent("q", tools=[], model="other-model", effort="low", runtime=rt)
    assert chat.requests[0]["model"] == "other-model"
    assert chat.requests[0]["reasoning_effort"] == "low"


def test_response_format_is_sent(chat: ChatServer, rt: Runtime) -> None:
    chat.reply('{"n": 1}')
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    assert json.loads(llm("n?", response_format=schema, runtime=rt)) == {"n": 1}
    assert chat.requests[0]["response_format"]["json_schema"]["schema"] == schema


async def test_agent_async(chat: ChatServer, rt: Runtime) -> None:
    chat.reply("async reply")
    assert await agent_async("hi", tools=[], runtime=rt) == "async reply"


def test_public_names_are_the_functions(chat: ChatServer, rt: Runtime) -> None:
    import openprogram
    import openprogram.agents  # importing the Agent module must not shadow agent()
    from openprogram.agentic_programming import llm as seed_llm

    assert openprogram.agent is agent and openprogram.llm is seed_llm is llm
    chat.reply("via package")
    assert seed_llm("x", runtime=rt) == "via package"


def test_bad_content_is_a_clear_error(rt: Runtime) -> None:
    with pytest.raises(TypeError, match="content must be a string or a list"):
        llm(42, runtime=rt)  # type: ignore[arg-type]


def test_context_blocks_and_providers_go_before_content(chat: ChatServer, rt: Runtime) -> None:
    calls: list[Any] = []

    def topic(ctx: Context) -> str:
        calls.append(ctx)
        return f"topic #{len(calls)}"

    ctx = Context({"notes": "Use the project terminology."}, providers={"topic": topic})
    chat.reply("a", "b")
    llm("Q1", runtime=rt, context=ctx)
    llm("Q2", runtime=rt, context=ctx)
    assert chat.user_texts(0) == [
        '<context name="notes">\nUse the project terminology.\n</context>',
        '<context name="topic">\ntopic #1\n</context>',
        "Q1",
    ]
    assert chat.user_texts(1)[1] == '<context name="topic">\ntopic #2\n</context>'


def test_failing_provider_fails_the_request_and_records_nothing(
    chat: ChatServer, rt: Runtime, writer: SessionNodeWriter
) -> None:
    def broken(ctx: Context) -> str:
        raise KeyError("missing")

    ctx = Context(providers={"broken": broken})
    with (
        use_writer(writer),
        pytest.raises(Exception, match="context provider 'broken' failed: KeyError"),
    ):
        llm("Q", runtime=rt, context=ctx)
    assert chat.requests == []
    assert writer.load_graph() == []


def test_explicit_store_session_example(chat: ChatServer, rt: Runtime, tmp_path: Any) -> None:
    """The seed's example: repeated calls of one Agent continue one explicit session."""
    from openprogram import Agent

    store = SessionStore(root_path=str(tmp_path / "sessions"))
    store.create_session("research", agent_id="main")
    writer = SessionNodeWriter(store, "research")
    researcher = Agent(context=Context(store=writer), tools=[], runtime=rt)
    chat.reply("R1, R2", "Both are fine.")
    try:
        first = researcher("List the project requirements.")
        second = researcher("Review the requirements from the previous call.")
    finally:
        store.close()
    assert (first, second) == ("R1, R2", "Both are fine.")
    assert chat.user_texts(0) == ["List the project requirements."]
    assert chat.user_texts(1) == [
        "<history>\nuser: List the project requirements.\nassistant: R1, R2\n</history>",
        "Review the requirements from the previous call.",
    ]
    with SessionStore(root_path=str(tmp_path / "sessions")) as reopened:
        nodes = reopened.list_nodes("research")
        assert [n.kind for n in nodes] == ["llm", "llm"]
        assert nodes[1].predecessor_id == nodes[0].id
