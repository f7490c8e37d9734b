"""The ``PROGRAM_ENTRIES`` rules, as ``(code, message)``: what ``openprogram-lint`` reports
(OP401-OP405) and what the loader refuses at run time, with the same code and text."""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

from openprogram.options import OptionProblem, check_method_entry

Problem = tuple[str, str]


def not_a_list() -> Problem:
    return (
        "OP401",
        "PROGRAM_ENTRIES is not a literal list or tuple, so its entries cannot be found "
        "without running the module",
    )


def not_a_name() -> Problem:
    return "OP401", "each PROGRAM_ENTRIES item must be a name string or a function"


def undefined(name: str) -> Problem:
    return "OP402", f"entry {name!r} names nothing defined in this module"


def private(name: str) -> Problem:
    return "OP403", f"entry {name!r} is private (starts with '_')"


def anonymous_lambda() -> Problem:
    return "OP403", "a lambda cannot be a Program entry: define a function"


def lambda_entry(name: str) -> Problem:
    return "OP403", f"entry {name!r} is a lambda"


def generator(name: str) -> Problem:
    return "OP403", f"entry {name!r} is a generator, which cannot be run as an entry"


def async_function(name: str) -> Problem:
    return (
        "OP403",
        f"entry {name!r} is an async function, which cannot be run as an entry: "
        "make the entry a plain def (asyncio.run can call async code from it)",
    )


def not_a_function(name: str, kind: str) -> Problem:
    article = "an" if kind[:1].lower() in "aeiou" else "a"
    return "OP403", f"entry {name!r} is {article} {kind}, not a function or bound Agent method"


def duplicate(name: str) -> Problem:
    return "OP404", f"duplicate entry {name!r}"


def agent_options_not_dict() -> Problem:
    return "OP405", "__agent_options__ must be a literal dict of entry metadata"


def agent_options_problems(
    name: str, value: Any, signature: inspect.Signature | Sequence[str] | None
) -> list[OptionProblem]:
    """The OP405 problems of ``name.__agent_options__ = value``: its keys and values
    checked with the method-options table (entry metadata such as ``label`` is what tools
    show, so tool-only keys are allowed). The analyzer passes the literal rebuilt with
    :data:`openprogram.options.UNKNOWN` for what it cannot read; the loader the value."""
    if not isinstance(value, Mapping):
        return [OptionProblem(*agent_options_not_dict(), (name,))]
    return [
        OptionProblem("OP405", p.message, p.path, on_key=p.on_key)
        for p in check_method_entry(name, value, signature, is_tool=True)
    ]
