"""OP208: resumable on an async function or a generator; third-party module or class object referenced by a step dependency."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers import determinism
from openprogram_analyzers.rule import FamilyRule, Invalid, Valid


class RuleOP208(FamilyRule):
    """Why: Resumable orchestrations are plain synchronous functions, and only standard-library
    module and class objects can be restored by identity.

    Fix safety: No fix: the change needs the author's decision; ``# noqa: OP208`` suppresses it.
    """

    code = "OP208"
    name = "unrestorable-function-or-object"
    summary = "resumable on an async function or a generator; third-party module or class object referenced by a step dependency"
    family = determinism.findings_for
    VALID: ClassVar[list[Valid]] = [
        Valid(
            """
            from openprogram import Agent, step


            class Reporter(Agent):
                method_options = {"report": {"resumable": True}}

                def report(self, topic: str) -> str:
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

                async def report(self, topic: str) -> str:
                    return step("write", str.upper, topic)
            """,
            range=(7, 15, 7, 21),
            message="is resumable but is an async function",
        ),
        Invalid(
            """
            from openprogram import agentic_function, step


            @agentic_function(resumable=True)
            def report(topic: str):
                yield step("write", str.upper, topic)
            """,
            range=(5, 5, 5, 11),
            message="'report' is resumable but is a generator",
        ),
    ]
