"""OP402: entry names nothing defined in the module."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers.rule import FamilyRule, Invalid


class RuleOP402(FamilyRule):
    """Each entry must name a function, class or bound method defined or imported in the module."""

    code = "OP402"
    name = "entry-undefined"
    summary = "entry names nothing defined in the module"
    family = "entries_family"
    VALID: ClassVar[list[str]] = [
        'def main() -> str:\n    return "ok"\n\n\nPROGRAM_ENTRIES = ["main"]\n',
    ]
    INVALID: ClassVar[list[tuple[str, Invalid]]] = [
        (
            'def main() -> str:\n    return "ok"\n\n\nPROGRAM_ENTRIES = ["mian"]\n',
            Invalid(
                "OP402",
                5,
                20,
                5,
                26,
                "entry 'mian' names nothing defined in this module",
                fixed=None,
            ),
        ),
    ]
