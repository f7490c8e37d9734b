"""OP303: unsupported type in a schema."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers.rule import FamilyRule, Invalid


class RuleOP303(FamilyRule):
    """Schema types are ``str``, ``int``, ``float``, ``bool``, ``list``, ``dict``, a
    description string, a one-element list or a nested dict.
    """

    code = "OP303"
    name = "unsupported-schema-type"
    summary = "unsupported type in a schema"
    family = "schema_family"
    VALID: ClassVar[list[str]] = [
        'from openprogram import decision\n\n\ndef pick() -> object:\n    return decision.make("Pick", {"go": ("Go", {"n": int})})\n',
    ]
    INVALID: ClassVar[list[tuple[str, Invalid]]] = [
        (
            'from openprogram import decision\n\n\ndef pick() -> object:\n    return decision.make("Pick", {"go": ("Go", {"n": complex})})\n',
            Invalid("OP303", 5, 54, 5, 61, "unsupported schema type complex", fixed=None),
        ),
    ]
