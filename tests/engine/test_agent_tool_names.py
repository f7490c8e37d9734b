"""Two Agent classes with a ``tool=True`` method of the same name, through real HTTP servers
on 127.0.0.1 speaking the OpenAI and Anthropic wire formats, from the user's side.

The registry kept one tool per name, so the class defined last replaced the other: inside
``A()("go")`` the model was offered B's ``search`` and the call ran ``B.search`` on a B
built for it, never A's own method. Now an Agent's call offers and serves its own
``tool=True`` methods (bound to the instance called), and elsewhere a name shared by two
unrelated classes is an error naming both. Also ``Agent(max_iterations=0)`` ran with 20
instead of raising like ``agent(max_iterations=0)``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from loopback import LoopbackServer, runtime_for

from openprogram import Agent, agent
from openprogram.errors import ConfigError
from openprogram.programs import isolated_registry
from openprogram.runtime import RetryPolicy, Runtime


@pytest.fixture(autouse=True)
def _registry() -> Iterator[None]:
    with isolated_registry():
        yield


def runtime(server: LoopbackServer) -> Runtime:
    return runtime_for(server, retry=RetryPolicy(max_retries=0))


def offered(server: LoopbackServer, i: int = 0) -> dict[str, str]:
    """Name -> description of the tools offered in request ``i``."""
    out = {}
    for t in server.requests[i].json.get("tools", []):
        spec = t.get("function", t)
        out[spec["name"]] = spec["description"]
    return out


def tool_result(server: LoopbackServer, i: int) -> str:
    last = server.requests[i].json["messages"][-1]
    if last["role"] == "tool":  # OpenAI
        return str(last["content"])
    content: Any = last["content"][0]["content"]  # Anthropic tool_result
    return content if isinstance(content, str) else json.dumps(content)


def define_agents() -> tuple[type[Agent], type[Agent]]:
    class Library(Agent):
        method_options = {"search": {"tool": True}}

        def __init__(self, shelf: str, **kw: Any) -> None:
            super().__init__(**kw)
            self.shelf = shelf

        def search(self, q: str) -> str:
            """Search the library shelf."""
            return f"library {self.shelf}: {q}"

    class Web(Agent):
        method_options = {"search": {"tool": True}}

        def search(self, q: str) -> str:
            """Search the web."""
            return f"web: {q}"

    return Library, Web


def test_each_agent_offers_and_serves_its_own_tool_of_a_shared_name(
    server: LoopbackServer,
) -> None:
    Library, Web = define_agents()
    with runtime(server) as rt:
        first = Library("first", runtime=rt)
        Library("second", runtime=rt)  # built later: must not serve first's call
        server.reply_tool_calls([("c1", "search", {"q": "cats"})])
        server.reply_text("done")
        assert first("find cats") == "done"
        server.reply_tool_calls([("c2", "search", {"q": "dogs"})])
        server.reply_text("done")
        assert Web(runtime=rt)("find dogs") == "done"
    assert offered(server, 0) == {"search": "Search the library shelf."}
    assert tool_result(server, 1) == "library first: cats"
    assert offered(server, 2) == {"search": "Search the web."}
    assert tool_result(server, 3) == "web: dogs"


def test_agent_method_calling_agent_offers_its_own_tool(server: LoopbackServer) -> None:
    Library, _web = define_agents()

    class Desk(Library):  # type: ignore[misc, valid-type]
        def ask(self, question: str) -> str:
            return agent(question)

    class Catalog(Agent):  # registered last under the same name
        method_options = {"search": {"tool": True}}

        def search(self, q: str) -> str:
            """Search the catalog."""
            return f"catalog: {q}"

    with runtime(server) as rt:
        server.reply_tool_calls([("c1", "search", {"q": "maps"})])
        server.reply_text("done")
        assert Desk("east", runtime=rt).ask("find maps") == "done"
    assert offered(server, 0) == {"search": "Search the library shelf."}
    assert tool_result(server, 1) == "library east: maps"


@pytest.mark.parametrize("tools", [None, ["search"]])
def test_a_shared_name_outside_both_agents_is_an_error_naming_both(
    server: LoopbackServer, tools: list[str] | None
) -> None:
    define_agents()
    with runtime(server) as rt, pytest.raises(ConfigError) as err:
        agent("find cats", tools=tools, runtime=rt)
    message = str(err.value)
    assert "'search' is ambiguous" in message
    assert "Library" in message and "Web" in message
    assert server.requests == []


def test_a_subclass_overriding_a_tool_is_not_ambiguous(server: LoopbackServer) -> None:
    class Shelf(Agent):
        method_options = {"search": {"tool": True}}

        def search(self, q: str) -> str:
            """Search the shelf."""
            return f"shelf: {q}"

    class Archive(Shelf):
        def search(self, q: str) -> str:
            """Search the archive."""
            return f"archive: {q}"

    with runtime(server) as rt:
        server.reply_text("done")
        assert agent("find", tools=["search"], runtime=rt) == "done"
    assert offered(server, 0) == {"search": "Search the archive."}


def test_agent_max_iterations_zero_is_refused_like_agent(server: LoopbackServer) -> None:
    with runtime(server) as rt:
        with pytest.raises(ValueError, match="max_iterations must be >= 1, got 0"):
            Agent(runtime=rt, max_iterations=0)("x", tools=[])
        with pytest.raises(ValueError, match="max_iterations must be >= 1, got 0"):
            agent("x", tools=[], runtime=rt, max_iterations=0)
    assert server.requests == []
