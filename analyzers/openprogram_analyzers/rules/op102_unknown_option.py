"""OP102: unknown option key (with a did-you-mean)."""

from __future__ import annotations

from typing import Any, ClassVar

import libcst as cst

from openprogram.options import OPTIONS, did_you_mean
from openprogram_analyzers.literals import string_literal_like, string_value
from openprogram_analyzers.rule import Context, FamilyRule, Invalid


class RuleOP102(FamilyRule):
    """Option keys come from the one table in ``openprogram.options``. An unknown key is
    almost always a typo; the fix replaces it with the closest valid key.
    """

    code = "OP102"
    name = "unknown-option-key"
    summary = "unknown option key (with a did-you-mean)"
    family = "options_family"
    fix_safe = False  # a did-you-mean guesses intent ("tol" -> "tool" makes a tool)
    VALID: ClassVar[list[str]] = [
        'from openprogram import Agent\n\n\nclass A(Agent):\n    method_options = {"f": {"expose": "io"}}\n\n    def f(self) -> None:\n        pass\n',
        'from openprogram import agentic_function\n\n\n@agentic_function(expose="io", tool=True, timeout=2)\ndef f(text: str) -> str:\n    return text\n',
    ]
    INVALID: ClassVar[list[tuple[str, Invalid]]] = [
        (
            'from openprogram import Agent\n\n\nclass A(Agent):\n    method_options = {"f": {"expsoe": "io"}}\n\n    def f(self) -> None:\n        pass\n',
            Invalid(
                "OP102",
                5,
                29,
                5,
                37,
                "unknown method_options key 'expsoe' (method 'f'); did you mean 'expose'?",
                fixed='from openprogram import Agent\n\n\nclass A(Agent):\n    method_options = {"f": {"expose": "io"}}\n\n    def f(self) -> None:\n        pass\n',
            ),
        ),
        (  # @agentic_function(...) arguments are one method_options entry
            'from openprogram import agentic_function\n\n\n@agentic_function(expsoe="io")\ndef f(text: str) -> str:\n    return text\n',
            Invalid(
                "OP102",
                4,
                19,
                4,
                25,
                "unknown method_options key 'expsoe' (method 'f'); did you mean 'expose'?",
                fixed=None,
            ),
        ),
    ]

    def fix_for(
        self, ctx: Context, finding: Any
    ) -> tuple[str, list[tuple[cst.CSTNode, str]]] | None:
        """Replace the misspelt key by the closest valid key."""
        node = finding.node
        key = string_value(node) if isinstance(node, cst.BaseExpression) else None
        best = did_you_mean(key, OPTIONS) if key is not None else None
        if best is None or not isinstance(node, cst.BaseExpression):
            return None
        return (f"replace {key!r} by {best!r}", [(node, string_literal_like(node, best))])
