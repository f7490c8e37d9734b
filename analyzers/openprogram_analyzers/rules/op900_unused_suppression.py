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

    Fix safety: Safe: the fix removes the unused code from the comment (the whole comment
    when it was the only one); ``--fix`` applies it.
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
        ),
    ]

    def check(self, ctx: Context) -> None:
        """Reported after suppressions are applied (see ``suppressions.py``)."""
