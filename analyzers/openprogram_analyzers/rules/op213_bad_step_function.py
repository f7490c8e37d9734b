"""OP213: a lambda or nested function handed to step / workflow / parallel."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers import determinism
from openprogram_analyzers.rule import FamilyRule, Invalid, Valid


class RuleOP213(FamilyRule):
    """Why: A step function's code is saved and identified by its module-level name, so a lambda
    or a nested function (closure) cannot be one. The runtime rejects such a call with the
    same code and message (:mod:`openprogram.contract.steps`).

    Fix safety: No fix: the change needs the author's decision; ``# noqa: OP213`` suppresses it.
    """

    code = "OP213"
    name = "bad-step-function"
    summary = "lambda or nested function passed as a step / workflow / parallel function"
    family = determinism.findings_for
    VALID: ClassVar[list[Valid]] = [
        Valid(
            """
            from openprogram import step


            def double(n: int) -> int:
                return 2 * n


            def main() -> int:
                return step("double", double, 1)
            """
        ),
    ]
    INVALID: ClassVar[list[Invalid]] = [
        Invalid(
            """
            from openprogram import step


            def main() -> int:
                return step("double", lambda n: 2 * n, 1)
            """,
            range=(5, 27, 5, 42),
            message="a lambda cannot be a step function",
        ),
    ]
