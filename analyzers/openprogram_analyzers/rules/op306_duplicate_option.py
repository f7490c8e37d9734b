"""OP306: duplicate option name in a decision menu."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers import schema_family
from openprogram_analyzers.rule import FamilyRule, Invalid, Valid


class RuleOP306(FamilyRule):
    """Why: Option names of a menu must be unique, non-empty strings; the model could not
    tell them apart.

    Fix safety: No fix: the change needs the author's decision; ``# noqa: OP306`` suppresses it.
    """

    code = "OP306"
    name = "duplicate-option"
    summary = "duplicate option name in a decision menu"
    family = schema_family.findings_for
    VALID: ClassVar[list[Valid]] = [
        Valid(
            """
            from openprogram import decision


            def pick() -> object:
                return decision.make("Pick", ["yes", "no"])
            """
        ),
    ]
    INVALID: ClassVar[list[Invalid]] = [
        Invalid(
            """
            from openprogram import route


            def pick() -> str:
                return route("Pick", ["same", "same"])
            """,
            range=(5, 35, 5, 41),
            message="duplicate option name 'same'",
        ),
        Invalid(
            """
            from openprogram import decision


            def pick() -> object:
                return decision.make("Pick", ["yes", "no", "yes"])
            """,
            range=(5, 48, 5, 53),
            message="duplicate option name 'yes'",
        ),
        Invalid(
            """
            from openprogram import decision


            def pick() -> object:
                return decision.make("Pick", ["yes", ""])
            """,
            range=(5, 42, 5, 44),
            message="option names must be non-empty strings",
        ),
        Invalid(
            """
            from openprogram import decision


            def route_it() -> object:
                pick = decision.make
                return pick("Route", ["refund", "refund"])
            """,
            range=(6, 37, 6, 45),
            message="duplicate option name 'refund'",
        ),
        Invalid(
            """
            from openprogram import Runtime

            rt = Runtime("scripted:echo")


            def route_it() -> object:
                return rt.exec("Route", choices=["refund", "refund"])
            """,
            range=(7, 48, 7, 56),
            message="duplicate option name 'refund'",
        ),
        Invalid(
            """
            from openprogram import decision

            MENU = ["refund", "escalate", "refund"]


            def triage(q: str) -> object:
                return decision.make(q, MENU)
            """,
            range=(3, 31, 3, 39),
            message="duplicate option name 'refund' in a decision menu",
        ),
    ]
