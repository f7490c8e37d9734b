"""OP202: import inside a helper or resumable function."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers import determinism
from openprogram_analyzers.rule import FamilyRule, Invalid, Valid


class RuleOP202(FamilyRule):
    """Why: Step dependencies are module-level imports; an import inside the resumable function or
    a helper is rejected before the run.

    Fix safety: No fix: the change needs the author's decision; ``# noqa: OP202`` suppresses it.
    """

    code = "OP202"
    name = "import-inside-function"
    summary = "import inside a helper or resumable function"
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
                return topic.upper()
            """
        ),
    ]
    INVALID: ClassVar[list[Invalid]] = [
        Invalid(
            """
            from openprogram import Agent, step


            class Reporter(Agent):
                method_options = {"report": {"resumable": True}}

                def report(self, topic: str) -> str:
                    return step("write", write, topic)


            def write(topic: str) -> str:
                import json

                return json.dumps(topic)
            """,
            range=(12, 5, 12, 16),
            message="import inside step dependency 'write'",
        ),
    ]
