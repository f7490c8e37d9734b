"""OP106: tool-only option without tool=True."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers.rule import FamilyRule, Invalid


class RuleOP106(FamilyRule):
    """Tool registration options (``cache``, ``timeout``, ``name``...) only mean something
    when the method is a tool. The runtime raises the same message at class creation.
    """

    code = "OP106"
    name = "tool-only-option"
    summary = "tool-only option without tool=True"
    family = "options_family"
    VALID: ClassVar[list[str]] = [
        'from openprogram import Agent\n\n\nclass A(Agent):\n    method_options = {"f": {"tool": True, "cache": True}}\n\n    def f(self) -> None:\n        pass\n',
    ]
    INVALID: ClassVar[list[tuple[str, Invalid]]] = [
        (
            'from openprogram import Agent\n\n\nclass A(Agent):\n    method_options = {"f": {"cache": True}}\n\n    def f(self) -> None:\n        pass\n',
            Invalid(
                "OP106",
                5,
                29,
                5,
                36,
                "'cache' is a tool-only option but method 'f' is not a tool",
                fixed=None,
            ),
        ),
    ]
