"""OP404: duplicate entry."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers import entries_family
from openprogram_analyzers.rule import FamilyRule, Invalid, Valid


class RuleOP404(FamilyRule):
    """Why: Each entry is listed once.

    Fix safety: No fix: the change needs the author's decision; ``# noqa: OP404`` suppresses it.
    """

    code = "OP404"
    name = "duplicate-entry"
    summary = "duplicate entry"
    family = entries_family.findings_for
    VALID: ClassVar[list[Valid]] = [
        Valid(
            """
            def main() -> str:
                return "ok"


            PROGRAM_ENTRIES = ["main"]
            """
        ),
    ]
    INVALID: ClassVar[list[Invalid]] = [
        Invalid(
            """
            def main() -> str:
                return "ok"


            PROGRAM_ENTRIES = ["main", main]
            """,
            range=(5, 28, 5, 32),
            message="duplicate entry 'main'",
        ),
    ]
