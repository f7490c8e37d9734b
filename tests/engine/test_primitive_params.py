"""The analyzer reads the arguments of ``openprogram.repeat_until``, ``validate_and_retry``
and ``conditional`` by the parameter names of ``openprogram.contract.primitives`` (OP206,
OP207) without importing the engine. The table must say what the functions a user
imports take: their leading positional parameters in order, the condition, which
parameters take callables the primitive runs; a renamed, reordered or added callable
parameter fails here."""

from __future__ import annotations

import collections.abc
import inspect
import types
import typing
from typing import Any

import pytest

import openprogram
from openprogram.agentic_programming import control_flow
from openprogram.agentic_programming.control_flow import Condition
from openprogram.contract.primitives import PRIMITIVES


def _signature(name: str) -> inspect.Signature:
    return inspect.signature(getattr(control_flow, name), eval_str=True)


def _takes_callable(annotation: Any) -> bool:
    union = isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union
    members = typing.get_args(annotation) if union else (annotation,)
    return any(typing.get_origin(m) is collections.abc.Callable for m in members)


@pytest.mark.parametrize("name", sorted(PRIMITIVES))
def test_the_table_names_the_parameters_of_the_public_function(name: str) -> None:
    primitive = PRIMITIVES[name]
    params = _signature(name).parameters
    positional = [
        p.name for p in params.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    assert tuple(positional[: len(primitive.params)]) == primitive.params
    assert params[primitive.judged].annotation == Condition
    for param in primitive.params:
        assert _takes_callable(params[param].annotation) == (param in primitive.called), param
    # every parameter that takes a callable is one the table reads
    assert {p for p, v in params.items() if _takes_callable(v.annotation)} == set(primitive.called)


def test_the_table_has_every_public_function_that_judges_a_condition() -> None:
    judging = set()
    public = [(openprogram, n) for n in openprogram.__all__]
    for module, name in [*public, *((control_flow, n) for n in control_flow.__all__)]:
        value = getattr(module, name)
        if inspect.isfunction(value):
            # as written (some modules annotate with names imported only for type checkers)
            annotations = [p.annotation for p in inspect.signature(value).parameters.values()]
            if "Condition" in annotations or Condition in annotations:
                judging.add(name)
    assert judging == set(PRIMITIVES)


def test_the_agent_methods_the_analyzer_knows_are_those_agent_defines() -> None:
    """OP206 takes ``bot.run_turn(...)`` as a model call and ``bot.from_spec(...)`` as
    none (``openprogram_analyzers.determinism``); a method added to ``Agent`` fails here
    until the analyzer says which it is."""
    from openprogram_analyzers.determinism import AGENT_OTHER_METHODS, AGENT_REQUESTS

    public = {
        name
        for name in vars(openprogram.Agent)
        if not name.startswith("_") and callable(getattr(openprogram.Agent, name))
    }
    assert public == AGENT_REQUESTS | AGENT_OTHER_METHODS
    assert not AGENT_REQUESTS & AGENT_OTHER_METHODS
