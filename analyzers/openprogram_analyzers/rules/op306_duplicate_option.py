"""OP306: duplicate option name in a decision menu."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers.rule import FamilyRule, Invalid


class RuleOP306(FamilyRule):
    """Option names of a menu must be unique; the model could not tell them apart."""

    code = "OP306"
    name = "duplicate-option"
    summary = "duplicate option name in a decision menu"
    family = "schema_family"
    VALID: ClassVar[list[str]] = [
        'from openprogram import decision\n\n\ndef pick() -> object:\n    return decision.make("Pick", ["yes", "no"])\n',
    ]
    INVALID: ClassVar[list[tuple[str, Invalid]]] = [
        (
            'from openprogram import decision\n\n\ndef pick() -> object:\n    return decision.make("Pick", ["yes", "no", "yes"])\n',
            Invalid("OP306", 5, 48, 5, 53, "duplicate option name 'yes'", fixed=None),
        ),
    ]
