"""OP304: meta-spec options that is not a non-empty literal list, or whose values do not match its type."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers.rule import FamilyRule, Invalid


class RuleOP304(FamilyRule):
    """``options`` of a meta-spec is a non-empty list of values of its ``type``."""

    code = "OP304"
    name = "bad-meta-options"
    summary = "meta-spec options that is not a non-empty literal list, or whose values do not match its type"
    family = "schema_family"
    VALID: ClassVar[list[str]] = [
        'from openprogram import decision\n\n\ndef pick() -> object:\n    return decision.make("Pick", {"go": ("Go", {"n": {"type": int, "options": [1, 2]}})})\n',
    ]
    INVALID: ClassVar[list[tuple[str, Invalid]]] = [
        (
            'from openprogram import decision\n\n\ndef pick() -> object:\n    return decision.make("Pick", {"go": ("Go", {"n": {"type": int, "options": [1, "2"]}})})\n',
            Invalid("OP304", 5, 83, 5, 86, "does not match type int", fixed=None),
        ),
    ]
