"""OP107: input metadata: unknown field, parameter not in the signature, options not a list."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers.rule import FamilyRule, Invalid


class RuleOP107(FamilyRule):
    """``input`` maps parameter names of the method to UI metadata with the fields
    ``description``, ``placeholder``, ``multiline``, ``options`` (a list) and ``hidden``.
    """

    code = "OP107"
    name = "bad-input-metadata"
    summary = "input metadata: unknown field, parameter not in the signature, options not a list"
    family = "options_family"
    VALID: ClassVar[list[str]] = [
        'from openprogram import Agent\n\n\nclass A(Agent):\n    method_options = {"f": {"input": {"x": {"options": ["a", "b"]}}}}\n\n    def f(self, x: str) -> None:\n        pass\n',
    ]
    INVALID: ClassVar[list[tuple[str, Invalid]]] = [
        (
            'from openprogram import Agent\n\n\nclass A(Agent):\n    method_options = {"f": {"input": {"y": {"description": "Y"}}}}\n\n    def f(self, x: str) -> None:\n        pass\n',
            Invalid(
                "OP107", 5, 39, 5, 42, "names 'y', which is not a parameter of 'f'", fixed=None
            ),
        ),
    ]
