"""The Agent class: settings precedence, method scopes, runtime selection, hooks."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Iterator
from typing import Any

import agent_server
import pytest
from agent_server import ChatServer

from openprogram import Agent, Context, llm
from openprogram.agents import AgentSpec, add_pre_invocation_hook, remove_pre_invocation_hook
from openprogram.runtime import Runtime
from openprogram.scope import current_runtime, use_writer
from openprogram.store import SessionNodeWriter

# fixtures shared by the Agent/llm/registry tests (tests/engine/agent_server.py)
_restore_registry = agent_server._restore_registry
chat = agent_server.chat
rt = agent_server.rt
store = agent_server.store
writer = agent_server.writer


class Researcher(Agent):
    instructions = "Return a short, factual answer."
    tools = []
    model = "class-model"

    def prepare(self, question: str) -> str:
        """Remove surrounding whitespace."""
        return question.strip()

    def research(self, question: str) -> str:
        """Answer the prepared question."""
        return self(self.prepare(question))


def test_seed_example(chat: ChatServer, rt: Runtime, writer: SessionNodeWriter) -> None:
    chat.reply("42")
    researcher = Researcher(runtime=rt)
    with use_writer(writer):
        assert researcher.research("  A question ") == "42"
    assert chat.system() == "Return a short, factual answer."
    assert chat.requests[0]["model"] == "class-model"
    assert "tools" not in chat.requests[0]
    nodes = writer.load_graph()
    assert [(n.kind, n.name, n.status) for n in nodes] == [
        ("code", "research", "completed"),
        ("code", "prepare", "completed"),
        ("llm", "class-model", "completed"),
    ]
    research, prepare, call = nodes
    assert research.caller_id is None
    assert prepare.caller_id == research.id and call.caller_id == research.id
    assert research.metadata["doc"] == "Answer the prepared question."
    assert research.input == {"question": "  A question "}
    assert research.output == "42" and prepare.output == "A question"


def test_settings_precedence(chat: ChatServer, rt: Runtime) -> None:
    chat.reply("a", "b", "c")
    Researcher(runtime=rt)("q")
    Researcher(runtime=rt, model="instance-model", instructions="Instance.")("q")
    Researcher(runtime=rt, model="instance-model")("q", model="call-model", system="Call.")
    assert [r["model"] for r in chat.requests] == ["class-model", "instance-model", "call-model"]
    assert [chat.system(i) for i in range(3)] == [
        "Return a short, factual answer.",
        "Instance.",
        "Call.",
    ]


def test_instance_tools_override_class_default(chat: ChatServer, rt: Runtime) -> None:
    def ping() -> str:
        """Ping."""
        return "pong"

    chat.reply("x", "y")
    Researcher(runtime=rt, tools=[ping])("q")
    Researcher(runtime=rt, tools=[ping])("q", tools=[])
    assert chat.tool_names(0) == ["ping"]
    assert "tools" not in chat.requests[1]


def test_unknown_option_is_rejected() -> None:
    with pytest.raises(TypeError, match="unknown option 'temperature'"):
        Agent(temperature=0.1)


def test_constructing_makes_no_request_and_opens_no_session(
    chat: ChatServer, writer: SessionNodeWriter
) -> None:
    Researcher(model="m", context=Context(store=writer))
    assert chat.requests == []
    assert writer.load_graph() == []


def test_reuse_does_not_continue_a_standalone_session(chat: ChatServer, rt: Runtime) -> None:
    chat.reply("first", "second")
    researcher = Researcher(runtime=rt)
    researcher("one")
    researcher("two")
    assert chat.user_texts(1) == ["two"]  # no history from the first call


def test_from_spec(chat: ChatServer, rt: Runtime) -> None:
    spec = AgentSpec(model="spec-model", instructions="From spec.", tools=[])
    chat.reply("x", "y")
    Agent.from_spec(spec, runtime=rt)("q")
    Agent.from_spec({"model": "dict-model", "system": "Dict."}, runtime=rt, tools=[])("q")
    assert [r["model"] for r in chat.requests] == ["spec-model", "dict-model"]
    assert [chat.system(0), chat.system(1)] == ["From spec.", "Dict."]


async def test_arun(chat: ChatServer, rt: Runtime) -> None:
    chat.reply("async")
    assert await Researcher(runtime=rt).arun("q") == "async"


class Kinds(Agent):
    tools = []

    def plain(self, x: int) -> int:
        """Plain."""
        return x + 1

    def _helper(self, x: int) -> int:
        return x * 2

    @staticmethod
    def static(x: int) -> int:
        """Static."""
        return x - 1

    @classmethod
    def klass(cls, x: int) -> str:
        """Class."""
        return f"{cls.__name__}:{x}"

    async def coro(self, x: int) -> int:
        """Async."""
        return x * 10

    def gen(self) -> Iterator[int]:
        yield 1

    def __repr__(self) -> str:
        return "Kinds()"


def test_every_method_kind_opens_a_scope(writer: SessionNodeWriter) -> None:
    k = Kinds()
    with use_writer(writer):
        assert k.plain(1) == 2
        assert k._helper(2) == 4
        assert Kinds.static(3) == 2
        assert k.static(3) == 2
        assert Kinds.klass(4) == "Kinds:4"
        assert asyncio.run(k.coro(5)) == 50
        assert list(k.gen()) == [1]
        repr(k)
        assert Kinds.plain(k, 9) == 10
    got = [(n.name, n.input, n.output) for n in writer.load_graph()]
    assert got == [
        ("plain", {"x": 1}, 2),
        ("_helper", {"x": 2}, 4),
        ("static", {"x": 3}, 2),
        ("static", {"x": 3}, 2),
        ("klass", {"x": 4}, "Kinds:4"),
        ("coro", {"x": 5}, 50),
        ("plain", {"x": 9}, 10),
    ]
    assert writer.load_graph()[0].metadata["doc"] == "Plain."


def test_methods_run_normally_without_a_store() -> None:
    assert Kinds().plain(1) == 2


def test_error_and_cancel_status(writer: SessionNodeWriter) -> None:
    class Failing(Agent):
        def boom(self) -> None:
            raise ValueError("bad input")

        def stop(self) -> None:
            raise concurrent.futures.CancelledError()

    with use_writer(writer):
        with pytest.raises(ValueError):
            Failing().boom()
        with pytest.raises(concurrent.futures.CancelledError):
            Failing().stop()
    boom, stop = writer.load_graph()
    assert (boom.status, boom.output) == ("error", {"error": "ValueError: bad input"})
    assert stop.status == "cancelled"


def test_runtime_selection_and_inheritance(chat: ChatServer, rt: Runtime) -> None:
    other = chat.runtime("openai:other-model")
    seen: list[Any] = []

    class Inner(Agent):
        def ask(self) -> str:
            seen.append(current_runtime())
            return llm("inner")

    class Outer(Agent):
        def run(self, inner: Inner) -> str:
            seen.append(current_runtime())
            llm("outer")
            return inner.ask()

    chat.reply("o", "i", "o2", "i2")
    try:
        Outer(runtime=rt).run(Inner())  # inner inherits the caller's runtime
        Outer(runtime=rt).run(Inner(runtime=other))  # inner's own runtime wins
    finally:
        other.close()
    assert seen == [rt, rt, rt, other]
    assert [r["model"] for r in chat.requests] == [
        "test-model",
        "test-model",
        "test-model",
        "other-model",
    ]


def test_legacy_runtime_parameters_are_injected(
    chat: ChatServer, rt: Runtime, monkeypatch: pytest.MonkeyPatch, writer: SessionNodeWriter
) -> None:
    class Legacy(Agent):
        def both(self, text: str, runtime: Any = None, review_runtime: Any = None) -> bool:
            return runtime is review_runtime and runtime is not None

        def given(self, runtime: Any = None) -> Any:
            return runtime

    assert Legacy(runtime=rt).both("x") is True
    assert Legacy(runtime=rt).given() is rt
    sentinel = object()
    assert Legacy(runtime=rt).given(runtime=sentinel) is sentinel
    with use_writer(writer):
        Legacy(runtime=rt).both("x")
    assert writer.load_graph()[0].input == {"text": "x"}  # runtimes are not recorded

    # an entry call without any runtime creates one and closes it on return
    monkeypatch.setenv("OPENPROGRAM_MODEL", "openai:env-model")
    monkeypatch.setenv("OPENAI_BASE_URL", chat.base_url)
    created = Legacy().given()
    assert isinstance(created, Runtime) and created.model == "openai:env-model"
    with pytest.raises(Exception, match="closed"):
        created.exec("x")


def test_self_recursion_limit(writer: SessionNodeWriter) -> None:
    class Rec(Agent):
        def down(self, n: int) -> int:
            return n if n == 0 else self.down(n - 1)

    # SPEC: self-recursion deeper than 5 raises. down(5) re-enters itself 5 times (the
    # outer call and 5 nested ones): allowed; it was refused, one level too early
    assert Rec().down(5) == 0
    with use_writer(writer), pytest.raises(RecursionError, match="more than 5 levels"):
        Rec().down(6)  # the 6th nested call raises
    statuses = [n.status for n in writer.load_graph()]
    assert statuses == ["error"] * 6  # the outer call and 5 nested; the refused one wrote none


def test_pre_invocation_hooks_can_cancel(writer: SessionNodeWriter) -> None:
    calls: list[tuple[str, dict[str, Any]]] = []

    def log(inv: Any) -> None:
        calls.append((inv.name, dict(inv.arguments)))

    def stop(inv: Any) -> None:
        if inv.name == "plain":
            raise asyncio.CancelledError("stopped by user")

    add_pre_invocation_hook(log)
    try:
        assert Kinds().static(1) == 0
        Agent.add_pre_invocation_hook(stop)
        with use_writer(writer), pytest.raises(asyncio.CancelledError):
            Kinds().plain(1)
    finally:
        remove_pre_invocation_hook(log)
        Agent.remove_pre_invocation_hook(stop)
    assert calls == [("static", {"x": 1}), ("plain", {"x": 1})]
    assert writer.load_graph() == []  # cancelled before anything was recorded
    assert Kinds().plain(1) == 2  # hooks removed


def test_method_system_option(chat: ChatServer, rt: Runtime) -> None:
    class Sys(Agent):
        instructions = "Agent instructions."
        method_options = {"ask": {"system": "Method system."}}

        def ask(self) -> str:
            llm("a")
            return self("b", tools=[])

    chat.reply("1", "2")
    Sys(runtime=rt).ask()
    assert chat.system(0) == "Method system."
    assert chat.system(1) == "Method system."


def test_context_is_derived_and_bound_per_call(writer: SessionNodeWriter) -> None:
    base = Context({"notes": "n"})
    seen: list[Context | None] = []

    class C(Agent):
        context = base

        def look(self) -> None:
            current = Context.current()
            seen.append(current)
            assert current is not None
            current["scratch"] = "local"

    with use_writer(writer):
        C().look()
    ctx = seen[0]
    assert ctx is not None and ctx is not base and ctx.descends_from(base)
    assert ctx["notes"] == "n" and "scratch" not in base
    assert ctx.call_id == writer.load_graph()[0].id
    assert Context.current() is None


def test_nested_agents_tree_in_sqlite(
    chat: ChatServer, rt: Runtime, writer: SessionNodeWriter
) -> None:
    class Writer(Agent):
        tools = []

        def draft(self, topic: str) -> str:
            """Write a draft."""
            return self(f"Draft about {topic}")

    class Reviewer(Agent):
        tools = []

        def review(self, text: str) -> str:
            """Review a draft."""
            return self(f"Review: {text}")

    class Editor(Agent):
        def publish(self, topic: str) -> str:
            """Draft then review."""
            draft = Writer().draft(topic)
            return Reviewer().review(draft)

    chat.reply("the draft", "looks good")
    with use_writer(writer):
        assert Editor(runtime=rt).publish("bees") == "looks good"
    nodes = writer.load_graph()
    by_id = {n.id: n for n in nodes}

    def parent(n: Any) -> str | None:
        return by_id[n.caller_id].name if n.caller_id else None

    assert [(n.kind, n.name, parent(n)) for n in nodes] == [
        ("code", "publish", None),
        ("code", "draft", "publish"),
        ("llm", "test-model", "draft"),
        ("code", "review", "publish"),
        ("llm", "test-model", "review"),
    ]
    assert all(n.status == "completed" for n in nodes)
    seqs = [n.seq for n in nodes]
    assert seqs == sorted(seqs)
