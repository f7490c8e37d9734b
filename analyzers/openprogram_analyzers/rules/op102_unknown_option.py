"""OP102: unknown option key (with a did-you-mean)."""

from __future__ import annotations

from typing import Any, ClassVar

import libcst as cst

from openprogram.options import OPTIONS, did_you_mean
from openprogram_analyzers import options_family
from openprogram_analyzers.literals import string_literal_like, string_value
from openprogram_analyzers.rule import Context, FamilyRule, Invalid, Valid


class RuleOP102(FamilyRule):
    """Why: Option keys come from the one table in ``openprogram.options``. An unknown key is
    almost always a typo; the fix replaces it with the closest valid key.

    Fix safety: Unsafe: the fix is a did-you-mean guess and may change what the program does
    (``"tol"`` -> ``"tool"`` turns a method into a tool); ``--fix --unsafe-fixes``
    applies it. It is never offered when it would create a duplicate key.
    """

    code = "OP102"
    name = "unknown-option-key"
    summary = "unknown option key (with a did-you-mean)"
    family = options_family.findings_for
    fix_safe = False  # a did-you-mean guesses intent ("tol" -> "tool" makes a tool)
    VALID: ClassVar[list[Valid]] = [
        Valid(
            """
            from openprogram import Agent


            class A(Agent):
                method_options = {"f": {"expose": "io"}}

                def f(self) -> None:
                    pass
            """
        ),
        Valid(
            """
            from openprogram import agentic_function


            @agentic_function(expose="io", tool=True, timeout=2)
            def f(text: str) -> str:
                return text
            """
        ),
    ]
    INVALID: ClassVar[list[Invalid]] = [
        Invalid(
            """
            from openprogram import Agent


            class A(Agent):
                method_options = {"f": {"expsoe": "io"}}

                def f(self) -> None:
                    pass
            """,
            range=(5, 29, 5, 37),
            message="unknown method_options key 'expsoe' (method 'f'); did you mean 'expose'?",
            fixed="""
            from openprogram import Agent


            class A(Agent):
                method_options = {"f": {"expose": "io"}}

                def f(self) -> None:
                    pass
            """,
        ),
        Invalid(  # @agentic_function(...) arguments are one method_options entry
            """
            from openprogram import agentic_function


            @agentic_function(expsoe="io")
            def f(text: str) -> str:
                return text
            """,
            range=(4, 19, 4, 25),
            message="unknown method_options key 'expsoe' (method 'f'); did you mean 'expose'?",
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
