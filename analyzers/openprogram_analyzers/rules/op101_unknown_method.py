"""OP101: method_options key names no method of the class."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers import options_family
from openprogram_analyzers.rule import FamilyRule, Invalid, Valid


class RuleOP101(FamilyRule):
    """Why: Every key of ``method_options`` must name a method of the class (or of a base class
    defined in the same module). A misspelt method name silently configures nothing.

    Fix safety: No fix: the change needs the author's decision; ``# noqa: OP101`` suppresses it.
    """

    code = "OP101"
    name = "unknown-method"
    summary = "method_options key names no method of the class"
    family = options_family.findings_for
    VALID: ClassVar[list[Valid]] = [
        Valid(
            """
            from openprogram import Agent


            class A(Agent):
                method_options = {"run_it": {"expose": "io"}}

                def run_it(self) -> str:
                    return "x"
            """
        ),
    ]
    INVALID: ClassVar[list[Invalid]] = [
        Invalid(
            """
            from openprogram import Agent


            class A(Agent):
                method_options = {"run_itt": {"expose": "io"}}

                def run_it(self) -> str:
                    return "x"
            """,
            range=(5, 23, 5, 32),
            message="names no method of the class; did you mean 'run_it'?",
        ),
    ]
