"""OP403: entry is private, a lambda, a generator or an async function."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers import entries_family
from openprogram_analyzers.rule import FamilyRule, Invalid, Valid


class RuleOP403(FamilyRule):
    """Why: Entries are public functions: not ``_private``, not lambdas, not generators, not
    ``async def`` (a run calls its entry and keeps what it returns, never awaiting it).

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
    ]
