"""OP206: side effect outside a step: model call, network, file or subprocess I/O."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers.rule import FamilyRule, Invalid


class RuleOP206(FamilyRule):
    """Side effects in the orchestration body run again on every resume. Put model calls,
    network, file and subprocess work into ``step('name', fn, ...)``.
    """

    code = "OP206"
    name = "side-effect-outside-step"
    summary = "side effect outside a step: model call, network, file or subprocess I/O"
    family = "determinism"
    VALID: ClassVar[list[str]] = [
        'from openprogram import llm\n\nfrom openprogram import Agent, step\n\n\nclass Reporter(Agent):\n    method_options = {"report": {"resumable": True}}\n\n    def report(self, topic: str) -> str:\n        return step("draft", llm, topic)\n',
    ]
    INVALID: ClassVar[list[tuple[str, Invalid]]] = [
        (
            'from openprogram import llm\n\nfrom openprogram import Agent, step\n\n\nclass Reporter(Agent):\n    method_options = {"report": {"resumable": True}}\n\n    def report(self, topic: str) -> str:\n        return llm(topic)\n',
            Invalid("OP206", 10, 16, 10, 26, "model call (openprogram.llm)", fixed=None),
        ),
    ]
