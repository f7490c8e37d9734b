"""OP404: duplicate entry."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers.rule import FamilyRule, Invalid


class RuleOP404(FamilyRule):
    """Each entry is listed once."""

    code = "OP404"
    name = "duplicate-entry"
    summary = "duplicate entry"
    family = "entries_family"
    VALID: ClassVar[list[str]] = [
        'def main() -> str:\n    return "ok"\n\n\nPROGRAM_ENTRIES = ["main"]\n',
    ]
    INVALID: ClassVar[list[tuple[str, Invalid]]] = [
        (
            'def main() -> str:\n    return "ok"\n\n\nPROGRAM_ENTRIES = ["main", main]\n',
            Invalid("OP404", 5, 28, 5, 32, "duplicate entry 'main'", fixed=None),
        ),
    ]
