"""OP305: 2-tuple in handler position whose second element is not a string."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers import schema_family
from openprogram_analyzers.rule import FamilyRule, Invalid, Valid


class RuleOP305(FamilyRule):
    """Why: In a decision menu a 2-tuple handler is read as ``(value, "description")``; a tuple
    value must be wrapped: ``((a, b), "description")``.

    Fix safety: No fix: the change needs the author's decision; ``# noqa: OP305`` suppresses it.
    """

    code = "OP305"
    name = "ambiguous-handler-tuple"
    summary = "2-tuple in handler position whose second element is not a string"
    family = schema_family.findings_for
    VALID: ClassVar[list[Valid]] = [
        Valid(
            """
            from openprogram import route


            def pick() -> str:
                return route("Pick", {"fast": "quick", "slow": "careful"})
            """
        ),
        Valid(
            """
            from openprogram import decision


            def pick() -> object:
                return decision.make("Pick", {"pair": ((1, 2), "a pair")})
            """
        ),
    ]
    INVALID: ClassVar[list[Invalid]] = [
        Invalid(
            """
            from openprogram import route


            def pick() -> str:
                return route("Pick", {"fast": 1})
            """,
            range=(5, 35, 5, 36),
            message="route's dict form maps each option to its description",
        ),
        Invalid(
            """
            from openprogram import decision


            def pick() -> object:
                return decision.make("Pick", {"pair": (1, 2)})
            """,
            range=(5, 44, 5, 48),
            message="a 2-tuple in handler position",
        ),
        Invalid(
            """
            from openprogram import decision


            def pick() -> object:
                return decision.make("Pick", [("plan", {"goal": str}), "stop"])
            """,
            range=(5, 36, 5, 57),
            message="list-form schema option 'plan' needs a description",
        ),
    ]
