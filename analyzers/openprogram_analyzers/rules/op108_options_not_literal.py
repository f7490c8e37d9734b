"""OP108: method_options not a literal dict (cannot be checked; info)."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers.rule import FamilyRule, Invalid


class RuleOP108(FamilyRule):
    """A computed ``method_options`` cannot be checked statically; the runtime still checks
    it when the class is created.
    """

    code = "OP108"
    name = "method-options-not-literal"
    summary = "method_options not a literal dict (cannot be checked; info)"
    severity = "info"
    family = "options_family"
    VALID: ClassVar[list[str]] = [
        'from openprogram import Agent\n\n\nclass A(Agent):\n    method_options = {"f": {}}\n\n    def f(self) -> None:\n        pass\n',
    ]
    INVALID: ClassVar[list[tuple[str, Invalid]]] = [
        (
            'from openprogram import Agent\n\nBASE = {"f": {}}\n\n\nclass A(Agent):\n    method_options = dict(BASE)\n\n    def f(self) -> None:\n        pass\n',
            Invalid("OP108", 7, 22, 7, 32, "method_options is not a literal dict", fixed=None),
        ),
    ]
