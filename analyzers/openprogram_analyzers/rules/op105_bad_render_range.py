"""OP105: malformed render_range."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers import options_family
from openprogram_analyzers.rule import FamilyRule, Invalid, Valid


class RuleOP105(FamilyRule):
    """Why: ``render_range`` is ``{"callers": int >= 0 or None, "subcalls": int >= -1}``.

    Fix safety: No fix: the change needs the author's decision; ``# noqa: OP105`` suppresses it.
    """

    code = "OP105"
    name = "malformed-render-range"
    summary = "malformed render_range"
    family = options_family.findings_for
    VALID: ClassVar[list[Valid]] = [
        Valid(
            """
            from openprogram import Agent


            class A(Agent):
                method_options = {"f": {"render_range": {"callers": 0, "subcalls": -1}}}

                def f(self) -> None:
                    pass
            """
        ),
    ]
    INVALID: ClassVar[list[Invalid]] = [
        Invalid(
            """
            from openprogram import Agent


            class A(Agent):
                method_options = {"f": {"render_range": {"callers": -2}}}

                def f(self) -> None:
                    pass
            """,
            range=(5, 57, 5, 59),
            message="'callers' must be an int >= 0 or None, got -2",
        ),
    ]
