"""OP106: tool-only option without tool=True."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers import options_family
from openprogram_analyzers.rule import FamilyRule, Invalid, Valid


class RuleOP106(FamilyRule):
    """Why: Tool registration options (``cache``, ``timeout``, ``name``...) only mean something
    when the method is a tool. The runtime raises the same message at class creation.

    Fix safety: No fix: the change needs the author's decision; ``# noqa: OP106`` suppresses it.
    """

    code = "OP106"
    name = "tool-only-option"
    summary = "tool-only option without tool=True"
    family = options_family.findings_for
    VALID: ClassVar[list[Valid]] = [
        Valid(
            """
            from openprogram import Agent


            class A(Agent):
                method_options = {"f": {"tool": True}}

                def f(self) -> None:
                    pass


            class B(A):
                method_options = {"f": {"cache": True}}
            """
        ),
        Valid(
            """
            from openprogram import Agent


            class A(Agent):
                method_options = {"f": {"tool": True, "cache": True}}

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
                method_options = {"f": {"cache": True}}

                def f(self) -> None:
                    pass
            """,
            range=(5, 29, 5, 36),
            message="'cache' is a tool-only option but method 'f' is not a tool",
        ),
    ]
