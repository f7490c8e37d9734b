"""Fuzzed model replies against a decision menu: only DecisionError may escape (issue 16, item 9).

Replies mix valid choices with numbers no float can hold (``1`` followed by 400 zeros),
``1e400``, ``Infinity``, ``NaN``, wrong types, truncation and prose. A reply either parses
into a valid choice or raises :class:`DecisionError` -- never ``OverflowError`` or any
other exception -- and with a retry callback an unusable number is retried.
"""

from __future__ import annotations

import math
import random
from typing import Literal

from hypothesis import given, settings
from hypothesis import strategies as st

from openprogram.decision import ERROR_KINDS, DecisionError, normalize_options, parse_args


def set_speed(speed: float, unit: Literal["m/s", "km/h"] = "m/s") -> str:
    """Set the speed."""
    return f"{speed} {unit}"


def set_gain(gain: float, weights: list[float] | None = None) -> str:
    """Set the gain."""
    return f"{gain} {weights}"


MENU = normalize_options(
    {
        "speed": set_speed,
        "gain": set_gain,
        "point": ("Report a point.", {"x": float, "y": float, "label": str}),
        "path": ("Report a path.", {"points": [{"x": float}], "count": int}),
        "stop": "STOP",
    }
)
FIELDS = ["speed", "unit", "gain", "weights", "x", "y", "label", "points", "count", "args"]

NUMBERS = ["1e400", "-1e400", "Infinity", "-Infinity", "NaN", "1e-400", "-0", "2.5", "3", "-1"]
OTHER = ['"m/s"', '"km/h"', "true", "null", '"x"', "[]", "{}"]
CALLS = ["speed", "gain", "point", "path", "stop", "nope"]


def number(rng: random.Random) -> str:
    if rng.random() < 0.4:
        return "1" + "0" * rng.randint(300, 1200)  # an int no float can hold
    return rng.choice(NUMBERS)


def value(rng: random.Random) -> str:
    kind = rng.randrange(4)
    if kind == 0:
        return number(rng)
    if kind == 1:
        return rng.choice(OTHER)
    if kind == 2:
        return "[" + ", ".join(number(rng) for _ in range(rng.randrange(4))) + "]"
    return '[{"x": ' + number(rng) + "}]"


def reply(rng: random.Random) -> str:
    """One fuzzed reply: an action (plain, fenced or truncated) or prose."""
    fields = rng.sample(FIELDS, rng.randrange(5))
    action = (
        "{"
        + ", ".join([f'"call": "{rng.choice(CALLS)}"'] + [f'"{f}": {value(rng)}' for f in fields])
        + "}"
    )
    shape = rng.randrange(4)
    if shape == 1:
        return f"Here you go:\n```json\n{action}\n```"
    if shape == 2:
        return action[: -rng.randint(1, 20)]
    if shape == 3:
        return "".join(rng.choice('{}[]":, abc1e') for _ in range(rng.randrange(40)))
    return action


# hypothesis draws 100 seeds (and reports the failing one); each seed yields 100 replies
@settings(max_examples=100, deadline=None, database=None)
@given(st.integers(0, 2**64 - 1))
def test_only_decision_error_escapes_from_10000_fuzzed_replies(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(100):
        text = reply(rng)
        try:
            chosen, kwargs = parse_args(text, MENU)
        except DecisionError as exc:
            assert exc.kind in ERROR_KINDS
            continue
        for name, got in kwargs.items():
            if name in ("speed", "gain", "x", "y"):
                assert isinstance(got, float) and math.isfinite(got), text
        assert chosen in (set_speed, set_gain, "point", "path", "stop")


def test_a_number_too_big_for_a_float_is_retried_then_accepted() -> None:
    huge = '{"call": "speed", "speed": 1' + "0" * 400 + "}"
    retries: list[str] = []

    def retry(message: str) -> str:
        retries.append(message)
        return '{"call": "speed", "speed": 12.5}'

    chosen, kwargs = parse_args(huge, MENU, retry=retry)
    assert (chosen, kwargs) == (set_speed, {"speed": 12.5})
    [message] = retries
    assert "invalid_type" in message and "speed" in message and "finite number" in message


def test_infinity_for_a_float_field_is_a_decision_error() -> None:
    for literal in ("1e400", "Infinity", "NaN"):
        try:
            parse_args('{"call": "point", "x": ' + literal + ', "y": 1, "label": "a"}', MENU)
        except DecisionError as exc:
            assert exc.kind == "invalid_type" and "finite number" in str(exc)
        else:
            raise AssertionError(f"{literal} was accepted for a float field")
