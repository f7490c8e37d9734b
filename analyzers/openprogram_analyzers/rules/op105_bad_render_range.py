"""OP105: malformed render_range."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers.rule import FamilyRule, Invalid


class RuleOP105(FamilyRule):
    """``render_range`` is ``{"callers": int >= 0 or None, "subcalls": int >= -1}``."""

    code = "OP105"
    name = "malformed-render-range"
    summary = "malformed render_range"
    family = "options_family"
    VALID: ClassVar[list[str]] = [
        'from openprogram import Agent\n\n\nclass A(Agent):\n    method_options = {"f": {"render_range": {"callers": 0, "subcalls": -1}}}\n\n    def f(self) -> None:\n        pass\n',
    ]
    INVALID: ClassVar[list[tuple[str, Invalid]]] = [
        (
            'from openprogram import Agent\n\n\nclass A(Agent):\n    method_options = {"f": {"render_range": {"callers": -2}}}\n\n    def f(self) -> None:\n        pass\n',
            Invalid(
                "OP105", 5, 57, 5, 59, "'callers' must be an int >= 0 or None, got -2", fixed=None
            ),
        ),
    ]
