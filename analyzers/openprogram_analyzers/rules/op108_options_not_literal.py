"""OP108: method_options not a literal dict (cannot be checked; info)."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers import options_family
from openprogram_analyzers.rule import FamilyRule, Invalid, Valid


class RuleOP108(FamilyRule):
    """Why: A computed ``method_options`` cannot be checked statically; the runtime still checks
    it when the class is created.

    Fix safety: No fix: the change needs the author's decision; ``# noqa: OP108`` suppresses it.
    """

    code = "OP108"
    name = "method-options-not-literal"
    summary = "method_options not a literal dict (cannot be checked; info)"
    severity = "info"
    family = options_family.findings_for
    VALID: ClassVar[list[Valid]] = [
        Valid(
            """
            from openprogram import Agent


            class A(Agent):
                method_options = {"f": {}}

                def f(self) -> None:
                    pass
            """
        ),
    ]
    INVALID: ClassVar[list[Invalid]] = [
        Invalid(
            """
            from openprogram import Agent

            BASE = {"f": {}}


            class A(Agent):
                method_options = dict(BASE)

                def f(self) -> None:
                    pass
            """,
            range=(7, 22, 7, 32),
            message="method_options is not a literal dict",
        ),
    ]
