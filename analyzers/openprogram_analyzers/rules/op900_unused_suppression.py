"""OP900: unused suppression comment."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers.rule import Context, Invalid, Rule


class RuleOP900(Rule):
    """A ``# noqa: OPxxx`` or ``# openprogram: ignore[OPxxx]`` comment that suppresses
    nothing is reported, so stale suppressions do not hide future problems.
    """

    code = "OP900"
    name = "unused-suppression"
    summary = "unused suppression comment"
    severity = "warning"
    VALID: ClassVar[list[str]] = [
        'def main() -> str:\n    return "ok"\n',
    ]
    INVALID: ClassVar[list[tuple[str, Invalid]]] = [
        (
            'def main() -> str:\n    return "ok"  # noqa: OP203\n',
            Invalid("OP900", 2, 18, 2, 31, "unused suppression of OP203", fixed=None),
        ),
    ]

    def check(self, ctx: Context) -> None:
        """Reported after suppressions are applied (see ``suppressions.py``)."""
