"""Tools offered to and served for a model, from the user's side, through real HTTP servers
on 127.0.0.1 speaking the OpenAI and Anthropic wire formats.

1. A ``tool=True`` method over its ``timeout``: its node stayed ``running`` and was later
   recorded ``completed`` with the late result. Now it is closed as ``error`` at once, like
   a plain tool's, and the late result never overwrites it.
2. A positional-only parameter (``def f(a, /, b)``) was offered but the call passed it by
   keyword and failed.
3. A default of ``float("inf")`` went into the schema, and the request failed to encode
   without naming the tool. A default JSON cannot carry is left out, like any other.
4. A Google-style continuation line looking like ``word: text`` was read as a parameter.
5. A gate annotating its parameter with a model/dataclass got the JSON dict.
6. Inside Agent B's call a registered ``tool=True`` method of an unrelated class A is
   offered like any registered tool; it is served by the innermost A whose call is running,
   else the A built last that still exists, else a new default A.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from loopback import LoopbackServer, runtime_for
from pydantic import BaseModel

from openprogram import Agent, Context, agent
from openprogram.errors import ConfigError
from openprogram.programs import ToolError, function, isolated_registry
from openprogram.runtime import RetryPolicy, Runtime
from openprogram.store import SessionNodeWriter, SessionStore


@pytest.fixture(autouse=True)
def _registry() -> Iterator[None]:
    with isolated_registry():
        yield


@pytest.fixture
def writer(tmp_path: Path) -> Iterator[SessionNodeWriter]:
    store = SessionStore(root_path=tmp_path / "store")
    store.create_session("s1", agent_id="test")
    yield SessionNodeWriter(store, "s1")
    store.close()


def runtime(server: LoopbackServer) -> Runtime:
    return runtime_for(server, retry=RetryPolicy(max_retries=0))


def offered(server: LoopbackServer, i: int = 0) -> dict[str, dict[str, Any]]:
    """Name -> parameters schema of the tools offered in request ``i``."""
    out = {}
    for t in server.requests[i].json.get("tools", []):
        spec = t.get("function", t)
        out[spec["name"]] = spec.get("parameters") or spec.get("input_schema")
    return out


def tool_results(server: LoopbackServer, i: int) -> list[str]:
    """The tool results of the model's last turn, sent back in request ``i``."""
    messages = server.requests[i].json["messages"]
    if server.wire == "openai":
        last = next(m for m in reversed(messages) if m["role"] == "assistant")
        ids = {c["id"] for c in last["tool_calls"]}
        return [str(m["content"]) for m in messages if m.get("tool_call_id") in ids]
    out = []
    for block in messages[-1]["content"]:
        content: Any = block["content"]
        out.append(content if isinstance(content, str) else json.dumps(content))
    return out


# ------------------------------------------------------------------ 1. method timeout


def test_a_timed_out_method_tool_ends_as_error_and_stays_so(
    server: LoopbackServer, writer: SessionNodeWriter
) -> None:
    release = threading.Event()

    class Slow(Agent):
        method_options = {"stall": {"tool": True, "timeout": 0.2}}

        def stall(self) -> str:
            """Take too long."""
            release.wait(10)
            return "late"

    server.reply_tool_calls([("c1", "stall", {})])
    server.reply_text("gave up")
    try:
        with runtime(server) as rt:
            assert Slow(runtime=rt, context=Context(store=writer))("go") == "gave up"
    finally:
        release.set()
    for worker in threading.enumerate():  # let the abandoned call finish
        if worker.name == "tool-stall":
            worker.join(10)
    (result,) = tool_results(server, 1)
    assert "tool 'stall' timed out after 0.2 s (its timeout)" in result
    (node,) = [n for n in writer.load_graph() if n.name == "stall"]
    assert node.status == "error"
    assert "timed out" in node.output["error"]
    assert "late" not in json.dumps(node.output)


# ------------------------------------------------------------------ 2. positional-only


def test_positional_only_parameters_are_passed_by_position(server: LoopbackServer) -> None:
    @function
    def scale(value: float, /, factor: float = 2.0) -> str:
        """Scale a value."""
        return f"scaled {value * factor:g}"

    def join(a: str, b: str, /, sep: str = "-") -> str:
        """Join two words."""
        return f"{a}{sep}{b}"

    class Geometry(Agent):
        method_options = {"area": {"tool": True}}

        def area(self, w: int, /, h: int) -> str:
            """Area of a rectangle."""
            return f"area {w * h}"

    server.reply_tool_calls(
        [
            ("c1", "scale", {"value": 3, "factor": 3}),
            ("c2", "join", {"a": "x", "b": "y"}),
            ("c3", "area", {"w": 2, "h": 5}),
        ]
    )
    server.reply_text("done")
    with runtime(server) as rt:
        geometry = Geometry(runtime=rt)
        tools = [scale, join, geometry.area]
        assert geometry("go", tools=tools) == "done"
    assert set(offered(server, 0)["join"]["required"]) == {"a", "b"}
    assert tool_results(server, 1) == ["scaled 9", "x-y", "area 10"]


# ------------------------------------------------------------------ 3. non-finite default


def test_a_default_json_cannot_carry_is_left_out_of_the_schema(server: LoopbackServer) -> None:
    @function
    def top(n: float = float("inf"), cut: float = float("nan"), k: int = 3) -> str:
        """Top items."""
        return f"top {n} {k}"

    def plain(limit: float = float("-inf")) -> str:
        """A plain tool."""
        return f"limit {limit}"

    server.reply_tool_calls([("c1", "top", {}), ("c2", "plain", {})])
    server.reply_text("done")
    with runtime(server) as rt:
        assert agent("go", tools=[top, plain], runtime=rt) == "done"
    schemas = offered(server, 0)
    assert schemas["top"]["properties"] == {
        "n": {"type": "number"},
        "cut": {"type": "number"},
        "k": {"type": "integer", "default": 3},
    }
    assert "required" not in schemas["top"]
    assert schemas["plain"]["properties"] == {"limit": {"type": "number"}}
    assert tool_results(server, 1) == ["top inf 3", "limit -inf"]


def test_a_written_schema_with_inf_is_an_error_naming_the_tool() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "number", "maximum": float("inf")}}}
    with pytest.raises(ConfigError) as err:

        @function(parameters=schema)
        def capped(n: float) -> str:
            return str(n)

    assert str(err.value) == (
        "tool 'capped': parameters['properties']['n']['maximum'] is not a JSON number (inf "
        "and nan cannot be sent to a model); use a finite value or leave it out"
    )


# ------------------------------------------------------------------ 4. docstrings


def test_docstring_continuation_lines_belong_to_their_parameter(server: LoopbackServer) -> None:
    @function
    def read(path: str, mode: str = "r", encoding: str = "utf-8") -> str:
        """Read a file.

        Args:
            path: The file to read. Relative paths
                note: are resolved against the working directory.
            mode (str): Open mode.
                Default: r
            encoding: Text encoding.
        """
        return path

    def write(path: str, text: str) -> str:
        """Write a file.

        :param path: The file to write,
            created when missing.
        :param text: What to write.
        """
        return path

    server.reply_text("done")
    with runtime(server) as rt:
        assert agent("go", tools=[read, write], runtime=rt) == "done"
    schemas = offered(server, 0)
    props = schemas["read"]["properties"]
    assert set(props) == {"path", "mode", "encoding"}
    assert props["path"]["description"] == (
        "The file to read. Relative paths note: are resolved against the working directory."
    )
    assert props["mode"]["description"] == "Open mode. Default: r"
    assert props["encoding"]["description"] == "Text encoding."
    assert schemas["write"]["properties"]["path"]["description"] == (
        "The file to write, created when missing."
    )
    assert schemas["write"]["properties"]["text"]["description"] == "What to write."


# ------------------------------------------------------------------ 5. typed gates


class Order(BaseModel):
    item: str
    amount: int


@dataclasses.dataclass
class Address:
    city: str


def test_gates_get_their_annotated_types(server: LoopbackServer) -> None:
    seen: list[Any] = []

    def small(order: Order) -> bool:
        seen.append(order)
        return order.amount < 100

    def abroad(to: Address, order) -> bool:  # type: ignore[no-untyped-def]
        seen.append((to, order))
        return to.city != "Oslo"  # approval needed for other cities

    @function(check_fn=small, requires_approval=abroad)
    def buy(order: Order, to: Address) -> str:
        """Buy something."""
        return f"bought {order.item} for {to.city}"

    args = {"order": {"item": "tea", "amount": 5}, "to": {"city": "Oslo"}}
    server.reply_tool_calls([("c1", "buy", args)])
    server.reply_tool_calls([("c2", "buy", {**args, "order": {"item": "car", "amount": 500}})])
    server.reply_text("done")
    with runtime(server) as rt:
        assert agent("go", tools=["buy"], runtime=rt) == "done"
    assert tool_results(server, 1) == ["bought tea for Oslo"]
    (blocked,) = tool_results(server, 2)
    assert "blocked by its check_fn" in blocked
    assert seen[0] == (Address("Oslo"), {"item": "tea", "amount": 5})  # unannotated: as sent
    assert seen[1] == Order(item="tea", amount=5)
    assert seen[-1] == Order(item="car", amount=500)


def test_a_gate_annotation_the_argument_does_not_fit_blocks_the_call() -> None:
    def named(order: str) -> bool:
        return True

    @function(check_fn=named)
    def buy(order: Order) -> str:
        """Buy something."""
        return order.item

    with pytest.raises(ToolError) as err:
        buy.execute(order={"item": "tea", "amount": 5})
    assert str(err.value).startswith(
        "tool 'buy' was blocked: its check_fn named does not fit the tool's arguments: "
        "bad arguments for tool 'buy': 'order': Input should be a valid string"
    )


# ------------------------------------------------------------------ 6. another Agent's tool


def test_another_agents_tool_is_served_by_a_living_instance_of_it(
    server: LoopbackServer,
) -> None:
    class Library(Agent):
        method_options = {"search": {"tool": True}}

        def __init__(self, shelf: str = "default", **kw: Any) -> None:
            super().__init__(**kw)
            self.shelf = shelf

        def search(self, q: str) -> str:
            """Search the library."""
            return f"{self.shelf}: {q}"

    class Desk(Agent):
        def ask(self, question: str) -> str:
            return self(question)

    with runtime(server) as rt:
        kept = Library("kept")
        Library("dropped")  # built later, gone at once: must not mean a new default one
        gc.collect()
        server.reply_tool_calls([("c1", "search", {"q": "maps"})])
        server.reply_text("done")
        assert Desk(runtime=rt).ask("find maps") == "done"
        assert "search" in offered(server, 0)  # a registered tool, offered like any other
        assert tool_results(server, 1) == ["kept: maps"]
        del kept
        gc.collect()
        server.reply_tool_calls([("c2", "search", {"q": "maps"})])
        server.reply_text("done")
        assert Desk(runtime=rt).ask("find maps") == "done"
        assert tool_results(server, 3) == ["default: maps"]
