"""DAG history rendered into prompts: expose, render_range, history_filter, branches.

Each test builds a DAG by really running Agent methods against the loopback server and
asserts the exact ``<history>`` text the server received.
"""

from __future__ import annotations

import itertools
from typing import Any

import agent_server
import pytest
from agent_server import ChatServer, history_block

from openprogram import Agent, Context, llm
from openprogram.history import branch_nodes, render_history
from openprogram.runtime import Runtime
from openprogram.scope import use_writer
from openprogram.store import SessionNodeWriter

# fixtures shared by the Agent/llm/registry tests (tests/engine/agent_server.py)
_restore_registry = agent_server._restore_registry
chat = agent_server.chat
rt = agent_server.rt
store = agent_server.store
writer = agent_server.writer


@pytest.fixture
def numbered(chat: ChatServer) -> ChatServer:
    counter = itertools.count(1)
    chat.default = lambda body: f"R{next(counter)}"
    return chat


def make_demo(expose: str) -> type[Agent]:
    class Demo(Agent):
        tools = []
        method_options = {"helper": {"expose": expose}}

        def step(self, x: str) -> str:
            """Inner step."""
            return x.upper()

        def helper(self, x: str) -> str:
            """The helper."""
            self.step(x)
            return llm(f"ask {x}")

        def main(self) -> str:
            """Main entry."""
            self.helper("a")
            return llm("final")

    return Demo


EXPECTED = {
    "full": (
        "# The helper.\n"
        'helper(x="a") -> "R1"\n'
        "  # Inner step.\n"
        '  step(x="a") -> "A"\n'
        "  user: ask a\n"
        "  assistant: R1"
    ),
    "io": 'helper -> "R1"',
    "llm": "user: ask a\nassistant: R1",
    "hidden": None,
}


@pytest.mark.parametrize("expose", ["full", "io", "llm", "hidden"])
def test_expose_values(
    expose: str, numbered: ChatServer, rt: Runtime, writer: SessionNodeWriter
) -> None:
    demo = make_demo(expose)(runtime=rt)
    with use_writer(writer):
        assert demo.main() == "R2"
    assert history_block(numbered.user_texts(-1)) == EXPECTED[expose]
    names = [n.name for n in writer.load_graph() if n.kind == "code"]
    if expose == "hidden":
        assert names == ["main"]
        # nothing inside the hidden call was written, not even its model request
        assert [n.kind for n in writer.load_graph()] == ["code", "llm"]
    else:
        assert names == ["main", "helper", "step"]


def test_inner_request_sees_its_callers_and_own_progress(
    numbered: ChatServer, rt: Runtime, writer: SessionNodeWriter
) -> None:
    demo = make_demo("io")(runtime=rt)
    with use_writer(writer):
        demo.main()
    # First request was made inside helper (expose io): a call sees its own internals.
    assert history_block(numbered.user_texts(0)) == (
        '# Main entry.\nmain() -> (running)\n  # Inner step.\n  step(x="a") -> "A"'
    )


def make_ranged(render_range: dict[str, Any] | None) -> type[Agent]:
    options = {"work": {"render_range": render_range}} if render_range is not None else {}

    class Ranged(Agent):
        tools = []
        method_options = options

        def work(self) -> str:
            """Do the work."""
            for i in (1, 2, 3):
                llm(f"sub {i}")
            return llm("final")

    return Ranged


CALLERS = [
    "user: before 1\nassistant: R1",
    "user: before 2\nassistant: R2",
    "user: before 3\nassistant: R3",
]
SUBCALLS = [
    "user: sub 1\nassistant: R4",
    "user: sub 2\nassistant: R5",
    "user: sub 3\nassistant: R6",
]


@pytest.mark.parametrize(
    ("render_range", "callers", "subcalls"),
    [
        (None, CALLERS, SUBCALLS),
        ({"callers": 0, "subcalls": 0}, [], []),
        ({"callers": 1, "subcalls": -1}, CALLERS[-1:], SUBCALLS),
        ({"callers": None, "subcalls": 1}, CALLERS, SUBCALLS[-1:]),
        ({"callers": 2, "subcalls": 2}, CALLERS[-2:], SUBCALLS[-2:]),
        ({"callers": 0, "subcalls": -1}, [], SUBCALLS),
    ],
)
def test_render_range(
    render_range: dict[str, Any] | None,
    callers: list[str],
    subcalls: list[str],
    numbered: ChatServer,
    rt: Runtime,
    writer: SessionNodeWriter,
) -> None:
    ranged = make_ranged(render_range)(runtime=rt)
    with use_writer(writer):
        for i in (1, 2, 3):
            llm(f"before {i}", runtime=rt, context=Context(history_filter=False))
        ranged.work()
    # the call's own node is not rendered, so what ran inside it is not indented
    expected = "\n".join([*callers, *subcalls]) or None
    assert history_block(numbered.user_texts(-1)) == expected
    node = next(n for n in writer.load_graph() if n.name == "work")
    if render_range is not None:
        assert node.metadata["render_range"] == render_range


def test_history_filter_values(
    numbered: ChatServer, rt: Runtime, writer: SessionNodeWriter
) -> None:
    seen: list[tuple[str, Any]] = []

    def only_code(node: Any, context: Context) -> bool:
        seen.append((node.kind, context))
        return node.kind == "code"

    class Filtered(Agent):
        tools = []

        def step(self) -> str:
            """A step."""
            return "s"

        def work(self, mode: Any) -> str:
            self.step()
            return llm("final", context=Context(history_filter=mode).derive())

    agent_ = Filtered(runtime=rt)
    with use_writer(writer):
        llm("outside", runtime=rt)
        agent_.work("dag")
        agent_.work("current_call")
        agent_.work(False)
        agent_.work(only_code)
    dag, current, off, filtered = (history_block(numbered.user_texts(i)) for i in (1, 2, 3, 4))
    assert dag == 'user: outside\nassistant: R1\n# A step.\nstep() -> "s"'
    assert current == '# A step.\nstep() -> "s"'
    assert off is None
    assert filtered is not None and "user:" not in filtered
    assert filtered.splitlines()[-1] == 'step() -> "s"'
    assert seen and all(isinstance(ctx, Context) for _, ctx in seen)


def test_history_filter_that_raises_fails_the_request(
    numbered: ChatServer, rt: Runtime, writer: SessionNodeWriter
) -> None:
    def broken(node: Any, context: Context) -> bool:
        raise ValueError("nope")

    with use_writer(writer):
        llm("first", runtime=rt)
        with pytest.raises(Exception, match="history_filter 'broken' failed on node"):
            llm("second", runtime=rt, context=Context(history_filter=broken))
    assert len(numbered.requests) == 1


def test_head_id_selects_a_branch(
    numbered: ChatServer, rt: Runtime, writer: SessionNodeWriter
) -> None:
    ctx = Context(store=writer)
    llm("one", runtime=rt, context=ctx)
    llm("two", runtime=rt, context=ctx)
    first = writer.load_graph()[0]
    branch = Context(store=writer, head_id=first.id)
    llm("three", runtime=rt, context=branch)
    assert history_block(numbered.user_texts(-1)) == "user: one\nassistant: R1"
    nodes = writer.load_graph()
    assert nodes[-1].predecessor_id == first.id


def test_tool_methods_default_to_io(
    numbered: ChatServer, rt: Runtime, writer: SessionNodeWriter
) -> None:
    class Tools(Agent):
        tools = []
        method_options = {"lookup": {"tool": True}}

        def lookup(self, key: str) -> str:
            """Look a key up."""
            return f"value of {key}"

        def run(self) -> str:
            self.lookup("k")
            return llm("final")

    with use_writer(writer):
        Tools(runtime=rt).run()
    assert history_block(numbered.user_texts(-1)) == 'lookup -> "value of k"'
    node = next(n for n in writer.load_graph() if n.name == "lookup")
    assert node.metadata["expose"] == "io"


def test_render_history_on_plain_nodes(writer: SessionNodeWriter) -> None:
    a = writer.append("code", "outer", input={"q": 1}, metadata={"expose": "full", "doc": "Outer."})
    writer.append("code", "inner", input={}, caller_id=a.id, status="completed", output=2)
    writer.update(a.id, status="error", output={"error": "ValueError: bad"})
    text = render_history(branch_nodes(writer.load_graph(), writer.head_id))
    assert text == "# Outer.\nouter(q=1) -> (error: ValueError: bad)\n  inner() -> 2"
