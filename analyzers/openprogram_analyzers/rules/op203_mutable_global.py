"""OP203: module global that is rebound or mutated in place, used by a resumable function or its helpers."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers import determinism
from openprogram_analyzers.rule import FamilyRule, Invalid, Valid


class RuleOP203(FamilyRule):
    """Why: State kept in a module global is lost when a run resumes in a new process. Pass it
    through step inputs and results instead.

    Fix safety: No fix: the change needs the author's decision; ``# noqa: OP203`` suppresses it.
    """

    code = "OP203"
    name = "mutable-global"
    summary = "module global that is rebound or mutated in place, used by a resumable function or its helpers"
    family = determinism.findings_for
    VALID: ClassVar[list[Valid]] = [
        Valid(
            """
            LIMIT = 3

            from openprogram import Agent, step


            class Reporter(Agent):
                method_options = {"report": {"resumable": True}}

                def report(self, topic: str) -> str:
                    return step("write", write, topic, LIMIT)


            def write(topic: str, n: int) -> str:
                return topic * n
            """
        ),
    ]
    INVALID: ClassVar[list[Invalid]] = [
        Invalid(
            """
            from openprogram import Agent, step

            SEEN: list[str] = []


            class Reporter(Agent):
                method_options = {"report": {"resumable": True}}

                def report(self, topic: str) -> str:
                    SEEN.append(topic)
                    return step("write", str.upper, topic)
            """,
            range=(10, 9, 10, 13),
            message="uses module global 'SEEN'",
        ),
    ]
