"""OP212: step / workflow / parallel branch name the runtime rejects (empty, '/' or '#')."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers import determinism
from openprogram_analyzers.rule import FamilyRule, Invalid, Valid


class RuleOP212(FamilyRule):
    """Why: A step name must be a non-empty string without ``/`` or ``#`` (they separate nested
    step keys and occurrences). The runtime rejects such a call with the same code and
    message (:mod:`openprogram.contract.steps`). A name bound by ``functools.partial``
    (``save = partial(step, "save")``; ``save(fn, x)`` is that step) is checked where
    the partial writes it.

    Fix safety: No fix: the change needs the author's decision; ``# noqa: OP212`` suppresses it.
    """

    code = "OP212"
    name = "invalid-step-name"
    summary = "step / workflow / parallel branch name that is empty or contains '/' or '#'"
    family = determinism.findings_for
    VALID: ClassVar[list[Valid]] = [
        Valid(
            """
            from openprogram import step


            def fetch(n: int) -> int:
                return n


            def main() -> int:
                return step("fetch page", fetch, 1)
            """
        ),
    ]
    INVALID: ClassVar[list[Invalid]] = [
        Invalid(
            """
            from openprogram import step


            def fetch(n: int) -> int:
                return n


            def main() -> int:
                return step("fetch/page", fetch, 1)
            """,
            range=(9, 17, 9, 29),
            message="must not contain '/' or '#'",
        ),
        Invalid(
            """
            from functools import partial

            from openprogram import step

            fetch_step = partial(step, "fetch/page")


            def fetch(n: int) -> int:
                return n


            def main() -> int:
                return fetch_step(fetch, 1)
            """,
            range=(5, 28, 5, 40),
            message="step name 'fetch/page' must not contain '/' or '#'",
        ),
    ]
