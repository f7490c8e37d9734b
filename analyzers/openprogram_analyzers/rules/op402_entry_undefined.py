"""OP402: entry names nothing defined in the module."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers import entries_family
from openprogram_analyzers.rule import FamilyRule, Invalid, Valid


class RuleOP402(FamilyRule):
    """Why: Each entry must name a function, class or bound method defined or imported in the module.

    Fix safety: No fix: the change needs the author's decision; ``# noqa: OP402`` suppresses it.
    """

    code = "OP402"
    whole_module = True  # needs every definition / every finding of the module
    name = "entry-undefined"
    summary = "entry names nothing defined in the module"
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


            PROGRAM_ENTRIES = ["mian"]
            """,
            range=(5, 20, 5, 26),
            message="entry 'mian' names nothing defined in this module",
        ),
    ]
