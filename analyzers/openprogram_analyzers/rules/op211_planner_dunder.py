"""OP211: Planner code: a dunder name or attribute (``().__class__``)."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers.rule import Context, Invalid, Rule, Valid


class RuleOP211(Rule):
    """Why: Dunder names and attributes (``__class__``, ``__globals__``, ``__builtins__``...)
    are the usual ways out of the restricted namespace Planner code runs in (SPEC §2.9),
    so Planner code may not use them. Reported by ``check_planner_code``, which the
    engine runs before executing Planner code; the examples use the injected name ``llm``.

    Fix safety: No fix: the Planner rewrites its code; Planner code is never suppressed.
    """

    code = "OP211"
    name = "planner-dunder"
    summary = "Planner code: a dunder name or attribute"
    VALID: ClassVar[list[Valid]] = [
        Valid(
            """
            def workflow():
                answer = llm("hi")
                return answer.strip()
            """
        ),
    ]
    INVALID: ClassVar[list[Invalid]] = [
        Invalid(
            """
            def workflow():
                return ().__class__
            """,
            range=(2, 15, 2, 24),
            message="dunder attribute '__class__' is not allowed",
        ),
        Invalid(
            """
            def workflow():
                return __builtins__
            """,
            range=(2, 12, 2, 24),
            message="dunder name '__builtins__' is not allowed",
        ),
    ]

    def check(self, ctx: Context) -> None:
        """Reported by ``check_planner_code`` only (Planner code is not a Program file)."""
