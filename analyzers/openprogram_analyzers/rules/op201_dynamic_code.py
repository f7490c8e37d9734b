"""OP201: dynamic import / exec / eval / compile / importlib in a resumable function or its helpers."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers import determinism
from openprogram_analyzers.rule import FamilyRule, Invalid, Valid


class RuleOP201(FamilyRule):
    """Why: Resumable runs save the source of the function and its helpers. Dynamic imports and
    generated code cannot be saved, so they are rejected before any step runs.

    Fix safety: No fix: the change needs the author's decision; ``# noqa: OP201`` suppresses it.
    """

    code = "OP201"
    name = "dynamic-code"
    summary = (
        "dynamic import / exec / eval / compile / importlib in a resumable function or its helpers"
    )
    family = determinism.findings_for
    VALID: ClassVar[list[Valid]] = [
        Valid(
            """
            from openprogram import Agent, step


            class Reporter(Agent):
                method_options = {"report": {"resumable": True}}

                def report(self, topic: str) -> str:
                    return step("write", write, topic)


            def write(topic: str) -> str:
                return topic
            """
        ),
    ]
    INVALID: ClassVar[list[Invalid]] = [
        Invalid(
            """
            from openprogram import Agent, step


            class Reporter(Agent):
                method_options = {"report": {"resumable": True}}

                def report(self, code: str) -> str:
                    return eval(code)
            """,
            range=(8, 16, 8, 20),
            message="dynamic code (eval)",
        ),
    ]
