"""OP401: PROGRAM_ENTRIES is not a literal list/tuple."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers.rule import FamilyRule, Invalid


class RuleOP401(FamilyRule):
    """Entries are found without running the module, so ``PROGRAM_ENTRIES`` is a literal list
    or tuple of names or functions.
    """

    code = "OP401"
    name = "entries-not-literal"
    summary = "PROGRAM_ENTRIES is not a literal list/tuple"
    family = "entries_family"
    VALID: ClassVar[list[str]] = [
        'def main() -> str:\n    return "ok"\n\n\nPROGRAM_ENTRIES = ["main"]\n',
    ]
    INVALID: ClassVar[list[tuple[str, Invalid]]] = [
        (
            'def main() -> str:\n    return "ok"\n\n\nPROGRAM_ENTRIES = list(["main"])\n',
            Invalid(
                "OP401", 5, 19, 5, 33, "PROGRAM_ENTRIES is not a literal list or tuple", fixed=None
            ),
        ),
    ]
