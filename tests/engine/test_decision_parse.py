"""Pure parts of next-step decisions: option shapes, menu rendering, reply parsing."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openprogram.decision import (
    DECISION_FINISH_INSTRUCTION,
    ERROR_KINDS,
    DecisionError,
    _ParseError,
    build_retry_message,
    extract_action,
    normalize_options,
    parse_args,
    render_options,
    resolve_decision,
)
from openprogram.errors import RuleViolation


def analyze_sentiment(
    text: str, mode: Literal["fast", "deep"] = "fast", runtime: Any = None, context: Any = None
) -> str:
    """Analyze the sentiment of a message.

    Args:
        text: the message to analyze
        mode: how thorough to be
    """
    return f"{mode}:{text}:{runtime}:{context}"


def fallback_reply() -> str:
    """Answer politely without analysis."""
    return "FALLBACK"


def score(value: float, weight: int = 1, tags: list[str] | None = None) -> dict[str, Any]:
    return {"value": value, "weight": weight, "tags": tags}


class AbortSignal:
    pass


ABORT = AbortSignal()
PLAN_SCHEMA = {"steps": [{"action": str, "target": str}], "rationale": str}
OPTIONS: dict[str, Any] = {
    "analyze": analyze_sentiment,
    "fallback": fallback_reply,
    "done": "CONVERSATION_OVER",
    "abort": (ABORT, "pick when stuck"),
    "emit_plan": ("Produce a plan.", PLAN_SCHEMA),
}


def choose(reply: str, options: Any = OPTIONS, **kw: Any) -> Any:
    chosen, kwargs = parse_args(reply, options, **kw)
    return resolve_decision(chosen, kwargs, options)


def kind_of(reply: str, options: Any = OPTIONS) -> str:
    with pytest.raises(DecisionError) as err:
        parse_args(reply, options)
    assert err.value.kind in ERROR_KINDS
    return err.value.kind


# ------------------------------------------------------------------ option forms


def test_dict_form_kinds() -> None:
    menu = normalize_options(OPTIONS)
    kinds = {name: opt.kind for name, opt in menu.options.items()}
    assert kinds == {
        "analyze": "function",
        "fallback": "function",
        "done": "value",
        "abort": "value",
        "emit_plan": "schema",
    }
    assert menu.options["abort"].description == "pick when stuck"
    assert menu.options["abort"].value is ABORT


def test_list_form_kinds_and_names() -> None:
    menu = normalize_options(
        [
            analyze_sentiment,
            (fallback_reply, "last resort"),
            "skip",
            ("stop", "stop now"),
            ("plan", "make a plan", {"goal": str}),
        ]
    )
    assert menu.names() == ["analyze_sentiment", "fallback_reply", "skip", "stop", "plan"]
    assert menu.options["fallback_reply"].description == "last resort"
    assert menu.options["skip"].value == "skip"
    assert menu.options["plan"].kind == "schema"


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"x": (1, 2)}, "2-tuple in handler position"),
        ({"x": (1, 2, 3)}, "tuples are reserved"),
        ({"x": ("plan", {"a": [str, int]})}, "exactly one element template"),
        ([42], "list-form option must be"),
        ([lambda: 1], "no usable __name__"),
        ([fallback_reply, fallback_reply], "duplicate option name 'fallback_reply'"),
        ({}, "at least one option"),
        ({"x": ("d", {"decision": str})}, "reserved"),
        ("abc", "must be a dict or a list"),
    ],
)
def test_bad_option_shapes_raise_type_error(options: Any, match: str) -> None:
    with pytest.raises(TypeError, match=match):
        normalize_options(options)


def test_a_bad_menu_raises_lints_code_as_a_type_error() -> None:
    with pytest.raises(TypeError) as raised:
        normalize_options({"x": ("d", {"n": {"options": []}})})
    assert isinstance(raised.value, RuleViolation) and raised.value.code == "OP304"
    assert str(raised.value).startswith("OP304 meta-spec 'options' must be a non-empty list")


def test_two_tuple_value_is_value_plus_description() -> None:
    # The documented pitfall: a literal 2-tuple value is read as (value, "description").
    assert choose('{"call": "pair"}', {"pair": ("a", "b")}) == "a"
    assert choose('{"call": "pair"}', {"pair": (("a", "b"), "a pair")}) == ("a", "b")


# ------------------------------------------------------------------ rendering


def test_render_function_option() -> None:
    text = render_options(OPTIONS)
    assert '- analyze(text: str, mode: str = "fast")' in text
    assert "  Analyze the sentiment of a message." in text
    assert "text (str, required): the message to analyze" in text
    assert 'mode (str, optional, default "fast"): how thorough to be; one of "fast", "deep"' in text
    assert 'Call: {"call": "analyze", "text": "<str>", "mode": "fast"}' in text
    # injected parameters are hidden from the model
    assert "runtime" not in text and "context" not in text.split("- analyze")[1].split("- ")[0]


def test_render_value_and_schema_options() -> None:
    text = render_options(OPTIONS)
    assert "- done\n" in text and 'Call: {"call": "done"}' in text
    assert "- abort\n  pick when stuck\n" in text
    assert "- emit_plan(steps: list[{action: str, target: str}], rationale: str)" in text
    assert "steps[].action (str, required)" in text
    expected = {
        "call": "emit_plan",
        "steps": [{"action": "<str>", "target": "<str>"}],
        "rationale": "<str>",
    }
    assert "Call: " + json.dumps(expected) in text


def test_render_native_json_placeholders() -> None:
    def f(a: int, b: float, c: bool, d: list, e: dict, g: str) -> None: ...

    text = render_options({"f": f})
    line = next(x for x in text.splitlines() if x.strip().startswith("Call:"))
    assert json.loads(line.split("Call: ", 1)[1]) == {
        "call": "f",
        "a": 0,
        "b": 0.0,
        "c": False,
        "d": [],
        "e": {},
        "g": "<str>",
    }


def test_render_hides_context_supplied_parameters() -> None:
    def reply(user_id: str, text: str) -> str:
        return user_id + text

    text = render_options({"reply": reply}, context={"user_id": "u1"})
    assert "user_id" not in text and "text (str, required)" in text


def test_render_meta_spec_enum_and_annotated_description() -> None:
    def g(level: Annotated[int, "how loud"]) -> None: ...

    text = render_options(
        {
            "g": g,
            "pick": ("Pick a colour.", {"colour": {"type": str, "options": ["red", "blue"]}}),
        }
    )
    assert "level (int, required): how loud" in text
    assert 'colour (str, required); one of "red", "blue"' in text


# ------------------------------------------------------------------ extract_action


@pytest.mark.parametrize(
    "reply",
    [
        '{"call": "done"}',
        'Sure.\n```json\n{"call": "done"}\n```\nThanks',
        '```\n{"action": "done"}\n```',
        'I pick {"function": "done"} now.',
        '{"tool": "done"}',
        'prose {not json} then {"call": "done"}',
        '{"call": "done"} and again {"call": "done"}',
    ],
)
def test_extract_action_finds_the_choice(reply: str) -> None:
    obj = extract_action(reply)
    assert "done" in obj.values()


def test_fenced_block_wins_over_prose_json() -> None:
    reply = 'e.g. {"call": "fallback"}\n```json\n{"call": "done"}\n```'
    assert extract_action(reply) == {"call": "done"}


@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        ("I think we are done.", "no_json"),
        ('```json\n{"call": "done", \n```', "invalid_json"),
        ('{"call": "done"', "invalid_json"),
        ('{"choice": "done"}', "missing_call"),
        ('{"call": "done"} {"call": "fallback"}', "multiple_calls"),
    ],
)
def test_extract_action_errors(reply: str, kind: str) -> None:
    with pytest.raises(_ParseError) as err:
        extract_action(reply)
    assert err.value.kind == kind


# ------------------------------------------------------------------ parse_args / resolve


def test_function_option_runs_with_parsed_and_injected_arguments() -> None:
    result = choose(
        '{"call": "analyze", "text": "hi", "mode": "deep", "runtime": "evil", "bogus": 1}',
        runtime="RT",
        context={"k": 1},
    )
    assert result == "deep:hi:RT:{'k': 1}"


def test_function_option_args_wrapper_and_defaults() -> None:
    assert choose('{"call": "analyze", "args": {"text": "x"}}') == "fast:x:None:None"


def test_context_fills_parameters_by_name() -> None:
    def reply(user_id: str, text: str) -> str:
        return f"{user_id}/{text}"

    opts = {"reply": reply}
    chosen, kwargs = parse_args(
        '{"call": "reply", "text": "t", "user_id": "forged"}', opts, context={"user_id": "u1"}
    )
    assert chosen is reply and kwargs == {"user_id": "u1", "text": "t"}


def test_value_options_return_values() -> None:
    assert choose('{"call": "done"}') == "CONVERSATION_OVER"
    assert choose('{"call": "abort", "why": "hallucinated"}') is ABORT


def test_schema_option_returns_decision_dict_and_drops_extras() -> None:
    reply = (
        '{"call": "emit_plan", "rationale": "r", "extra": 1, '
        '"steps": [{"action": "edit", "target": "a.py", "note": "x"}]}'
    )
    assert choose(reply) == {
        "decision": "emit_plan",
        "steps": [{"action": "edit", "target": "a.py"}],
        "rationale": "r",
    }


def test_number_rules() -> None:
    opts = {"score": score}
    assert choose('{"call": "score", "value": 3}', opts) == {
        "value": 3.0,
        "weight": 1,
        "tags": None,
    }
    assert kind_of('{"call": "score", "value": true}', opts) == "invalid_type"
    assert kind_of('{"call": "score", "value": 1, "weight": 1.5}', opts) == "invalid_type"
    assert kind_of('{"call": "score", "value": 1, "weight": false}', opts) == "invalid_type"
    assert choose('{"call": "score", "value": 1, "tags": null}', opts)["tags"] is None
    assert kind_of('{"call": "score", "value": 1, "tags": ["a", 2]}', opts) == "invalid_type"


@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        ("no json here", "no_json"),
        ('{"call": "analyze", "text": ', "invalid_json"),
        ('{"text": "x"}', "missing_call"),
        ('{"call": "done"}\n{"call": "fallback"}', "multiple_calls"),
        ('{"call": "explode"}', "unknown_call"),
        ('{"call": 3}', "unknown_call"),
        ('{"call": "analyze", "text": 5}', "invalid_type"),
        ('{"call": "analyze", "text": "x", "mode": "slow"}', "invalid_option"),
        ('{"call": "analyze"}', "missing_field"),
        ('{"call": "emit_plan", "steps": []}', "missing_field"),
        ('{"call": "emit_plan", "rationale": "r", "steps": [{"action": "a"}]}', "missing_field"),
        ('{"call": "emit_plan", "rationale": "r", "steps": {"action": "a"}}', "invalid_type"),
    ],
)
def test_every_parse_error_kind(reply: str, kind: str) -> None:
    assert kind_of(reply) == kind


def test_all_error_kinds_are_covered() -> None:
    # the parametrized table above names each kind at least once
    assert set(ERROR_KINDS) == {
        "no_json",
        "invalid_json",
        "missing_call",
        "multiple_calls",
        "unknown_call",
        "invalid_type",
        "invalid_option",
        "missing_field",
    }


def test_decision_error_carries_kind_message_and_reply_start() -> None:
    reply = '{"call": "explode"} ' + "x" * 500
    with pytest.raises(ValueError) as err:  # DecisionError is a ValueError
        parse_args(reply, OPTIONS)
    exc = err.value
    assert isinstance(exc, DecisionError)
    assert exc.kind == "unknown_call"
    assert '"explode" is not an option' in exc.message
    assert exc.reply_start == reply[:200]
    assert "unknown_call" in str(exc)


def test_retry_callable_receives_reply_error_and_menu() -> None:
    sent: list[str] = []

    def retry(message: str) -> str:
        sent.append(message)
        return '{"call": "done"}'

    chosen, _ = parse_args('{"call": "explode"}', OPTIONS, retry=retry)
    assert chosen == "done"
    (message,) = sent
    assert '{"call": "explode"}' in message
    assert "Error (unknown_call):" in message
    assert render_options(OPTIONS) in message


def test_retries_are_bounded_then_decision_error() -> None:
    calls: list[str] = []

    def retry(message: str) -> str:
        calls.append(message)
        return "still no json"

    with pytest.raises(DecisionError) as err:
        parse_args("nope", OPTIONS, retry=retry, max_retries=3)
    assert len(calls) == 3 and err.value.attempts == 4 and err.value.kind == "no_json"
    calls.clear()
    with pytest.raises(DecisionError):
        parse_args("nope", OPTIONS, retry=retry, max_retries=0)
    assert calls == []


def test_build_retry_message_shape() -> None:
    text = build_retry_message("old reply", "no_json", "no JSON", "MENU")
    assert text.index("old reply") < text.index("Error (no_json): no JSON") < text.index("MENU")


def test_finish_instruction_mentions_the_call_json() -> None:
    assert '{"call":' in DECISION_FINISH_INSTRUCTION


# ------------------------------------------------------------------ property test

_json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=8)
)
_json_values = st.recursive(
    _json_leaf,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)
_names = st.sampled_from(["analyze", "fallback", "done", "abort", "emit_plan", "nope", ""])
_actions = st.builds(
    lambda key, name, extra: {key: name, **extra},
    st.sampled_from(["call", "action", "function", "tool", "cal"]),
    _names | _json_leaf,
    st.dictionaries(
        st.sampled_from(["text", "mode", "steps", "rationale", "args", "x"]),
        _json_values,
        max_size=4,
    ),
)


def _truncate(text: str, cut: int) -> str:
    return text[: max(0, len(text) - cut)]


_replies = st.one_of(
    st.text(max_size=200),
    _actions.map(json.dumps),
    st.tuples(_actions.map(json.dumps), st.integers(0, 30)).map(lambda t: _truncate(*t)),
    st.tuples(st.text(max_size=40), _actions.map(json.dumps), st.text(max_size=40)).map(
        lambda t: f"{t[0]}\n```json\n{t[1]}\n```\n{t[2]}"
    ),
    st.lists(_actions.map(json.dumps), min_size=2, max_size=3).map(" ".join),
    st.integers(1, 3000).map(lambda n: '{"call": ' + "[" * n + "]" * (n // 2)),
    st.integers(1, 3000).map(lambda n: '{"a":' * n),
    st.integers(900, 3000).map(
        lambda n: '{"call": "emit_plan", "steps": ' + "[" * n + "]" * n + "}"
    ),
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_replies)
def test_parse_args_returns_a_valid_choice_or_raises_decision_error(reply: str) -> None:
    menu = normalize_options(OPTIONS)
    try:
        chosen, kwargs = parse_args(reply, menu)
    except DecisionError as exc:
        assert exc.kind in ERROR_KINDS
        return
    if callable(chosen):
        assert chosen in (analyze_sentiment, fallback_reply)
        if chosen is analyze_sentiment:
            assert isinstance(kwargs["text"], str) and kwargs.get("mode", "fast") in (
                "fast",
                "deep",
            )
        resolve_decision(chosen, kwargs, menu)
    else:
        assert chosen in ("done", "abort", "emit_plan")
        if chosen == "emit_plan":
            assert set(kwargs) == {"steps", "rationale"}
            assert all(set(s) == {"action", "target"} for s in kwargs["steps"])
        else:
            assert kwargs == {}
