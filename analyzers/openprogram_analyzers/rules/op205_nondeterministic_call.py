"""OP205: non-deterministic call outside a step."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers import determinism
from openprogram_analyzers.rule import FamilyRule, Invalid, Valid


class RuleOP205(FamilyRule):
    """Why: A resumed run replays the orchestration body: ``time.time()``, ``random.random()``,
    ``uuid.uuid4()``... return different values then. Call them inside a step.

    Fix safety: No fix: the change needs the author's decision; ``# noqa: OP205`` suppresses it.
    """

    code = "OP205"
    name = "non-deterministic-call"
    summary = "non-deterministic call outside a step"
    family = determinism.findings_for
    VALID: ClassVar[list[Valid]] = [
        Valid(
            """
            import time

            from openprogram import Agent, step


            class Reporter(Agent):
                method_options = {"report": {"resumable": True}}

                def report(self, topic: str) -> float:
                    return step("stamp", time.time)
            """
        ),
    ]
    INVALID: ClassVar[list[Invalid]] = [
        Invalid(
            """
            import time

            from openprogram import Agent, step


            class Reporter(Agent):
                method_options = {"report": {"resumable": True}}

                def report(self, topic: str) -> float:
                    started = time.time()
                    return step("stamp", str, started)
            """,
            range=(10, 19, 10, 30),
            message="non-deterministic call time.time()",
        ),
    ]
