"""OP204: mutable default argument or closure state in a resumable function or helper."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers.rule import FamilyRule, Invalid


class RuleOP204(FamilyRule):
    """Default values and closure cells live in the process: their changes are not saved
    between steps.
    """

    code = "OP204"
    name = "mutable-default-or-closure"
    summary = "mutable default argument or closure state in a resumable function or helper"
    family = "determinism"
    VALID: ClassVar[list[str]] = [
        'from openprogram import Agent, step\n\n\nclass Reporter(Agent):\n    method_options = {"report": {"resumable": True}}\n\n    def report(self, topic: str, tags: tuple[str, ...] = ()) -> str:\n        return step("write", str.upper, topic)\n',
    ]
    INVALID: ClassVar[list[tuple[str, Invalid]]] = [
        (
            'from openprogram import Agent, step\n\n\nclass Reporter(Agent):\n    method_options = {"report": {"resumable": True}}\n\n    def report(self, topic: str, tags: list[str] = []) -> str:\n        return step("write", str.upper, topic)\n',
            Invalid("OP204", 7, 52, 7, 54, "mutable default argument 'tags'", fixed=None),
        ),
    ]
