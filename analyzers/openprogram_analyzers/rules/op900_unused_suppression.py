"""OP900: unused suppression comment."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers.rule import Context, Invalid, Rule, Valid


class RuleOP900(Rule):
    """Why: A ``# noqa: OPxxx`` or ``# openprogram: ignore[OPxxx]`` comment that suppresses
    nothing is reported, so stale suppressions do not hide future problems.

    A suppression of OP201–OP208 inside a function that this file's own resumable
    functions do not reach in their orchestration body is not reported: such findings in
    a helper module come from the Programs that import it (``# noqa: OP205`` in
    ``helpers.py`` suppresses the finding ``openprogram-lint prog.py`` reports there),
    which a lint of the helper does not see.

    Fix safety: Safe: the fix removes the unused code from the comment (the whole directive
    when it was the only one); text after it stays a comment (``# noqa: OP203 why`` becomes
    ``# why``); ``--fix`` applies it.
    """

    code = "OP900"
    whole_module = True  # needs every definition / every finding of the module
    name = "unused-suppression"
    summary = "unused suppression comment"
    severity = "warning"
    VALID: ClassVar[list[Valid]] = [
        Valid(
            """
            def main() -> str:
                return "ok"
            """
        ),
        Valid(
            """
            import random


            def pick(items: list) -> str:  # a helper: a Program importing it may use this
                return random.choice(items)  # noqa: OP205
            """
        ),
    ]
    INVALID: ClassVar[list[Invalid]] = [
        Invalid(
            """
            def main() -> str:
                return "ok"  # noqa: OP203


            main.__agent_options__ = {"resumable": True}
            """,
            range=(2, 18, 2, 31),
            message="unused suppression of OP203",
            fixed="""
            def main() -> str:
                return "ok"


            main.__agent_options__ = {"resumable": True}
            """,
        ),
        # the explanation after the code stays a comment (never code)
        Invalid(
            """
            def main() -> str:
                return "ok"  # noqa: OP203, kept for the old runner


            main.__agent_options__ = {"resumable": True}
            """,
            range=(2, 18, 2, 31),
            message="unused suppression of OP203",
            fixed="""
            def main() -> str:
                return "ok"  # kept for the old runner


            main.__agent_options__ = {"resumable": True}
            """,
        ),
        # only the unused code goes: the others and the explanation stay
        Invalid(
            """
            def main() -> str:
                return "ok"  # openprogram: ignore[OP203, E501] legacy


            main.__agent_options__ = {"resumable": True}
            """,
            range=(2, 18, 2, 52),
            message="unused suppression of OP203",
            fixed="""
            def main() -> str:
                return "ok"  # openprogram: ignore[E501] legacy


            main.__agent_options__ = {"resumable": True}
            """,
        ),
    ]

    def check(self, ctx: Context) -> None:
        """Reported after suppressions are applied (see ``suppressions.py``)."""
