"""OP302: dict schema read as a meta-spec though it looks like a nested object."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers.rule import FamilyRule, Invalid


class RuleOP302(FamilyRule):
    """A dict whose keys are all meta keys (``type``, ``description``, ``options``,
    ``fields``, ``items``) is a meta-spec; a nested dict as its ``type`` is a mistake.
    """

    code = "OP302"
    name = "meta-spec-lookalike"
    summary = "dict schema read as a meta-spec though it looks like a nested object"
    family = "schema_family"
    VALID: ClassVar[list[str]] = [
        'from openprogram import decision\n\n\ndef pick() -> object:\n    return decision.make("Pick", {"go": ("Go", {"type": str, "description": "kind"})})\n',
    ]
    INVALID: ClassVar[list[tuple[str, Invalid]]] = [
        (
            'from openprogram import decision\n\n\ndef pick() -> object:\n    return decision.make("Pick", {"go": ("Go", {"kind": {"type": {"a": str}}})})\n',
            Invalid("OP302", 5, 66, 5, 76, "read as a meta-spec", fixed=None),
        ),
    ]
