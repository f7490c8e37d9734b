"""OP301: list schema with other than exactly one element template."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers import schema_family
from openprogram_analyzers.rule import FamilyRule, Invalid, Valid


class RuleOP301(FamilyRule):
    """Why: A list schema ``[subschema]`` has exactly one element: the template of every item.

    Fix safety: No fix: the change needs the author's decision; ``# noqa: OP301`` suppresses it.
    """

    code = "OP301"
    name = "list-schema-arity"
    summary = "list schema with other than exactly one element template"
    family = schema_family.findings_for
    VALID: ClassVar[list[Valid]] = [
        Valid(
            """
            from openprogram import decision


            def pick() -> object:
                return decision.make("Pick", {"tag": ("Tag it", {"tags": [str]})})
            """
        ),
    ]
    INVALID: ClassVar[list[Invalid]] = [
        Invalid(
            """
            from openprogram import decision


            def pick() -> object:
                return decision.make("Pick", {"tag": ("Tag it", {"tags": [str, int]})})
            """,
            range=(5, 62, 5, 72),
            message="exactly one element template, got 2",
        ),
        Invalid(
            """
            from openprogram import Agent

            triage = Agent()


            def pick(ticket: str) -> object:
                return triage(ticket, choices={"tag": ("Tag it", {"tags": []})})
            """,
            range=(7, 63, 7, 65),
            message="exactly one element template, got 0",
        ),
    ]
