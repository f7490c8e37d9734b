"""OP207: step / workflow / parallel branch name that is not a literal string."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers.rule import FamilyRule, Invalid


class RuleOP207(FamilyRule):
    """A step's identity is its name plus its occurrence. A name computed from data changes
    between runs and breaks resuming. Repeated literal names are fine.
    """

    code = "OP207"
    name = "non-literal-step-name"
    summary = "step / workflow / parallel branch name that is not a literal string"
    family = "determinism"
    VALID: ClassVar[list[str]] = [
        'from openprogram import Agent, step\n\n\nclass Reporter(Agent):\n    method_options = {"report": {"resumable": True}}\n\n    def report(self, topics: list[str]) -> list[str]:\n        return [step("write", str.upper, t) for t in topics]\n',
    ]
    INVALID: ClassVar[list[tuple[str, Invalid]]] = [
        (
            'from openprogram import Agent, step\n\n\nclass Reporter(Agent):\n    method_options = {"report": {"resumable": True}}\n\n    def report(self, topics: list[str]) -> list[str]:\n        return [step(f"write-{t}", str.upper, t) for t in topics]\n',
            Invalid("OP207", 8, 22, 8, 34, "step name is not a literal string", fixed=None),
        ),
    ]
