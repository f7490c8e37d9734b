"""Tool parameters typed as pydantic models, Enums and dataclasses, on both wire formats.

A model's arguments are converted to the annotated types before the call, by one rule
for plain function tools and ``@function`` tools alike; a bad value comes back to the
model as an error result naming the parameter. The schema sent resolves every ``$ref``
from its root, and a registered tool's result is formatted as a plain tool's is.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

import pydantic
from loopback import LoopbackServer, RecordedSleeps, runtime_for

from openprogram import agent
from openprogram.programs import function, isolated_registry


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Inner(pydantic.BaseModel):
    n: int


class Outer(pydantic.BaseModel):
    inner: Inner
    tags: list[Inner] = []


#: A second model named Inner, of another shape (its schema name clashes with Inner's).
OtherInner = pydantic.create_model("Inner", m=(int, ...))


class Wrapper(pydantic.BaseModel):
    inner: OtherInner  # type: ignore[valid-type]


@dataclasses.dataclass
class Size:
    w: int
    h: int


def tool_schemas(server: LoopbackServer, index: int = 0) -> dict[str, dict[str, Any]]:
    """Tool name -> the parameters schema sent in request ``index``."""
    tools = server.requests[index].json["tools"]
    if server.wire == "openai":
        return {t["function"]["name"]: t["function"]["parameters"] for t in tools}
    return {t["name"]: t["input_schema"] for t in tools}


def tool_results(server: LoopbackServer, index: int = -1) -> dict[str, str]:
    """Tool call id -> the result text sent back in request ``index``."""
    messages = server.requests[index].json["messages"]
    if server.wire == "openai":
        return {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    return {
        block["tool_use_id"]: block["content"]
        for m in messages
        if isinstance(m["content"], list)
        for block in m["content"]
        if block.get("type") == "tool_result"
    }


def unresolved_refs(schema: dict[str, Any]) -> list[str]:
    """``$ref``s that do not resolve from the root, and ``$defs`` not at the root."""
    defs = schema.get("$defs") or {}
    bad: list[str] = []

    def walk(node: Any, at_root: bool) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item, False)
        elif isinstance(node, dict):
            if "$defs" in node and not at_root:
                bad.append("nested $defs")
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.removeprefix("#/$defs/") not in defs:
                bad.append(ref)
            for value in node.values():
                walk(value, False)

    walk(schema, True)
    return bad


def test_models_enums_and_dataclasses_arrive_typed_in_plain_and_registered_tools(
    server: LoopbackServer, sleeps: RecordedSleeps
) -> None:
    got: dict[str, Any] = {}

    def plain(o: Outer, col: Color, size: Size, pair: tuple[int, int]) -> str:
        """Plain tool."""
        got["plain"] = (o, col, size, pair)
        return f"{o.inner.n} {col.value} {size.w}"

    with isolated_registry():

        @function
        def reg(o: Outer, col: Color, size: Size, pair: tuple[int, int]) -> str:
            """Registered tool."""
            got["reg"] = (o, col, size, pair)
            return f"{o.inner.n} {col.value} {size.w}"

        args = {
            "o": {"inner": {"n": 3}, "tags": [{"n": 4}]},
            "col": "blue",
            "size": {"w": 5, "h": 6},
            "pair": [1, 2],
        }
        server.reply_tool_calls([("c1", "plain", args), ("c2", "reg", args)])
        server.reply_text("done")
        with runtime_for(server, retry=sleeps.policy()) as rt:
            assert agent("go", tools=[plain, reg], runtime=rt) == "done"

    expected = (Outer(inner=Inner(n=3), tags=[Inner(n=4)]), Color.BLUE, Size(5, 6), (1, 2))
    assert got == {"plain": expected, "reg": expected}
    assert tool_results(server) == {"c1": "3 blue 5", "c2": "3 blue 5"}


def test_bad_values_are_error_results_naming_the_parameter_by_one_rule(
    server: LoopbackServer, sleeps: RecordedSleeps
) -> None:
    calls: list[str] = []

    def plain(a: int, o: Outer, x: float = 0.0) -> str:
        """Plain tool."""
        calls.append("plain")
        return "ran"

    with isolated_registry():

        @function
        def reg(a: int, o: Outer, x: float = 0.0) -> str:
            """Registered tool."""
            calls.append("reg")
            return "ran"

        cases = [
            {"a": "3", "o": {"inner": {"n": 1}}},
            {"a": True, "o": {"inner": {"n": 1}}},
            {"a": 1, "o": {"inner": {"n": "bad"}}},
            {"a": 1, "o": {"inner": {"n": 1}}, "x": 2},  # an int is a float
        ]
        server.reply_tool_calls(
            [
                (f"{name}{i}", name, case)
                for i, case in enumerate(cases)
                for name in ("plain", "reg")
            ]
        )
        server.reply_text("done")
        with runtime_for(server, retry=sleeps.policy()) as rt:
            agent("go", tools=[plain, reg], runtime=rt)

    results = tool_results(server)
    for i in range(3):  # the same problem text from both paths
        p, r = results[f"plain{i}"], results[f"reg{i}"]
        assert p.startswith("ToolArgumentError: bad arguments for tool 'plain': ")
        assert r.startswith("ToolError: bad arguments for tool 'reg': ")
        assert p.split("'plain': ")[1] == r.split("'reg': ", 1)[1]
    assert "'a': Input should be a valid integer, got '3'" in results["plain0"]
    assert "'a': Input should be a valid integer, got True" in results["reg1"]
    assert "'o.inner.n': Input should be a valid integer, got 'bad'" in results["reg2"]
    assert results["plain3"] == results["reg3"] == "ran"
    assert calls == ["plain", "reg"]


def test_nested_model_schemas_resolve_from_the_root(
    server: LoopbackServer, sleeps: RecordedSleeps
) -> None:
    def plain(o: Outer, w: Wrapper, maybe: Outer | None = None) -> str:
        """Plain tool."""
        return f"{o.inner.n} {w.inner.m}"

    with isolated_registry():

        @function
        def reg(o: Outer, items: list[Outer]) -> str:
            """Registered tool."""
            return str(items[0].inner.n)

        server.reply_tool_calls(
            [
                ("c1", "plain", {"o": {"inner": {"n": 1}}, "w": {"inner": {"m": 2}}}),
                ("c2", "reg", {"o": {"inner": {"n": 1}}, "items": [{"inner": {"n": 7}}]}),
            ]
        )
        server.reply_text("done")
        with runtime_for(server, retry=sleeps.policy()) as rt:
            agent("go", tools=[plain, reg], runtime=rt)

    schemas = tool_schemas(server)
    for schema in schemas.values():
        assert unresolved_refs(schema) == []
    defs = schemas["plain"]["$defs"]
    assert defs["Inner"]["required"] == ["n"]
    [renamed] = [k for k in defs if k.startswith("Inner_")]
    assert defs[renamed]["required"] == ["m"]
    assert schemas["plain"]["properties"]["w"]["properties"]["inner"] == {
        "$ref": f"#/$defs/{renamed}"
    }
    assert schemas["reg"]["properties"]["items"]["items"]["properties"]["inner"] == {
        "$ref": "#/$defs/Inner"
    }
    assert tool_results(server) == {"c1": "1 2", "c2": "7"}


def test_registered_tools_format_results_as_plain_tools_do(
    server: LoopbackServer, sleeps: RecordedSleeps
) -> None:
    class P(pydantic.BaseModel):
        x: int

    def plain_p() -> P:
        """Plain."""
        return P(x=1)

    def plain_d() -> Size:
        """Plain."""
        return Size(2, 3)

    with isolated_registry():
        reg_p = function(name="reg_p")(lambda: P(x=1))
        reg_d = function(name="reg_d")(lambda: Size(2, 3))
        server.reply_tool_calls(
            [("a", "plain_p", {}), ("b", "plain_d", {}), ("c", "reg_p", {}), ("d", "reg_d", {})]
        )
        server.reply_text("done")
        with runtime_for(server, retry=sleeps.policy()) as rt:
            agent("go", tools=[plain_p, plain_d, reg_p, reg_d], runtime=rt)

    results = tool_results(server)
    assert results == {
        "a": '{"x":1}',
        "b": '{"w": 2, "h": 3}',
        "c": '{"x":1}',
        "d": '{"w": 2, "h": 3}',
    }
