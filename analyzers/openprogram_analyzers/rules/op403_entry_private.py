"""OP403: entry is private, a lambda, a generator or an async function."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers import entries_family
from openprogram_analyzers.rule import FamilyRule, Invalid, Valid


class RuleOP403(FamilyRule):
    """Why: Entries are public functions: not ``_private``, not lambdas, not generators, not
    ``async def`` (a run calls its entry and keeps what it returns, never awaiting it), and
    not other callables (a ``functools.partial``, a builtin such as ``os.getcwd``): the
    loader refuses such a list with the same message, for every entry of the module.

    Fix safety: No fix: the change needs the author's decision; ``# noqa: OP403`` suppresses it.
    """

    code = "OP403"
    name = "entry-private-lambda-generator"
    summary = "entry is private, a lambda, a generator or an async function"
    family = entries_family.findings_for
    VALID: ClassVar[list[Valid]] = [
        Valid(
            """
            def main() -> str:
                return "ok"


            PROGRAM_ENTRIES = [main]
            """
        ),
    ]
    INVALID: ClassVar[list[Invalid]] = [
        Invalid(
            """
            def _main() -> str:
                return "ok"


            PROGRAM_ENTRIES = ["_main"]
            """,
            range=(5, 20, 5, 27),
            message="entry '_main' is private",
        ),
        Invalid(
            """
            async def main() -> str:
                return "ok"


            PROGRAM_ENTRIES = [main]
            """,
            range=(5, 20, 5, 24),
            message="entry 'main' is an async function",
        ),
        Invalid(
            """
            import functools


            def greet(name: str, greeting: str = "Hello") -> str:
                return f"{greeting}, {name}"


            hola = functools.partial(greet, greeting="Hola")
            PROGRAM_ENTRIES = ["greet", "hola"]
            """,
            range=(9, 29, 9, 35),
            message="entry 'hola' is a partial, not a function or bound Agent method",
        ),
        Invalid(
            """
            from os import getcwd as where

            PROGRAM_ENTRIES = ["where"]
            """,
            range=(3, 20, 3, 27),
            message="entry 'where' is a builtin_function_or_method",
        ),
    ]
