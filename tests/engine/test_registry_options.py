"""The tool registry: every registration option, schemas, dispatch errors."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import agent_server
import pytest
from agent_server import ChatServer, tool_call

from openprogram import Agent, agent
from openprogram.programs import (
    DEFAULT_MAX_RESULT_CHARS,
    REGISTRY,
    ToolError,
    approvals,
    channel,
    function,
    isolated_registry,
    resolve_tools,
    truncate_result,
)
from openprogram.runtime import Runtime
from openprogram.scope import use_writer
from openprogram.store import SessionNodeWriter

# fixtures shared by the Agent/llm/registry tests (tests/engine/agent_server.py)
_restore_registry = agent_server._restore_registry
chat = agent_server.chat
rt = agent_server.rt
store = agent_server.store
writer = agent_server.writer


def names(tools: list[Any]) -> list[str]:
    return [t.name for t in tools]


def run_tool(chat: ChatServer, rt: Runtime, name: str, args: dict[str, Any], **kw: Any) -> str:
    """Let the model call ``name`` once; returns the tool result it received."""
    chat.reply(tool_call(name, args), "done")
    agent("go", runtime=rt, **kw)
    return chat.tool_results()[-1]


def test_name_description_parameters_label() -> None:
    @function(
        name="lookup_v2",
        description="Look things up.",
        label="Lookup",
        parameters={"type": "object", "properties": {"k": {"type": "string"}}},
    )
    def lookup(key: str) -> str:
        """Original doc."""
        return key

    assert REGISTRY.get("lookup_v2") is lookup and "lookup" not in REGISTRY
    assert lookup.spec == {
        "name": "lookup_v2",
        "description": "Look things up.",
        "parameters": {"type": "object", "properties": {"k": {"type": "string"}}},
    }
    assert REGISTRY.describe()[0]["label"] == "Lookup"
    assert lookup("x") == "x"  # still a plain callable


def test_schema_from_signature_and_input_metadata() -> None:
    class Forms(Agent):
        method_options = {
            "search": {
                "tool": True,
                "input": {
                    "query": {"description": "What to look for", "placeholder": "bees"},
                    "mode": {"options": ["fast", "deep"]},
                    "secret": {"hidden": True},
                },
            }
        }

        def search(
            self,
            query: str,
            mode: str = "fast",
            limit: int = 3,
            secret: str = "",
            runtime: Any = None,
        ) -> str:
            """Search the notes.

            Args:
                limit: How many results.
            """
            return query

    spec = Forms().search.spec
    assert Forms.search.spec == spec
    assert spec["name"] == "search"
    assert spec["description"] == "Search the notes."
    assert spec["parameters"] == {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to look for"},
            "mode": {"type": "string", "default": "fast", "enum": ["fast", "deep"]},
            "limit": {"type": "integer", "default": 3, "description": "How many results."},
        },
        "required": ["query"],
        "additionalProperties": False,
    }
    assert REGISTRY.get("search") is not None


def test_toolset() -> None:
    @function(toolset=("files",))
    def read(path: str) -> str:
        return path

    @function(toolset="web")
    def fetch(url: str) -> str:
        return url

    assert names(resolve_tools(toolset="files")) == ["read"]
    assert names(resolve_tools(toolset=("files", "web"))) == ["fetch", "read"]
    assert names(resolve_tools()) == ["fetch", "read"]


def test_unsafe_in_hides_the_tool_for_that_channel(chat: ChatServer, rt: Runtime) -> None:
    @function(unsafe_in=("public_chat",))
    def delete_all() -> str:
        return "deleted"

    chat.reply("a", "b")
    with channel("public_chat"):
        agent("x", runtime=rt)
    with channel("cli"):
        agent("x", runtime=rt)
    assert "tools" not in chat.requests[0]
    assert chat.tool_names(1) == ["delete_all"]


def test_check_fn_blocks_a_call(chat: ChatServer, rt: Runtime) -> None:
    calls: list[str] = []

    @function(check_fn=lambda path: path.startswith("/tmp/"))
    def remove(path: str) -> str:
        calls.append(path)
        return "removed"

    assert run_tool(chat, rt, "remove", {"path": "/etc/passwd"}) == (
        "ToolError: tool 'remove' was blocked by its check_fn"
    )
    assert run_tool(chat, rt, "remove", {"path": "/tmp/x"}) == "removed"
    assert calls == ["/tmp/x"]


def test_requires_env(monkeypatch: pytest.MonkeyPatch) -> None:
    @function(requires_env=("WEATHER_KEY",))
    def weather(city: str) -> str:
        return "sunny"

    monkeypatch.delenv("WEATHER_KEY", raising=False)
    assert names(resolve_tools()) == []
    monkeypatch.setenv("WEATHER_KEY", "k")
    assert names(resolve_tools()) == ["weather"]


def test_can_use() -> None:
    allowed = {"on": False}

    @function(can_use=lambda: allowed["on"])
    def admin() -> str:
        return "ok"

    @function(can_use=lambda: 1 / 0)
    def broken_gate() -> str:
        return "ok"

    assert names(resolve_tools()) == []
    allowed["on"] = True
    assert names(resolve_tools()) == ["admin"]


def test_truncation_default_max_and_head_ratio(chat: ChatServer, rt: Runtime) -> None:
    @function
    def big() -> str:
        return "h" * 20_000 + "t" * 20_000

    @function(max_result_chars=100, head_ratio=0.2)
    def small() -> str:
        return "a" * 50 + "b" * 100 + "c" * 50

    out = run_tool(chat, rt, "big", {})
    assert DEFAULT_MAX_RESULT_CHARS == 30_000
    marker = "\n[... 10000 characters truncated ...]\n"
    assert out == "h" * 20_000 + "t" * 1_000 + marker + "t" * 9_000
    out = run_tool(chat, rt, "small", {})
    assert out == "a" * 20 + "\n[... 100 characters truncated ...]\n" + "b" * 30 + "c" * 50


def test_truncate_result_helper() -> None:
    assert truncate_result("abcdefghij", 4, 0.5) == "ab\n[... 6 characters truncated ...]\nij"
    assert truncate_result("short", 10, 0.7) == "short"


def test_persist_full(chat: ChatServer, rt: Runtime, tmp_path: Path) -> None:
    REGISTRY.persist_dir = tmp_path / "results"

    @function(max_result_chars=10, persist_full=True)
    def dump() -> str:
        return "x" * 100

    out = run_tool(chat, rt, "dump", {})
    saved = list((tmp_path / "results").iterdir())
    assert len(saved) == 1 and saved[0].read_text() == "x" * 100
    assert f"full result saved to {saved[0]}" in out


def test_persist_full_beside_a_postgresql_store_never_writes_its_url_as_a_folder(
    chat: ChatServer, rt: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``OPENPROGRAM_STORE=postgresql://user:password@host/db`` the full result was
    written under a folder named after the URL (``postgresql:/user:s3cret@.../tool_results``),
    its password on disk: the URL is no folder, so results go to ``.openprogram/``."""
    monkeypatch.setattr(REGISTRY, "persist_dir", None)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENPROGRAM_STORE", "postgresql://me:s3cret@127.0.0.1:1/runs")

    @function(max_result_chars=10, persist_full=True)
    def dump() -> str:
        return "y" * 100

    out = run_tool(chat, rt, "dump", {})
    saved = list((tmp_path / ".openprogram" / "tool_results").iterdir())
    assert len(saved) == 1 and saved[0].read_text() == "y" * 100, out
    assert not any("s3cret" in str(p) for p in tmp_path.rglob("*"))


def test_requires_approval(chat: ChatServer, rt: Runtime) -> None:
    ran: list[int] = []

    @function(requires_approval=True)
    def pay(amount: int) -> str:
        ran.append(amount)
        return "paid"

    @function(requires_approval=lambda amount: amount > 100)
    def tip(amount: int) -> str:
        ran.append(amount)
        return "tipped"

    denied = run_tool(chat, rt, "pay", {"amount": 5})
    assert "requires approval and was not approved" in denied
    asked: list[tuple[str, dict[str, Any]]] = []
    with approvals(lambda tool, args: asked.append((tool.name, args)) or True):
        assert run_tool(chat, rt, "pay", {"amount": 7}) == "paid"
    assert asked == [("pay", {"amount": 7})]
    assert run_tool(chat, rt, "tip", {"amount": 3}) == "tipped"
    assert "not approved" in run_tool(chat, rt, "tip", {"amount": 300})
    assert ran == [7, 3]


def test_cache_and_cache_ttl() -> None:
    calls: list[str] = []

    @function(cache=True, cache_ttl=10.0)
    def slow(q: str) -> str:
        calls.append(q)
        return f"result {len(calls)}"

    now = [100.0]
    slow.clock = lambda: now[0]
    assert slow.execute(q="a") == "result 1"
    assert slow.execute(q="a") == "result 1"
    assert slow.execute(q="b") == "result 2"
    now[0] += 9.9
    assert slow.execute(q="a") == "result 1"
    now[0] += 0.2  # past the TTL
    assert slow.execute(q="a") == "result 3"
    assert calls == ["a", "b", "a"]

    @function
    def uncached(q: str) -> str:
        calls.append(q)
        return "x"

    uncached.execute(q="z")
    uncached.execute(q="z")
    assert calls[-2:] == ["z", "z"]


def test_timeout_returns_an_error_result(
    chat: ChatServer, rt: Runtime, writer: SessionNodeWriter
) -> None:
    release = threading.Event()

    @function(timeout=0.2)
    def hang() -> str:
        release.wait(10)
        return "late"

    try:
        with use_writer(writer):
            out = run_tool(chat, rt, "hang", {})
    finally:
        release.set()
    assert (
        out == "ToolError: tool 'hang' timed out after 0.2 s (its timeout); the call was abandoned"
    )
    assert chat.requests[-1]["messages"][-1]["role"] == "tool"
    node = next(n for n in writer.load_graph() if n.name == "hang")
    assert node.status == "error"  # closed at once, not left running
    assert "timed out" in node.output["error"]


def test_available_if() -> None:
    @function(available_if=lambda: False)
    def nope() -> str:
        return "still callable"

    @function(available_if=lambda: 1 / 0)
    def broken() -> str:
        return "x"

    @function(available_if=lambda: True)
    def yes() -> str:
        return "x"

    assert REGISTRY.names() == ["yes"]
    assert nope() == "still callable"


def test_available_if_on_a_method_keeps_the_scope(writer: SessionNodeWriter) -> None:
    class Gated(Agent):
        method_options = {"act": {"tool": True, "available_if": lambda: False}}

        def act(self) -> str:
            return "acted"

    assert "act" not in REGISTRY
    with use_writer(writer):
        assert Gated().act() == "acted"
    assert [n.name for n in writer.load_graph()] == ["act"]


def test_defer(chat: ChatServer, rt: Runtime) -> None:
    @function(defer=True)
    def rare(x: int) -> int:
        """A rarely used tool."""
        return x * 3

    @function
    def common() -> str:
        return "c"

    assert names(resolve_tools()) == ["common", "deferred_tool"]
    chat.reply(
        tool_call("deferred_tool", {"name": "rare"}),
        tool_call("deferred_tool", {"name": "rare", "arguments": {"x": 4}}),
        "12",
    )
    assert agent("go", runtime=rt) == "12"
    assert chat.tool_names(0) == ["common", "deferred_tool"]
    schema_result, run_result = chat.tool_results(-1)
    assert '"name": "rare"' in schema_result and '"x"' in schema_result
    assert run_result == "12"


def test_register_globally_false(chat: ChatServer, rt: Runtime) -> None:
    @function(register_globally=False)
    def private(x: int) -> int:
        return x + 1

    assert "private" not in REGISTRY
    assert run_tool(chat, rt, "private", {"x": 1}, tools=[private]) == "2"


def test_tool_that_raises_and_bad_arguments(chat: ChatServer, rt: Runtime) -> None:
    @function
    def fragile(n: int) -> int:
        raise RuntimeError("disk full")

    assert run_tool(chat, rt, "fragile", {"n": 1}) == (
        "ToolError: tool 'fragile' failed: RuntimeError: disk full"
    )
    bad = run_tool(chat, rt, "fragile", {"n": "one"})
    assert "'n': Input should be a valid integer, got 'one'" in bad
    missing = run_tool(chat, rt, "fragile", {})
    assert "missing required 'n'" in missing
    with pytest.raises(ToolError, match="unknown 'm'"):
        fragile.execute(n=1, m=2)


def test_function_rejects_unknown_options() -> None:
    with pytest.raises(TypeError, match="unknown option 'timout'; did you mean 'timeout'"):
        function(timout=3)


def test_method_tools_dispatch_and_options(
    chat: ChatServer, rt: Runtime, writer: SessionNodeWriter
) -> None:
    release = threading.Event()

    class Notes(Agent):
        method_options = {
            "find": {"tool": True, "cache": True, "name": "find_note"},
            "stall": {"as_tool": True, "timeout": 0.2},
            "helper": {},
        }

        def __init__(self, prefix: str = "note", **kw: Any) -> None:
            super().__init__(**kw)
            self.prefix = prefix
            self.calls = 0

        def find(self, key: str) -> str:
            """Find a note."""
            self.calls += 1
            return f"{self.prefix}:{key}"

        def stall(self) -> str:
            release.wait(10)
            return "late"

        def helper(self) -> None:
            return None

    notes = Notes("memo")
    assert set(REGISTRY.names()) == {"find_note", "stall"}
    assert notes.find.spec["name"] == "find_note"
    assert notes.find.execute(key="a") == "memo:a"
    chat.reply(tool_call("find_note", {"key": "b"}), tool_call("find_note", {"key": "b"}), "ok")
    with use_writer(writer):
        agent("go", runtime=rt)
    assert chat.tool_results(-1) == ["memo:b", "memo:b"]
    assert notes.calls == 2  # one call for "a", one cached for "b"
    node = [n for n in writer.load_graph() if n.kind == "code"]
    assert [(n.name, n.metadata["expose"]) for n in node] == [("find", "io")]
    try:
        out = run_tool(chat, rt, "stall", {})
    finally:
        release.set()
    assert "timed out after 0.2 s" in out


def test_isolated_registry_restores() -> None:
    with isolated_registry():

        @function
        def temp() -> str:
            return "t"

        assert "temp" in REGISTRY
    assert "temp" not in REGISTRY


def test_a_hand_written_schema_still_checks_unannotated_parameters(
    chat: ChatServer, rt: Runtime
) -> None:
    """With no annotation to convert by, a parameter's JSON type comes from the
    ``parameters`` schema the tool was registered with (a bool is not an integer)."""

    @function(
        parameters={
            "type": "object",
            "properties": {"key": {"type": "string"}, "n": {"type": "integer"}},
            "required": ["key"],
        }
    )
    def lookup(key, n=1):  # type: ignore[no-untyped-def]  # as a user writes it
        """Look a key up."""
        return f"{key}x{n}"

    assert run_tool(chat, rt, "lookup", {"key": "a", "n": 2}) == "ax2"
    bad = run_tool(chat, rt, "lookup", {"key": 3, "n": True})
    assert "'key' must be string, got int" in bad and "'n' must be integer, got bool" in bad
