"""OP303: unsupported type in a schema."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers import schema_family
from openprogram_analyzers.rule import FamilyRule, Invalid, Valid


class RuleOP303(FamilyRule):
    """Why: Schema types are ``str``, ``int``, ``float``, ``bool``, ``list``, ``dict``, a
    description string, a one-element list or a nested dict.

    Fix safety: No fix: the change needs the author's decision; ``# noqa: OP303`` suppresses it.
    """

    code = "OP303"
    name = "unsupported-schema-type"
    summary = "unsupported type in a schema"
    family = schema_family.findings_for
    VALID: ClassVar[list[Valid]] = [
        Valid(
            """
            from openprogram import decision


            def pick() -> object:
                return decision.make("Pick", {"go": ("Go", {"n": int})})
            """
        ),
    ]
    INVALID: ClassVar[list[Invalid]] = [
        Invalid(
            """
            from openprogram import decision


            def pick() -> object:
                return decision.make("Pick", {"go": ("Go", {"n": complex})})
            """,
            range=(5, 54, 5, 61),
            message="unsupported schema type complex",
        ),
        Invalid(
            """
            from openprogram import decision


            def pick() -> object:
                return decision.make("Pick", {"go": ("Go", {"ids": list[int]})})
            """,
            range=(5, 56, 5, 65),
            message="unsupported schema type list[int]: use",
        ),
    ]
