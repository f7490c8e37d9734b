"""OP103: option value of the wrong type."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers import options_family
from openprogram_analyzers.rule import FamilyRule, Invalid, Valid


class RuleOP103(FamilyRule):
    """Why: Each option has a type in the option table (``bool``, ``str``, ``float``...).
    ``bool`` is not accepted where an ``int`` is expected.

    Fix safety: No fix: the change needs the author's decision; ``# noqa: OP103`` suppresses it.
    """

    code = "OP103"
    name = "option-wrong-type"
    summary = "option value of the wrong type"
    family = options_family.findings_for
    VALID: ClassVar[list[Valid]] = [
        Valid(
            """
            from openprogram import Agent


            class A(Agent):
                method_options = {"f": {"tool": True, "timeout": 2}}

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
                method_options = {"f": {"tool": True, "timeout": "2s"}}

                def f(self) -> None:
                    pass
            """,
            range=(5, 54, 5, 58),
            message="method_options['f']['timeout'] must be float or None, got str '2s'",
        ),
    ]
