"""Decisions and tools as the seeds specify (issue 11 items 3-8), over a loopback
OpenAI-wire server: ``Runtime.exec(choices=)``, the instance serving a ``tool=True``
method, toolsets, async tools, gates, and tool schemas."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Optional

import agent_server
import pytest
from agent_server import ChatServer, tool_call

from openprogram import Agent, DecisionError, agent, agent_async
from openprogram.decision import DECISION_FINISH_INSTRUCTION
from openprogram.errors import ConfigError
from openprogram.programs import function
from openprogram.runtime import Runtime

_restore_registry = agent_server._restore_registry
chat = agent_server.chat
rt = agent_server.rt


def decide(call: dict[str, Any]) -> str:
    return f"Done.\n```json\n{json.dumps(call)}\n```"


# ------------------------------------------------------------------ item 3


def lookup(order_id: str) -> str:
    """Look up an order."""
    return f"{order_id}: paid twice"


def refund(order_id: str) -> dict:
    """Refund the order."""
    return {"refunded": order_id}


CHOICES = {"refund": refund, "close": {"status": "closed"}}


def test_exec_choices_runs_the_turn_with_tools_then_resolves(chat: ChatServer, rt: Runtime) -> None:
    chat.reply(
        tool_call("lookup", {"order_id": "A1"}), decide({"call": "refund", "order_id": "A1"})
    )
    result = rt.exec("Handle ticket A1", tools=[lookup], choices=CHOICES)
    assert result == {"refunded": "A1"}
    prompt = chat.user_texts(0)[0]
    assert prompt.startswith("Handle ticket A1\n\n" + DECISION_FINISH_INSTRUCTION)
    assert '{"call": "refund", "order_id": "<str>"}' in prompt
    assert chat.tool_results(1) == ["A1: paid twice"]


def test_exec_choices_retries_once_then_raises(chat: ChatServer, rt: Runtime) -> None:
    chat.reply("no json here", decide({"call": "close"}))
    assert rt.exec("Handle it", choices=CHOICES) == {"status": "closed"}
    retry = chat.messages(1)
    assert [m["role"] for m in retry] == ["user", "assistant", "user"]
    assert "could not be used as a decision" in retry[-1]["content"]
    assert "tools" not in chat.requests[1]  # the retry only asks for the decision

    chat.reply("still nothing", "nothing again", "never asked")
    with pytest.raises(DecisionError, match="no_json") as info:
        rt.exec("Handle it", choices=CHOICES)
    assert info.value.attempts == 2 and len(chat.requests) == 4  # one fixed retry


def test_agent_choices_is_the_same_path(chat: ChatServer, rt: Runtime) -> None:
    chat.reply(decide({"call": "close"}), decide({"call": "close"}))
    via_exec = rt.exec("Same prompt", tools=[], choices=CHOICES)
    via_agent = agent("Same prompt", tools=[], choices=CHOICES, runtime=rt)
    assert via_exec == via_agent == {"status": "closed"}
    assert chat.messages(0) == chat.messages(1)


async def test_aexec_choices_resolves(chat: ChatServer, rt: Runtime) -> None:
    chat.reply(decide({"call": "refund", "order_id": "B2"}))
    assert await rt.aexec("Handle B2", choices=CHOICES) == {"refunded": "B2"}


# ------------------------------------------------------------------ item 4


def test_a_tool_method_is_served_by_the_instance_that_offered_it(
    chat: ChatServer, rt: Runtime
) -> None:
    class Helper(Agent):
        tools = None
        method_options = {"whoami": {"tool": True}}

        def __init__(self, label: str, **settings: Any) -> None:
            super().__init__(**settings)
            self.label = label

        def whoami(self) -> str:
            """Say which helper answers."""
            return self.label

        def ask(self) -> str:
            return self("Who are you?")

    h1 = Helper("h1", runtime=rt)
    second = Helper("second", runtime=rt)
    chat.reply(tool_call("whoami", {}), "ok", tool_call("whoami", {}), "ok")
    assert h1.ask() == "ok"
    assert chat.tool_results(1) == ["h1"]
    assert second("Who are you?") == "ok"
    assert chat.tool_results(3) == ["second"]


# ------------------------------------------------------------------ item 5


def test_toolset_before_any_agent_call_and_unknown_names(chat: ChatServer, rt: Runtime) -> None:
    @function(toolset="files")
    def read(path: str) -> str:
        """Read a file."""
        return f"contents of {path}"

    chat.reply(tool_call("read", {"path": "a.txt"}), "read it")
    assert rt.exec("Read a.txt", toolset="files") == "read it"
    assert chat.tool_names(0) == ["read"]
    with pytest.raises(ConfigError, match=r"unknown toolset 'no-such'; known toolsets: .*files"):
        rt.exec("x", toolset="no-such")
    with pytest.raises(ConfigError, match="unknown toolset 'fiels'"):
        agent("x", toolset="fiels", runtime=rt)
    assert len(chat.requests) == 2


# ------------------------------------------------------------------ item 6


@pytest.fixture
def async_tools() -> tuple[Any, type]:
    @function
    async def fetch(url: str) -> str:
        """Fetch a page."""
        await asyncio.sleep(0)
        return f"page at {url}"

    @function(timeout=0.2)
    async def stall() -> str:
        """Never finishes in time."""
        await asyncio.sleep(30)
        return "late"

    class Reader(Agent):
        tools = None
        method_options = {"summarize": {"tool": True}}

        async def summarize(self, text: str) -> str:
            """Summarize text."""
            await asyncio.sleep(0)
            return f"summary of {text}"

    return fetch, Reader


def script_async(chat: ChatServer) -> None:
    chat.reply(
        {"tool_calls": [("fetch", {"url": "u"}, None), ("summarize", {"text": "t"}, None)]},
        tool_call("stall", {}),
        "done",
    )


def check_async(chat: ChatServer) -> None:
    assert chat.tool_results(1) == ["page at u", "summary of t"]
    (stalled,) = chat.tool_results(2)[2:]
    assert "timed out after 0.2 s" in stalled


def test_async_tools_are_awaited_in_the_sync_loop(
    chat: ChatServer, rt: Runtime, async_tools: tuple[Any, type]
) -> None:
    _, reader = async_tools
    reader()
    script_async(chat)
    assert agent("Read", runtime=rt) == "done"
    check_async(chat)


async def test_async_tools_are_awaited_in_agent_async_and_arun(
    chat: ChatServer, rt: Runtime, async_tools: tuple[Any, type]
) -> None:
    _, reader = async_tools
    script_async(chat)
    assert await agent_async("Read", runtime=rt) == "done"
    check_async(chat)
    chat.requests.clear()
    script_async(chat)
    assert await reader(runtime=rt).arun("Read") == "done"
    check_async(chat)


# ------------------------------------------------------------------ item 7


def run_one(chat: ChatServer, rt: Runtime, name: str, arguments: dict[str, Any]) -> str:
    chat.reply(tool_call(name, arguments), "ok")
    agent("go", tools=[name], runtime=rt)
    (result,) = chat.tool_results()
    return str(result)


def test_gates_take_the_tool_arguments_by_name_and_fail_closed(
    chat: ChatServer, rt: Runtime
) -> None:
    removed: list[str] = []

    def under_tmp(path: str) -> bool:
        return path.startswith("/tmp/")

    def wrong_shape(args: dict) -> bool:  # the old dict convention: does not fit
        return True

    def broken(path: str) -> bool:
        raise KeyError("policy table")

    for gate, name in ((under_tmp, "rm"), (wrong_shape, "rm_any"), (broken, "rm_broken")):

        def rm(path: str, recursive: bool = False) -> str:
            removed.append(path)
            return "removed"

        function(rm, name=name, check_fn=gate)

    assert (
        run_one(chat, rt, "rm", {"path": "/"}) == "ToolError: tool 'rm' was blocked by its check_fn"
    )
    assert run_one(chat, rt, "rm", {"path": "/tmp/x"}) == "removed"
    mismatch = run_one(chat, rt, "rm_any", {"path": "/"})
    assert "blocked: its check_fn wrong_shape does not fit the tool's arguments" in mismatch
    assert (
        "parameter 'args' is not an argument of the tool (arguments: path, recursive)" in mismatch
    )
    raised = run_one(chat, rt, "rm_broken", {"path": "/"})
    assert "blocked: its check_fn broken raised KeyError" in raised
    assert removed == ["/tmp/x"]


def test_requires_approval_callable_gets_named_arguments(chat: ChatServer, rt: Runtime) -> None:
    paid: list[int] = []

    @function(requires_approval=lambda amount, currency="EUR": amount > 100)
    def pay(amount: int, currency: str = "EUR") -> str:
        """Pay."""
        paid.append(amount)
        return "paid"

    @function(requires_approval=lambda total: total > 1)
    def tip(amount: int) -> str:
        """Tip."""
        paid.append(amount)
        return "tipped"

    assert run_one(chat, rt, "pay", {"amount": 5}) == "paid"
    assert "not approved" in run_one(chat, rt, "pay", {"amount": 500})
    assert "requires_approval <lambda> does not fit" in run_one(chat, rt, "tip", {"amount": 1})
    assert paid == [5]


# ------------------------------------------------------------------ item 8


def test_optional_none_accepts_null_and_schemas_are_closed(chat: ChatServer, rt: Runtime) -> None:
    got: list[Any] = []

    @function
    def note(text: str, tag: Optional[str] = None, limit: int | None = None) -> str:  # noqa: UP045
        """Save a note."""
        got.append((text, tag, limit))
        return "saved"

    assert run_one(chat, rt, "note", {"text": "hi", "tag": None, "limit": None}) == "saved"
    assert got == [("hi", None, None)]
    params = chat.requests[0]["tools"][0]["function"]["parameters"]
    assert params["additionalProperties"] is False
    assert params["properties"]["tag"]["type"] == ["string", "null"]
    assert "extra" in run_one(chat, rt, "note", {"text": "x", "extra": 1})  # closed: refused


def test_required_runtime_parameter_is_injected_and_hidden(chat: ChatServer, rt: Runtime) -> None:
    seen: list[Any] = []

    def legacy(query: str, runtime) -> str:  # type: ignore[no-untyped-def]
        """A legacy tool that needs the runtime."""
        seen.append(runtime)
        return "found"

    class Legacy(Agent):
        method_options = {"search": {"tool": True}}

        def search(self, query: str, runtime) -> str:  # type: ignore[no-untyped-def]
            """Search with the runtime."""
            seen.append(runtime)
            return "searched"

    chat.reply(
        {"tool_calls": [("legacy", {"query": "q"}, None), ("search", {"query": "q"}, None)]}, "ok"
    )
    function(legacy)
    assert agent("go", tools=["legacy", "search"], runtime=rt) == "ok"
    assert chat.tool_results(1) == ["found", "searched"]
    assert seen == [rt, rt]
    for tool in chat.requests[0]["tools"]:
        assert list(tool["function"]["parameters"]["properties"]) == ["query"]
        assert tool["function"]["parameters"]["required"] == ["query"]
    assert Legacy(runtime=rt).search("direct") == "searched"  # a direct call injects it too
    assert seen[-1] is rt


def test_an_inherited_tool_method_is_served_by_the_subclass_instance(
    chat: ChatServer, rt: Runtime
) -> None:
    import openprogram as op

    class Base(op.Agent):
        method_options = {"state": {"tool": True}}

        def state(self) -> str:
            """Report this agent's state."""
            return f"{type(self).__name__}:{self.note}"

    class Child(Base):
        def run(self) -> str:
            return self("What is your state?")

    first, other = Child(runtime=rt), Child(runtime=rt)
    first.note, other.note = "first", "other"
    chat.reply(tool_call("state", {}), "fine")
    assert first.run() == "fine"
    assert chat.tool_results(1) == ["Child:first"]
