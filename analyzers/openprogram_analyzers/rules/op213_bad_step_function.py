"""OP213: a lambda or nested function handed to step / workflow / parallel."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers.rule import FamilyRule, Invalid


class RuleOP213(FamilyRule):
    """A step function's code is saved and identified by its module-level name, so a lambda
    or a nested function (closure) cannot be one. The runtime rejects such a call with the
    same code and message (:mod:`openprogram.contract.steps`).
    """

    code = "OP213"
    name = "bad-step-function"
    summary = "lambda or nested function passed as a step / workflow / parallel function"
    family = "determinism"
    VALID: ClassVar[list[str]] = [
        'from openprogram import step\n\n\ndef double(n: int) -> int:\n    return 2 * n\n\n\ndef main() -> int:\n    return step("double", double, 1)\n',
    ]
    INVALID: ClassVar[list[tuple[str, Invalid]]] = [
        (
            'from openprogram import step\n\n\ndef main() -> int:\n    return step("double", lambda n: 2 * n, 1)\n',
            Invalid("OP213", 5, 27, 5, 42, "a lambda cannot be a step function", fixed=None),
        ),
    ]
