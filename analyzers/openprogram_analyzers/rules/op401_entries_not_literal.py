"""OP401: PROGRAM_ENTRIES is not a literal list/tuple."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers import entries_family
from openprogram_analyzers.rule import FamilyRule, Invalid, Valid


class RuleOP401(FamilyRule):
    """Why: Entries are found without running the module, so ``PROGRAM_ENTRIES`` is a literal list
    or tuple of names or functions.

    Fix safety: No fix: the change needs the author's decision; ``# noqa: OP401`` suppresses it.
    """

    code = "OP401"
    name = "entries-not-literal"
    summary = "PROGRAM_ENTRIES is not a literal list/tuple"
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


            PROGRAM_ENTRIES = list(["main"])
            """,
            range=(5, 19, 5, 33),
            message="PROGRAM_ENTRIES is not a literal list or tuple",
        ),
    ]
