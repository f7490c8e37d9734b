"""The scripted: test double (scripted replies, a function seeing the request, block, echo)."""

from __future__ import annotations

import pytest

from openprogram.decision import DECISION_FINISH_INSTRUCTION
from openprogram.errors import ConfigError
from openprogram.runtime import (
    BlockedRequestError,
    ModelRequest,
    ModelResponse,
    Runtime,
    ScriptedProvider,
    ScriptExhausted,
    ToolCall,
)


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def test_replies_in_order_and_requests_are_kept() -> None:
    provider = ScriptedProvider(
        replies=[
            {"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]},
            ModelResponse(text="five"),
        ]
    )
    with Runtime(provider=provider) as rt:
        assert rt.exec("2+3?", tools=[add]) == "five"
    first, second = provider.requests
    assert [t.name for t in first.tools] == ["add"]
    assert second.messages[-1].role == "tool" and second.messages[-1].content == "5"
    assert second.messages[-1].tool_call_id == "call_1_1"
    assert provider.remaining == 0


def test_running_out_of_replies_is_a_clear_error() -> None:
    provider = ScriptedProvider(replies=["only one"])
    with Runtime(provider=provider) as rt:
        assert rt.exec("a") == "only one"
        with pytest.raises(
            ScriptExhausted, match=r"no scripted reply left for request #2 \(1 reply was scripted\)"
        ):
            rt.exec("b")


def test_function_sees_request_tools_and_choices() -> None:
    seen: list[ModelRequest] = []

    def model(request: ModelRequest) -> str:
        seen.append(request)
        pick = "b" if len(request.tools) == 1 and request.system == "S" else "a"
        return f'```json\n{{"call": "{pick}"}}\n```'

    with Runtime(provider=ScriptedProvider(function=model), system="S") as rt:
        chosen = rt.exec("pick", tools=[add], choices={"a": "first", "b": "second"})
    assert chosen == "second"  # exec(choices=) resolves the decision
    assert seen[0].choices == {"a": "first", "b": "second"}
    prompt = seen[0].messages[0].content
    assert isinstance(prompt, str) and prompt.startswith("pick\n\n")
    assert DECISION_FINISH_INSTRUCTION in prompt and "b" in prompt


async def test_async_function_and_async_exec() -> None:
    async def model(request: ModelRequest) -> ModelResponse:
        if len(request.messages) == 1:
            return ModelResponse(text="", tool_calls=[ToolCall("t1", "add", {"a": 1, "b": 1})])
        return ModelResponse(text=f"got {request.messages[-1].content}")

    async with Runtime(provider=ScriptedProvider(function=model)) as rt:
        assert await rt.aexec("1+1", tools=[add]) == "got 2"


def test_block_mode_raises_on_every_request() -> None:
    with Runtime("scripted:block") as rt:
        with pytest.raises(BlockedRequestError, match=r"must make no model requests.*'hello'"):
            rt.exec("hello")
    blocked = ScriptedProvider.block()
    with Runtime(provider=blocked) as rt, pytest.raises(BlockedRequestError):
        rt.exec("again")
    assert len(blocked.requests) == 1


def test_echo_mode_and_usage_estimate() -> None:
    with Runtime("scripted:echo") as rt:
        result = rt.exec_full("three little words")
    assert result.text == "three little words"
    assert (result.usage.input_tokens, result.usage.output_tokens) == (3, 3)


def test_exception_reply_is_raised() -> None:
    with Runtime(provider=ScriptedProvider(replies=[TimeoutError("slow model")])) as rt:
        with pytest.raises(TimeoutError, match="slow model"):
            rt.exec("x")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "exactly one of"),
        ({"replies": [], "mode": "echo"}, "exactly one of"),
        ({"mode": "loud"}, "unknown scripted mode 'loud'"),
    ],
)
def test_bad_construction(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ScriptedProvider(**kwargs)  # type: ignore[arg-type]


def test_unknown_scripted_model_string_lists_modes() -> None:
    with pytest.raises(ConfigError, match="'scripted:echo', 'scripted:block'"):
        Runtime("scripted:nope")


def test_bad_reply_shapes_are_clear() -> None:
    with Runtime(provider=ScriptedProvider(replies=[{"txt": "typo"}])) as rt:
        with pytest.raises(ConfigError, match=r"unknown keys \['txt'\]"):
            rt.exec("x")
    with Runtime(provider=ScriptedProvider(replies=[42])) as rt:  # type: ignore[list-item]
        with pytest.raises(ConfigError, match="is a int"):
            rt.exec("x")
