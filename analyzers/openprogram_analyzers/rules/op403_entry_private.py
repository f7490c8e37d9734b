"""OP403: entry is private, a lambda or a generator."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers.rule import FamilyRule, Invalid


class RuleOP403(FamilyRule):
    """Entries are public functions: not ``_private``, not lambdas, not generators."""

    code = "OP403"
    name = "entry-private-lambda-generator"
    summary = "entry is private, a lambda or a generator"
    family = "entries_family"
    VALID: ClassVar[list[str]] = [
        'def main() -> str:\n    return "ok"\n\n\nPROGRAM_ENTRIES = [main]\n',
    ]
    INVALID: ClassVar[list[tuple[str, Invalid]]] = [
        (
            'def _main() -> str:\n    return "ok"\n\n\nPROGRAM_ENTRIES = ["_main"]\n',
            Invalid("OP403", 5, 20, 5, 27, "entry '_main' is private", fixed=None),
        ),
    ]
