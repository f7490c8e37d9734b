"""Runtime.exec: the tool loop, recording into a session, options and bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from openprogram.errors import ConfigError
from openprogram.programs.function_tools import as_tool, parse_docstring, tool_spec
from openprogram.runtime import (
    MaxIterationsExceeded,
    ModelRequest,
    Runtime,
    ScriptedProvider,
    ToolSpec,
    parse_model_string,
)
from openprogram.scope import call_scope, use_writer
from openprogram.store import SessionNodeWriter, SessionStore


def loop_forever(request: ModelRequest) -> dict[str, Any]:
    return {"tool_calls": [{"name": "noop", "arguments": {}}]}


def noop() -> str:
    """Does nothing."""
    return "ok"


def test_max_iterations_exceeded_is_clear() -> None:
    provider = ScriptedProvider(function=loop_forever)
    with Runtime(provider=provider) as rt:
        with pytest.raises(
            MaxIterationsExceeded, match=r"still requested tools \(noop\) after max_iterations=3"
        ):
            rt.exec("go", tools=[noop], max_iterations=3)
    assert len(provider.requests) == 3


def test_runtime_parameter_is_injected_and_hidden_from_schema() -> None:
    seen: list[Any] = []

    def probe(x: int, runtime: Any = None) -> int:
        """Probe."""
        seen.append(runtime)
        return x * 2

    spec = as_tool(probe).spec
    assert list(spec.parameters["properties"]) == ["x"]
    provider = ScriptedProvider(
        replies=[{"tool_calls": [{"name": "probe", "arguments": {"x": 4}}]}, "done"]
    )
    with Runtime(provider=provider) as rt:
        assert rt.exec("x", tools=[probe]) == "done"
    assert seen == [rt]
    assert provider.requests[1].messages[-1].content == "8"


def test_bad_tool_arguments_are_fed_back() -> None:
    provider = ScriptedProvider(
        replies=[{"tool_calls": [{"name": "noop", "arguments": {"extra": 1}}]}, "ok"]
    )
    with Runtime(provider=provider) as rt:
        result = rt.exec_full("x", tools=[noop])
    assert result.tool_calls[0].is_error
    assert "unknown 'extra'" in result.tool_calls[0].result


class SpecTool:
    """A registry-style tool: a ``spec`` dict and ``execute(**kwargs)``."""

    spec = {
        "name": "shout",
        "description": "Upper-case text.",
        "parameters": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
    }

    def execute(self, **kwargs: Any) -> str:
        return str(kwargs["text"]).upper()


def test_duck_typed_tool_objects_plug_in() -> None:
    provider = ScriptedProvider(
        replies=[{"tool_calls": [{"name": "shout", "arguments": {"text": "hi"}}]}, "done"]
    )
    with Runtime(provider=provider) as rt:
        result = rt.exec_full("x", toolset=[SpecTool()])
    assert result.tool_calls[0].result == "HI"
    assert provider.requests[0].tools == [
        ToolSpec("shout", "Upper-case text.", SpecTool.spec["parameters"])  # type: ignore[arg-type]
    ]


def test_duplicate_tool_names_and_non_tools_are_rejected() -> None:
    with Runtime("scripted:echo") as rt:
        with pytest.raises(ConfigError, match="two tools are named 'noop'"):
            rt.exec("x", tools=[noop, noop])
        with pytest.raises(ConfigError, match="is not a tool"):
            rt.exec("x", tools=[42])


def test_tool_spec_from_signature_and_docstring() -> None:
    def search(
        query: str,
        limit: int = 10,
        mode: Literal["fast", "deep"] = "fast",
        tags: list[str] | None = None,
        exec_runtime: Any = None,
    ) -> list[str]:
        """Search the notes.

        Longer explanation that is not part of the description.

        Args:
            query: What to look for.
            limit: Maximum results,
                counted after filtering.
        """
        return []

    spec = tool_spec(search)
    assert spec.name == "search" and spec.description == "Search the notes."
    assert spec.parameters == {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to look for."},
            "limit": {
                "type": "integer",
                "description": "Maximum results, counted after filtering.",
                "default": 10,
            },
            "mode": {"enum": ["fast", "deep"], "default": "fast"},
            "tags": {"type": ["array", "null"], "items": {"type": "string"}, "default": None},
        },
        "required": ["query"],
        "additionalProperties": False,
    }
    assert parse_docstring(":param x: the x\n")[1] == {"x": "the x"}
    with pytest.raises(ConfigError, match="not valid"):
        tool_spec(lambda: None)


class Answer(BaseModel):
    value: int


def test_response_format_forms_are_normalized() -> None:
    provider = ScriptedProvider(replies=['{"value": 1}'] * 3)
    schema = {"type": "object", "properties": {"v": {"type": "integer"}}}
    with Runtime(provider=provider) as rt:
        rt.exec("a", response_format=Answer)
        rt.exec("b", response_format=schema)
        rt.exec("c", response_format={"type": "json_object"})
    formats = [r.response_format for r in provider.requests]
    assert formats[0] is not None and formats[0]["json_schema"]["name"] == "Answer"
    assert formats[0]["json_schema"]["schema"]["required"] == ["value"]
    assert formats[1] == {
        "type": "json_schema",
        "json_schema": {"name": "response", "schema": schema},
    }
    assert formats[2] == {"type": "json_object"}
    with (
        Runtime(provider=provider) as rt,
        pytest.raises(ConfigError, match="response_format must be"),
    ):
        rt.exec("d", response_format=42)


def test_system_precedence_call_then_scope_then_runtime() -> None:
    provider = ScriptedProvider(function=lambda r: str(r.system))
    with Runtime(provider=provider, system="runtime") as rt:
        assert rt.exec("x") == "runtime"
        with call_scope("method", options={"system": "scope"}):
            assert rt.exec("x") == "scope"
            assert rt.exec("x", system="call") == "call"


def test_model_override_per_call() -> None:
    provider = ScriptedProvider(function=lambda r: r.model_id)
    with Runtime("scripted:echo", provider=provider) as rt:
        assert rt.exec("x") == "echo"
        assert rt.exec("x", model="bigger") == "bigger"
        assert rt.exec("x", model="scripted:echo") == "echo"
    with Runtime("scripted:echo") as rt:
        assert rt.exec("hello", model="scripted:echo") == "hello"
        with pytest.raises(Exception, match="must make no model requests"):
            rt.exec("x", model="scripted:block")


def test_llm_nodes_are_recorded_with_usage(tmp_path: Path) -> None:
    provider = ScriptedProvider(
        replies=[
            {
                "tool_calls": [{"name": "noop", "arguments": {}}],
                "usage": {"input_tokens": 5, "output_tokens": 2},
            },
            {"text": "fin", "usage": {"input_tokens": 9, "output_tokens": 1}},
        ]
    )
    with SessionStore(tmp_path) as store:
        sid = store.create_session("s1")
        with use_writer(SessionNodeWriter(store, sid)), Runtime(provider=provider) as rt:
            with call_scope("main", inputs={"q": 1}):
                rt.exec("go", tools=[noop])
        nodes = store.list_nodes(sid)
    kinds = [(n.kind, n.status) for n in nodes]
    assert kinds == [("code", "completed"), ("llm", "completed"), ("llm", "completed")]
    first, second = nodes[1], nodes[2]
    assert first.caller_id == nodes[0].id
    assert first.metadata["usage"] == {"input_tokens": 5, "output_tokens": 2}
    assert second.metadata["usage"] == {"input_tokens": 9, "output_tokens": 1}
    assert first.input["provider"] == "scripted" and first.input["tools"][0]["name"] == "noop"
    assert second.input["messages"][-1]["role"] == "tool"
    assert second.output["text"] == "fin"


def test_failed_request_is_recorded_as_error_node(tmp_path: Path) -> None:
    with SessionStore(tmp_path) as store:
        sid = store.create_session("s2")
        with use_writer(SessionNodeWriter(store, sid)), Runtime("scripted:block") as rt:
            with pytest.raises(Exception, match="no model requests"):
                rt.exec("x")
        [node] = store.list_nodes(sid)
    assert node.kind == "llm" and node.status == "error"
    assert node.metadata["error_type"] == "BlockedRequestError"


def test_closed_runtime_and_bad_content() -> None:
    rt = Runtime("scripted:echo")
    with pytest.raises(TypeError, match="content must be a string"):
        rt.exec(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_iterations must be >= 1"):
        rt.exec("x", max_iterations=0)
    rt.close()
    with pytest.raises(ConfigError, match="is closed"):
        rt.exec("x")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("gpt-4.1", "malformed model string 'gpt-4.1': expected 'provider:model_id'"),
        ("", "malformed model string"),
        (
            "azure:gpt",
            "unknown provider 'azure'.*valid prefixes: anthropic:, openai:, replay:, scripted:",
        ),
        ("openai:", "the model id after 'openai:' is empty"),
        (":x", "malformed"),
    ],
)
def test_malformed_model_strings(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_model_string(text)
    with pytest.raises(ConfigError, match=message):
        Runtime(text)


def test_model_string_parts() -> None:
    parsed = parse_model_string(" OpenAI:llama3.1:8b ")
    assert (parsed.provider, parsed.model_id, str(parsed)) == (
        "openai",
        "llama3.1:8b",
        "openai:llama3.1:8b",
    )


@pytest.mark.parametrize(
    "url", ["api.openai.com/v1", "ftp://host/v1", "http://", "http://host:99999/v1"]
)
def test_bad_base_url_is_config_error(url: str) -> None:
    with pytest.raises(ConfigError, match="invalid base_url"):
        Runtime("openai:gpt", base_url=url, api_key="k")


def test_bad_base_url_from_env_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "localhost:8080")
    with pytest.raises(ConfigError, match="invalid ANTHROPIC_BASE_URL 'localhost:8080'"):
        Runtime("anthropic:claude", api_key="k")


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_missing_key_names_the_variable(wire: str, monkeypatch: pytest.MonkeyPatch) -> None:
    var = f"{wire.upper()}_API_KEY"
    monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv(f"{wire.upper()}_BASE_URL", raising=False)
    with pytest.raises(ConfigError, match=f"{var} is not set: export {var}="):
        Runtime(f"{wire}:m")


def test_tool_result_formatting() -> None:
    def data() -> dict[str, Any]:
        """Some data."""
        return {"a": [1, 2], "b": None}

    provider = ScriptedProvider(replies=[{"tool_calls": [{"name": "data"}]}, "ok"])
    with Runtime(provider=provider) as rt:
        rt.exec("x", tools=[data])
    assert json.loads(str(provider.requests[1].messages[-1].content)) == {"a": [1, 2], "b": None}


def test_history_is_sent_before_the_new_message() -> None:
    from openprogram.runtime import Message

    provider = ScriptedProvider(replies=["ok"])
    history = [Message(role="user", content="earlier"), Message(role="assistant", content="reply")]
    with Runtime(provider=provider) as rt:
        rt.exec("now", history=history)
    assert [(m.role, m.content) for m in provider.requests[0].messages] == [
        ("user", "earlier"),
        ("assistant", "reply"),
        ("user", "now"),
    ]


def test_toolset_names_are_resolved_by_the_registry_before_any_agent_call() -> None:
    """Issue 11 item 5: ``Runtime.exec(toolset=...)`` needs no earlier agent()/llm() call,
    and an unknown toolset name is an error naming the known ones."""
    from openprogram.programs import function
    from openprogram.programs.registry import isolated_registry

    with isolated_registry():

        @function(toolset="basics")
        def shout(text: str) -> str:
            """Upper-case text."""
            return text.upper()

        provider = ScriptedProvider(
            replies=[{"tool_calls": [{"name": "shout", "arguments": {"text": "hi"}}]}, "ok"]
        )
        with Runtime(provider=provider) as rt:
            result = rt.exec_full("x", toolset="basics")
            with pytest.raises(ConfigError, match=r"unknown toolset 'no-such'.*basics"):
                rt.exec("x", toolset="no-such")
    assert [t.name for t in provider.requests[0].tools] == ["shout"]
    assert result.tool_calls[0].result == "HI"
