"""OP208: resumable on an async function or a generator; third-party module or class object referenced by a step dependency."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers.rule import FamilyRule, Invalid


class RuleOP208(FamilyRule):
    """Resumable orchestrations are plain synchronous functions, and only standard-library
    module and class objects can be restored by identity.
    """

    code = "OP208"
    name = "unrestorable-function-or-object"
    summary = "resumable on an async function or a generator; third-party module or class object referenced by a step dependency"
    family = "determinism"
    VALID: ClassVar[list[str]] = [
        'from openprogram import Agent, step\n\n\nclass Reporter(Agent):\n    method_options = {"report": {"resumable": True}}\n\n    def report(self, topic: str) -> str:\n        return step("write", str.upper, topic)\n',
    ]
    INVALID: ClassVar[list[tuple[str, Invalid]]] = [
        (
            'from openprogram import Agent, step\n\n\nclass Reporter(Agent):\n    method_options = {"report": {"resumable": True}}\n\n    async def report(self, topic: str) -> str:\n        return step("write", str.upper, topic)\n',
            Invalid("OP208", 7, 15, 7, 21, "is resumable but is an async function", fixed=None),
        ),
    ]
