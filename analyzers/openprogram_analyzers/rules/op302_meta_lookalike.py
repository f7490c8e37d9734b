"""OP302: dict schema read as a meta-spec though it looks like a nested object."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers import schema_family
from openprogram_analyzers.rule import FamilyRule, Invalid, Valid


class RuleOP302(FamilyRule):
    """Why: A dict whose keys are all meta keys (``type``, ``description``, ``options``,
    ``fields``, ``items``) is a meta-spec; a nested dict as its ``type`` is a mistake.

    Fix safety: No fix: the change needs the author's decision; ``# noqa: OP302`` suppresses it.
    """

    code = "OP302"
    name = "meta-spec-lookalike"
    summary = "dict schema read as a meta-spec though it looks like a nested object"
    family = schema_family.findings_for
    VALID: ClassVar[list[Valid]] = [
        Valid(
            """
            from openprogram import decision


            def pick() -> object:
                return decision.make("Pick", {"go": ("Go", {"type": str, "description": "kind"})})
            """
        ),
    ]
    INVALID: ClassVar[list[Invalid]] = [
        Invalid(
            """
            from openprogram import decision


            def pick() -> object:
                return decision.make("Pick", {"go": ("Go", {"kind": {"type": {"a": str}}})})
            """,
            range=(5, 66, 5, 76),
            message="read as a meta-spec",
        ),
    ]
