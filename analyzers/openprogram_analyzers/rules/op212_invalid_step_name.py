"""OP212: step / workflow / parallel branch name the runtime rejects (empty, '/' or '#')."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers.rule import FamilyRule, Invalid


class RuleOP212(FamilyRule):
    """A step name must be a non-empty string without ``/`` or ``#`` (they separate nested
    step keys and occurrences). The runtime rejects such a call with the same code and
    message (:mod:`openprogram.contract.steps`).
    """

    code = "OP212"
    name = "invalid-step-name"
    summary = "step / workflow / parallel branch name that is empty or contains '/' or '#'"
    family = "determinism"
    VALID: ClassVar[list[str]] = [
        'from openprogram import step\n\n\ndef fetch(n: int) -> int:\n    return n\n\n\ndef main() -> int:\n    return step("fetch page", fetch, 1)\n',
    ]
    INVALID: ClassVar[list[tuple[str, Invalid]]] = [
        (
            'from openprogram import step\n\n\ndef fetch(n: int) -> int:\n    return n\n\n\ndef main() -> int:\n    return step("fetch/page", fetch, 1)\n',
            Invalid("OP212", 9, 17, 9, 29, "must not contain '/' or '#'", fixed=None),
        ),
    ]
