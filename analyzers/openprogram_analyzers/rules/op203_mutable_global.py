"""OP203: module global that is rebound or mutated in place, used by a resumable function or its helpers."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers.rule import FamilyRule, Invalid


class RuleOP203(FamilyRule):
    """State kept in a module global is lost when a run resumes in a new process. Pass it
    through step inputs and results instead.
    """

    code = "OP203"
    name = "mutable-global"
    summary = "module global that is rebound or mutated in place, used by a resumable function or its helpers"
    family = "determinism"
    VALID: ClassVar[list[str]] = [
        'LIMIT = 3\n\nfrom openprogram import Agent, step\n\n\nclass Reporter(Agent):\n    method_options = {"report": {"resumable": True}}\n\n    def report(self, topic: str) -> str:\n        return step("write", write, topic, LIMIT)\n\n\ndef write(topic: str, n: int) -> str:\n    return topic * n\n',
    ]
    INVALID: ClassVar[list[tuple[str, Invalid]]] = [
        (
            'from openprogram import Agent, step\n\nSEEN: list[str] = []\n\n\nclass Reporter(Agent):\n    method_options = {"report": {"resumable": True}}\n\n    def report(self, topic: str) -> str:\n        SEEN.append(topic)\n        return step("write", str.upper, topic)\n',
            Invalid("OP203", 10, 9, 10, 13, "uses module global 'SEEN'", fixed=None),
        ),
    ]
