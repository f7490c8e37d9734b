"""OP204: mutable default argument or closure state in a resumable function or helper."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers import determinism
from openprogram_analyzers.rule import FamilyRule, Invalid, Valid


class RuleOP204(FamilyRule):
    """Why: Default values and closure cells live in the process: their changes are not saved
    between steps.

    Fix safety: No fix: the change needs the author's decision; ``# noqa: OP204`` suppresses it.
    """

    code = "OP204"
    name = "mutable-default-or-closure"
    summary = "mutable default argument or closure state in a resumable function or helper"
    family = determinism.findings_for
    VALID: ClassVar[list[Valid]] = [
        Valid(
            """
            from openprogram import Agent, step


            class Reporter(Agent):
                method_options = {"report": {"resumable": True}}

                def report(self, topic: str, tags: tuple[str, ...] = ()) -> str:
                    return step("write", str.upper, topic)
            """
        ),
    ]
    INVALID: ClassVar[list[Invalid]] = [
        Invalid(
            """
            from openprogram import Agent, step


            class Reporter(Agent):
                method_options = {"report": {"resumable": True}}

                def report(self, topic: str, tags: list[str] = []) -> str:
                    return step("write", str.upper, topic)
            """,
            range=(7, 52, 7, 54),
            message="mutable default argument 'tags'",
        ),
    ]
