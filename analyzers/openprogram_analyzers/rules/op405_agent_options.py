"""OP405: malformed __agent_options__."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers.rule import FamilyRule, Invalid


class RuleOP405(FamilyRule):
    """``__agent_options__`` on an entry is a literal dict with string keys."""

    code = "OP405"
    name = "malformed-agent-options"
    summary = "malformed __agent_options__"
    family = "entries_family"
    VALID: ClassVar[list[str]] = [
        'def main() -> str:\n    return "ok"\n\n\nmain.__agent_options__ = {"label": "Main"}\n',
    ]
    INVALID: ClassVar[list[tuple[str, Invalid]]] = [
        (
            'def main() -> str:\n    return "ok"\n\n\nmain.__agent_options__ = ["label"]\n',
            Invalid("OP405", 5, 26, 5, 35, "__agent_options__ must be a literal dict", fixed=None),
        ),
    ]
