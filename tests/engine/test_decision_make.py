"""``decision.make`` against a loopback OpenAI-wire model server (real HTTP).

Covers every row of the seed's option and schema tables, every parse-error kind with
the retry message the model receives, recording of each request, and runtime lookup.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import pytest

from openprogram import decision
from openprogram.decision import DECISION_FINISH_INSTRUCTION, DecisionError, render_options
from openprogram.runtime import Runtime
from openprogram.scope import call_scope, use_writer
from openprogram.store import SessionNodeWriter, SessionStore

try:
    from decision_server import ChatServer
except ImportError:  # pragma: no cover - when tests are imported as a package
    from tests.engine.decision_server import ChatServer


@pytest.fixture
def server(httpserver: Any) -> ChatServer:
    return ChatServer(httpserver)


@pytest.fixture
def rt(server: ChatServer) -> Any:
    runtime = Runtime("openai:test-model", base_url=server.base_url)
    yield runtime
    runtime.close()


def js(obj: Any) -> str:
    return json.dumps(obj)


calls: list[tuple[str, Any]] = []


def analyze_sentiment(
    text: str, mode: Literal["fast", "deep"] = "fast", runtime: Any = None
) -> str:
    """Analyze the sentiment of a message."""
    calls.append(("analyze", (text, mode, runtime)))
    return f"sentiment of {text!r} ({mode})"


def fallback_reply(context: Any = None) -> str:
    """Reply without analysis."""
    calls.append(("fallback", context))
    return "FALLBACK"


class AbortSignal:
    pass


ABORT = AbortSignal()


# ------------------------------------------------------------------ option table rows


def test_function_option_runs_with_parsed_and_injected_args(server: ChatServer, rt: Any) -> None:
    calls.clear()
    server.script([js({"call": "analyze", "text": "great!", "mode": "deep", "made_up": 1})])
    result = decision.make(
        "Pick one way to handle this message.",
        {"analyze": analyze_sentiment, "fallback": fallback_reply, "done": "CONVERSATION_OVER"},
        runtime=rt,
    )
    assert result == "sentiment of 'great!' (deep)"
    assert calls == [("analyze", ("great!", "deep", rt))]
    sent = server.user_text(0)
    assert sent.startswith("Pick one way to handle this message.\n\nOptions")
    assert '- analyze(text: str, mode: str = "fast")' in sent
    assert "runtime" not in sent
    assert DECISION_FINISH_INSTRUCTION not in sent  # only the choices= path appends it
    assert not server.requests[0].get("tools")


def test_value_option_returns_the_value(server: ChatServer, rt: Any) -> None:
    server.script([f"I'll stop here.\n```json\n{js({'call': 'done'})}\n```"])
    assert (
        decision.make("Pick.", {"go": fallback_reply, "done": "CONVERSATION_OVER"}, runtime=rt)
        == "CONVERSATION_OVER"
    )


def test_value_option_with_description(server: ChatServer, rt: Any) -> None:
    server.script([js({"call": "abort"})])
    options = {"abort": (ABORT, "pick when stuck"), "skip": "SKIPPED"}
    assert decision.make("Pick.", options, runtime=rt) is ABORT
    assert "- abort\n  pick when stuck\n" in server.user_text(0)


def test_schema_option_returns_decision_and_fields(server: ChatServer, rt: Any) -> None:
    plan = {"steps": [{"action": "edit", "target": "auth.py"}], "rationale": "small"}
    server.script([js({"call": "emit_plan", **plan, "confidence": 0.9})])
    options = {
        "retry": fallback_reply,
        "emit_plan": (
            "Produce a plan.",
            {"steps": [{"action": str, "target": str}], "rationale": str},
        ),
    }
    assert decision.make("Plan it.", options, runtime=rt) == {"decision": "emit_plan", **plan}
    assert '"steps": [{"action": "<str>", "target": "<str>"}]' in server.user_text(0)


def test_context_is_injected_into_function_options(server: ChatServer, rt: Any) -> None:
    calls.clear()
    server.script([js({"call": "fallback", "context": "forged"})])
    ctx = {"ticket": 7}
    assert (
        decision.make("Pick.", {"fallback": fallback_reply}, runtime=rt, context=ctx) == "FALLBACK"
    )
    assert calls == [("fallback", ctx)]


@pytest.mark.parametrize(
    ("item", "reply", "expected"),
    [
        (analyze_sentiment, {"call": "analyze_sentiment", "text": "x"}, "sentiment of 'x' (fast)"),
        ((fallback_reply, "when unsure"), {"call": "fallback_reply"}, "FALLBACK"),
        ("skip", {"call": "skip"}, "skip"),
        (("stop", "stop now"), {"call": "stop"}, "stop"),
        (
            ("plan", "make a plan", {"goal": str}),
            {"call": "plan", "goal": "g"},
            {"decision": "plan", "goal": "g"},
        ),
    ],
)
def test_list_form_items(server: ChatServer, rt: Any, item: Any, reply: Any, expected: Any) -> None:
    server.script([js(reply)])
    assert decision.make("Pick.", [item, "other"], runtime=rt) == expected


@pytest.mark.parametrize("key", ["call", "action", "function", "tool"])
def test_call_key_aliases(server: ChatServer, rt: Any, key: str) -> None:
    server.script([js({key: "b"})])
    assert decision.make("Pick.", ["a", "b"], runtime=rt) == "b"


# ------------------------------------------------------------------ schema table rows

SCHEMA_ROWS = [
    # (row, schema, good payload, expected fields, bad payload, menu line)
    ("scalar", {"n": int}, {"n": 3}, {"n": 3}, {"n": "3"}, "n (int, required)"),
    ("float accepts int", {"x": float}, {"x": 2}, {"x": 2.0}, {"x": True}, "x (float, required)"),
    (
        "description string",
        {"why": "the reason"},
        {"why": "tests"},
        {"why": "tests"},
        {"why": 1},
        "why (str, required): the reason",
    ),
    (
        "list",
        {"tags": [str]},
        {"tags": ["a"]},
        {"tags": ["a"]},
        {"tags": ["a", 1]},
        "tags (list[str], required)",
    ),
    (
        "nested dict",
        {"owner": {"name": str, "admin": bool}},
        {"owner": {"name": "ann", "admin": False, "x": 1}},
        {"owner": {"name": "ann", "admin": False}},
        {"owner": {"name": "ann", "admin": 0}},
        "owner.admin (bool, required)",
    ),
    (
        "meta-spec",
        {"level": {"type": str, "description": "severity", "options": ["low", "high"]}},
        {"level": "high"},
        {"level": "high"},
        {"level": "medium"},
        'level (str, required): severity; one of "low", "high"',
    ),
    (
        "meta fields",
        {"cfg": {"type": dict, "fields": {"on": bool}}},
        {"cfg": {"on": True}},
        {"cfg": {"on": True}},
        {"cfg": {}},
        "cfg.on (bool, required)",
    ),
    (
        "meta items",
        {"xs": {"type": list, "items": int}},
        {"xs": [1, 2]},
        {"xs": [1, 2]},
        {"xs": [1.5]},
        "xs (list[int], required)",
    ),
    (
        "recursive",
        {"steps": [{"action": str, "files": [str]}]},
        {"steps": [{"action": "a", "files": ["f"]}]},
        {"steps": [{"action": "a", "files": ["f"]}]},
        {"steps": [{"action": "a", "files": "f"}]},
        "steps[].files (list[str], required)",
    ),
]


@pytest.mark.parametrize(
    ("row", "schema", "good", "expected", "bad", "menu_line"),
    SCHEMA_ROWS,
    ids=[r[0] for r in SCHEMA_ROWS],
)
def test_schema_rows(
    server: ChatServer,
    rt: Any,
    row: str,
    schema: dict[str, Any],
    good: dict[str, Any],
    expected: dict[str, Any],
    bad: dict[str, Any],
    menu_line: str,
) -> None:
    server.script([js({"call": "fill", **bad}), js({"call": "fill", **good})])
    result = decision.make(
        "Fill it.", {"fill": ("Fill the form.", schema), "none": None}, runtime=rt
    )
    assert result == {"decision": "fill", **expected}
    assert menu_line in server.user_text(0)
    retry_text = server.user_text(1)
    assert js({"call": "fill", **bad}) in retry_text
    assert (
        "Error (invalid_type)" in retry_text
        or "Error (invalid_option)" in retry_text
        or ("Error (missing_field)" in retry_text)
    )


def test_list_schema_with_two_templates_is_a_type_error(server: ChatServer, rt: Any) -> None:
    with pytest.raises(TypeError, match="exactly one element template"):
        decision.make("Pick.", {"x": ("d", {"a": [str, int]})}, runtime=rt)  # noqa: OP301 - deliberately invalid
    assert server.requests == []  # rejected before any model call


def test_all_meta_key_dict_is_a_meta_spec(server: ChatServer, rt: Any) -> None:
    # {"type": int, "description": ...} is ONE int field, not an object with two fields.
    server.script([js({"call": "f", "n": 4})])
    assert decision.make(
        "Pick.", {"f": ("d", {"n": {"type": int, "description": "count"}})}, runtime=rt
    ) == {
        "decision": "f",
        "n": 4,
    }
    assert "n (int, required): count" in server.user_text(0)


def test_tuple_handler_rules(server: ChatServer, rt: Any) -> None:
    with pytest.raises(TypeError, match=r"\(\(a, b\), 'description'\)"):
        decision.make("Pick.", {"pair": (1, 2)}, runtime=rt)  # noqa: OP305 - deliberately invalid
    server.script([js({"call": "pair"})])
    assert decision.make("Pick.", {"pair": ((1, 2), "a pair")}, runtime=rt) == (1, 2)


# ------------------------------------------------------------------ parse errors and retries

OPTIONS = {
    "analyze": analyze_sentiment,
    "done": "CONVERSATION_OVER",
    "plan": ("Plan.", {"steps": [str]}),
}
BAD_REPLIES = [
    ("no_json", "I would analyze it."),
    ("invalid_json", '```json\n{"call": "analyze", "text": \n```'),
    ("missing_call", js({"text": "hello"})),
    ("multiple_calls", js({"call": "done"}) + "\n" + js({"call": "analyze", "text": "x"})),
    ("unknown_call", js({"call": "escalate"})),
    ("invalid_type", js({"call": "analyze", "text": 42})),
    ("invalid_option", js({"call": "analyze", "text": "x", "mode": "slow"})),
    ("missing_field", js({"call": "plan"})),
]


@pytest.mark.parametrize(("kind", "bad"), BAD_REPLIES, ids=[k for k, _ in BAD_REPLIES])
def test_parse_error_is_retried_with_reply_error_and_menu(
    server: ChatServer, rt: Any, kind: str, bad: str
) -> None:
    server.script([bad, js({"call": "done"})])
    assert decision.make("Route this.", OPTIONS, runtime=rt) == "CONVERSATION_OVER"
    assert len(server.requests) == 2
    retry_text = server.user_text(1)
    assert retry_text.startswith("Route this.")
    assert bad in retry_text
    assert f"Error ({kind}): " in retry_text
    assert render_options(OPTIONS) in retry_text
    assert not server.requests[1].get("tools")


@pytest.mark.parametrize(("kind", "bad"), BAD_REPLIES, ids=[k for k, _ in BAD_REPLIES])
def test_exhausted_retries_raise_decision_error(
    server: ChatServer, rt: Any, kind: str, bad: str
) -> None:
    last = bad + " "  # the error carries the start of the *last* reply
    server.script([bad, last])
    with pytest.raises(DecisionError) as err:
        decision.make("Route this.", OPTIONS, runtime=rt)
    assert err.value.kind == kind
    assert err.value.reply_start == last[:200]
    assert err.value.message and kind in str(err.value)
    assert isinstance(err.value, ValueError)


def test_max_retries_zero_and_many(server: ChatServer, rt: Any) -> None:
    server.script(["nope"])
    with pytest.raises(DecisionError):
        decision.make("Pick.", OPTIONS, runtime=rt, max_retries=0)
    assert len(server.requests) == 1
    server.script(["a", "b", "c", js({"call": "done"})])
    assert decision.make("Pick.", OPTIONS, runtime=rt, max_retries=3) == "CONVERSATION_OVER"
    assert len(server.requests) == 5


def test_each_request_and_retry_is_a_recorded_llm_node(
    server: ChatServer, rt: Any, tmp_path: Any
) -> None:
    server.script(["no json", js({"call": "done"})])
    with SessionStore(tmp_path) as store:
        sid = store.create_session("s")
        writer = SessionNodeWriter(store, sid)
        with use_writer(writer), call_scope("route_message", runtime=rt):
            assert decision.make("Pick.", OPTIONS) == "CONVERSATION_OVER"
        nodes = store.list_nodes(sid)
    kinds = [(n.kind, n.name) for n in nodes]
    assert kinds == [("code", "route_message"), ("llm", "test-model"), ("llm", "test-model")]
    assert nodes[1].caller_id == nodes[0].id and nodes[2].caller_id == nodes[0].id
    assert nodes[2].output["text"] == js({"call": "done"})


def test_enclosing_runtime_is_used(server: ChatServer, rt: Any) -> None:
    server.script([js({"call": "done"})])
    with call_scope("outer", runtime=rt):
        assert decision.make("Pick.", OPTIONS) == "CONVERSATION_OVER"


def test_no_runtime_outside_any_call_is_a_runtime_error() -> None:
    with pytest.raises(RuntimeError, match="pass runtime="):
        decision.make("Pick.", OPTIONS)


def test_decide_from_reply_uses_the_retry_callable() -> None:
    sent: list[str] = []

    def retry(message: str) -> str:
        sent.append(message)
        return js({"call": "analyze", "text": "t"})

    result = decision.decide_from_reply(js({"call": "zzz"}), OPTIONS, retry=retry, max_retries=1)
    assert result == "sentiment of 't' (fast)"
    assert len(sent) == 1 and "Error (unknown_call)" in sent[0]


def test_choices_path_injects_the_enclosing_runtime(rt: Any) -> None:
    calls.clear()
    with call_scope("outer", runtime=rt):
        result = decision.decide_from_reply(
            js({"call": "analyze", "text": "t"}), OPTIONS, retry=None, max_retries=1
        )
    assert result == "sentiment of 't' (fast)"
    assert calls == [("analyze", ("t", "fast", rt))]


# ------------------------------------------------------------------ Agent methods and choices=


def test_agent_method_makes_the_decision_and_is_an_option(server: ChatServer, rt: Any) -> None:
    from openprogram import Agent

    class Desk(Agent):
        def summarize(self, text: str, runtime: Any = None) -> str:
            """Summarize the message."""
            return f"summary of {text} via {runtime is not None}"

        def route_message(self, msg: str) -> Any:
            return decision.make(
                f"Pick one way to handle: {msg}",
                {"summarize": self.summarize, "done": "CONVERSATION_OVER"},
            )

    server.script([js({"call": "summarize", "text": "hello"})])
    assert Desk(runtime=rt).route_message("hello") == "summary of hello via True"
    assert "- summarize(text: str)" in server.user_text(0)


def test_agent_choices_appends_finish_instruction_and_retries(server: ChatServer, rt: Any) -> None:
    from openprogram import agent

    server.script(["I looked into it; refund seems right.", js({"call": "close"})])
    result = agent(
        "Handle this ticket: #7",
        tools=[],
        runtime=rt,
        choices={"refund": fallback_reply, "close": {"status": "closed"}},
    )
    assert result == {"status": "closed"}
    first = server.user_text(0)
    assert DECISION_FINISH_INSTRUCTION in first and 'Call: {"call": "close"}' in first
    assert "Error (no_json)" in server.user_text(1)
