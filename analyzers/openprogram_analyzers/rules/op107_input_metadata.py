"""OP107: input metadata: unknown field, parameter not in the signature, options not a list."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers import options_family
from openprogram_analyzers.rule import FamilyRule, Invalid, Valid


class RuleOP107(FamilyRule):
    """Why: ``input`` maps parameter names of the method to UI metadata with the fields
    ``description``, ``placeholder``, ``multiline``, ``options`` (a list) and ``hidden``.

    Fix safety: No fix: the change needs the author's decision; ``# noqa: OP107`` suppresses it.
    """

    code = "OP107"
    name = "bad-input-metadata"
    summary = "input metadata: unknown field, parameter not in the signature, options not a list"
    family = options_family.findings_for
    VALID: ClassVar[list[Valid]] = [
        Valid(
            """
            from openprogram import Agent


            class A(Agent):
                method_options = {"f": {"input": {"x": {"options": ["a", "b"]}}}}

                def f(self, x: str) -> None:
                    pass
            """
        ),
    ]
    INVALID: ClassVar[list[Invalid]] = [
        Invalid(
            """
            from openprogram import Agent


            class A(Agent):
                method_options = {"f": {"input": {"y": {"description": "Y"}}}}

                def f(self, x: str) -> None:
                    pass
            """,
            range=(5, 39, 5, 42),
            message="names 'y', which is not a parameter of 'f'",
        ),
    ]
