"""OP206: side effect outside a step: model call, network, file or subprocess I/O."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers import determinism
from openprogram_analyzers.rule import FamilyRule, Invalid, Valid


class RuleOP206(FamilyRule):
    """Why: Side effects in the orchestration body run again on every resume. Put model calls,
    network, file and subprocess work into ``step('name', fn, ...)``.

    Fix safety: No fix: the change needs the author's decision; ``# noqa: OP206`` suppresses it.
    """

    code = "OP206"
    name = "side-effect-outside-step"
    summary = "side effect outside a step: model call, network, file or subprocess I/O"
    family = determinism.findings_for
    VALID: ClassVar[list[Valid]] = [
        Valid(
            """
            from openprogram import llm

            from openprogram import Agent, step


            class Reporter(Agent):
                method_options = {"report": {"resumable": True}}

                def report(self, topic: str) -> str:
                    return step("draft", llm, topic)
            """
        ),
    ]
    INVALID: ClassVar[list[Invalid]] = [
        Invalid(
            """
            from openprogram import llm

            from openprogram import Agent, step


            class Reporter(Agent):
                method_options = {"report": {"resumable": True}}

                def report(self, topic: str) -> str:
                    return llm(topic)
            """,
            range=(10, 16, 10, 26),
            message="model call (openprogram.llm)",
        ),
    ]
