"""OP101: method_options key names no method of the class."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers.rule import FamilyRule, Invalid


class RuleOP101(FamilyRule):
    """Every key of ``method_options`` must name a method of the class (or of a base class
    defined in the same module). A misspelt method name silently configures nothing.
    """

    code = "OP101"
    name = "unknown-method"
    summary = "method_options key names no method of the class"
    family = "options_family"
    VALID: ClassVar[list[str]] = [
        'from openprogram import Agent\n\n\nclass A(Agent):\n    method_options = {"run_it": {"expose": "io"}}\n\n    def run_it(self) -> str:\n        return "x"\n',
    ]
    INVALID: ClassVar[list[tuple[str, Invalid]]] = [
        (
            'from openprogram import Agent\n\n\nclass A(Agent):\n    method_options = {"run_itt": {"expose": "io"}}\n\n    def run_it(self) -> str:\n        return "x"\n',
            Invalid(
                "OP101",
                5,
                23,
                5,
                32,
                "names no method of the class; did you mean 'run_it'?",
                fixed=None,
            ),
        ),
    ]
