"""OP201: dynamic import / exec / eval / compile / importlib in a resumable function or its helpers."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers.rule import FamilyRule, Invalid


class RuleOP201(FamilyRule):
    """Resumable runs save the source of the function and its helpers. Dynamic imports and
    generated code cannot be saved, so they are rejected before any step runs.
    """

    code = "OP201"
    name = "dynamic-code"
    summary = (
        "dynamic import / exec / eval / compile / importlib in a resumable function or its helpers"
    )
    family = "determinism"
    VALID: ClassVar[list[str]] = [
        'from openprogram import Agent, step\n\n\nclass Reporter(Agent):\n    method_options = {"report": {"resumable": True}}\n\n    def report(self, topic: str) -> str:\n        return step("write", write, topic)\n\n\ndef write(topic: str) -> str:\n    return topic\n',
    ]
    INVALID: ClassVar[list[tuple[str, Invalid]]] = [
        (
            'from openprogram import Agent, step\n\n\nclass Reporter(Agent):\n    method_options = {"report": {"resumable": True}}\n\n    def report(self, code: str) -> str:\n        return eval(code)\n',
            Invalid("OP201", 8, 16, 8, 20, "dynamic code (eval)", fixed=None),
        ),
    ]
