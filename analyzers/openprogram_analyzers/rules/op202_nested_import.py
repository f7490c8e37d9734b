"""OP202: import inside a helper or resumable function."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers.rule import FamilyRule, Invalid


class RuleOP202(FamilyRule):
    """Step dependencies are module-level imports; an import inside the resumable function or
    a helper is rejected before the run.
    """

    code = "OP202"
    name = "import-inside-function"
    summary = "import inside a helper or resumable function"
    family = "determinism"
    VALID: ClassVar[list[str]] = [
        'from openprogram import Agent, step\n\n\nclass Reporter(Agent):\n    method_options = {"report": {"resumable": True}}\n\n    def report(self, topic: str) -> str:\n        return step("write", write, topic)\n\n\ndef write(topic: str) -> str:\n    return topic.upper()\n',
    ]
    INVALID: ClassVar[list[tuple[str, Invalid]]] = [
        (
            'from openprogram import Agent, step\n\n\nclass Reporter(Agent):\n    method_options = {"report": {"resumable": True}}\n\n    def report(self, topic: str) -> str:\n        return step("write", write, topic)\n\n\ndef write(topic: str) -> str:\n    import json\n\n    return json.dumps(topic)\n',
            Invalid("OP202", 12, 5, 12, 16, "import inside step dependency 'write'", fixed=None),
        ),
    ]
