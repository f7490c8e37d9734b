"""OP205: non-deterministic call outside a step."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers.rule import FamilyRule, Invalid


class RuleOP205(FamilyRule):
    """A resumed run replays the orchestration body: ``time.time()``, ``random.random()``,
    ``uuid.uuid4()``... return different values then. Call them inside a step.
    """

    code = "OP205"
    name = "non-deterministic-call"
    summary = "non-deterministic call outside a step"
    family = "determinism"
    VALID: ClassVar[list[str]] = [
        'import time\n\nfrom openprogram import Agent, step\n\n\nclass Reporter(Agent):\n    method_options = {"report": {"resumable": True}}\n\n    def report(self, topic: str) -> float:\n        return step("stamp", time.time)\n',
    ]
    INVALID: ClassVar[list[tuple[str, Invalid]]] = [
        (
            'import time\n\nfrom openprogram import Agent, step\n\n\nclass Reporter(Agent):\n    method_options = {"report": {"resumable": True}}\n\n    def report(self, topic: str) -> float:\n        started = time.time()\n        return step("stamp", str, started)\n',
            Invalid("OP205", 10, 19, 10, 30, "non-deterministic call time.time()", fixed=None),
        ),
    ]
