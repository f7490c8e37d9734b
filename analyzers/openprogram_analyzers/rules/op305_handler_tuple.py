"""OP305: 2-tuple in handler position whose second element is not a string."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers.rule import FamilyRule, Invalid


class RuleOP305(FamilyRule):
    """In a decision menu a 2-tuple handler is read as ``(value, "description")``; a tuple
    value must be wrapped: ``((a, b), "description")``.
    """

    code = "OP305"
    name = "ambiguous-handler-tuple"
    summary = "2-tuple in handler position whose second element is not a string"
    family = "schema_family"
    VALID: ClassVar[list[str]] = [
        'from openprogram import decision\n\n\ndef pick() -> object:\n    return decision.make("Pick", {"pair": ((1, 2), "a pair")})\n',
    ]
    INVALID: ClassVar[list[tuple[str, Invalid]]] = [
        (
            'from openprogram import decision\n\n\ndef pick() -> object:\n    return decision.make("Pick", {"pair": (1, 2)})\n',
            Invalid("OP305", 5, 44, 5, 48, "a 2-tuple in handler position", fixed=None),
        ),
    ]
