"""OP103: option value of the wrong type."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers.rule import FamilyRule, Invalid


class RuleOP103(FamilyRule):
    """Each option has a type in the option table (``bool``, ``str``, ``float``...).
    ``bool`` is not accepted where an ``int`` is expected.
    """

    code = "OP103"
    name = "option-wrong-type"
    summary = "option value of the wrong type"
    family = "options_family"
    VALID: ClassVar[list[str]] = [
        'from openprogram import Agent\n\n\nclass A(Agent):\n    method_options = {"f": {"tool": True, "timeout": 2}}\n\n    def f(self) -> None:\n        pass\n',
    ]
    INVALID: ClassVar[list[tuple[str, Invalid]]] = [
        (
            'from openprogram import Agent\n\n\nclass A(Agent):\n    method_options = {"f": {"tool": True, "timeout": "2s"}}\n\n    def f(self) -> None:\n        pass\n',
            Invalid(
                "OP103",
                5,
                54,
                5,
                58,
                "method_options['f']['timeout'] must be float or None, got str '2s'",
                fixed=None,
            ),
        ),
    ]
