"""OP304: meta-spec options that is not a non-empty literal list, or whose values do not match its type."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers import schema_family
from openprogram_analyzers.rule import FamilyRule, Invalid, Valid


class RuleOP304(FamilyRule):
    """Why: ``options`` of a meta-spec is a non-empty list of values of its ``type``.

    Fix safety: No fix: the change needs the author's decision; ``# noqa: OP304`` suppresses it.
    """

    code = "OP304"
    name = "bad-meta-options"
    summary = "meta-spec options that is not a non-empty literal list, or whose values do not match its type"
    family = schema_family.findings_for
    VALID: ClassVar[list[Valid]] = [
        Valid(
            """
            from openprogram import decision


            def pick() -> object:
                return decision.make("Pick", {"go": ("Go", {"n": {"type": int, "options": [1, 2]}})})
            """
        ),
    ]
    INVALID: ClassVar[list[Invalid]] = [
        Invalid(
            """
            from openprogram import decision


            def pick() -> object:
                return decision.make("Pick", {"go": ("Go", {"n": {"type": int, "options": [1, "2"]}})})
            """,
            range=(5, 83, 5, 86),
            message="does not match type int",
        ),
    ]
