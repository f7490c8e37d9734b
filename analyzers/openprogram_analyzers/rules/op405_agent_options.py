"""OP405: malformed __agent_options__."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers import entries_family
from openprogram_analyzers.rule import FamilyRule, Invalid, Valid


class RuleOP405(FamilyRule):
    """Why: ``__agent_options__`` on an entry is a literal dict with string keys, its keys
    and values those of the method-options table (``resumable`` a bool, no misspelt key).
    ``openprogram run`` refuses the entry with the same message (one shared check).

    Fix safety: No fix: the change needs the author's decision; ``# noqa: OP405`` suppresses it.
    """

    code = "OP405"
    name = "malformed-agent-options"
    summary = "malformed __agent_options__"
    family = entries_family.findings_for
    VALID: ClassVar[list[Valid]] = [
        Valid(
            """
            def main() -> str:
                return "ok"


            main.__agent_options__ = {"label": "Main"}
            """
        ),
    ]
    INVALID: ClassVar[list[Invalid]] = [
        Invalid(
            """
            def main() -> str:
                return "ok"


            main.__agent_options__ = ["label"]
            """,
            range=(5, 26, 5, 35),
            message="__agent_options__ must be a literal dict",
        ),
        Invalid(
            """
            def main() -> str:
                return "ok"


            main.__agent_options__ = {"resumeable": True}
            """,
            range=(5, 27, 5, 39),
            message="unknown method_options key 'resumeable' (method 'main'); did you mean 'resumable'?",
        ),
        Invalid(
            """
            def main() -> str:
                return "ok"


            main.__agent_options__ = {"resumable": "yes"}
            """,
            range=(5, 40, 5, 45),
            message="method_options['main']['resumable'] must be bool, got str 'yes'",
        ),
        Invalid(
            """
            def build(q: str) -> str:
                return q


            setattr(build, "__agent_options__", {"resumeable": True})
            """,
            range=(5, 38, 5, 50),
            message="unknown method_options key 'resumeable' (method 'build'); did you mean 'resumable'?",
        ),
    ]
