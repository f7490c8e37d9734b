"""OP301: list schema with other than exactly one element template."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers.rule import FamilyRule, Invalid


class RuleOP301(FamilyRule):
    """A list schema ``[subschema]`` has exactly one element: the template of every item."""

    code = "OP301"
    name = "list-schema-arity"
    summary = "list schema with other than exactly one element template"
    family = "schema_family"
    VALID: ClassVar[list[str]] = [
        'from openprogram import decision\n\n\ndef pick() -> object:\n    return decision.make("Pick", {"tag": ("Tag it", {"tags": [str]})})\n',
    ]
    INVALID: ClassVar[list[tuple[str, Invalid]]] = [
        (
            'from openprogram import decision\n\n\ndef pick() -> object:\n    return decision.make("Pick", {"tag": ("Tag it", {"tags": [str, int]})})\n',
            Invalid("OP301", 5, 62, 5, 72, "exactly one element template, got 2", fixed=None),
        ),
    ]
