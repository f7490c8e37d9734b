"""OP104: invalid expose value."""

from __future__ import annotations

from typing import Any, ClassVar

import libcst as cst

from openprogram.options import EXPOSE_VALUES, did_you_mean
from openprogram_analyzers import options_family
from openprogram_analyzers.literals import string_literal_like, string_value
from openprogram_analyzers.rule import Context, FamilyRule, Invalid, Valid


class RuleOP104(FamilyRule):
    """Why: ``expose`` is one of ``"full"``, ``"io"``, ``"llm"``, ``"hidden"``. The fix
    replaces a misspelt value with the closest valid one.

    Fix safety: Unsafe: the fix is a did-you-mean guess and may change what the program does
    (``"tol"`` -> ``"tool"`` turns a method into a tool); ``--fix --unsafe-fixes``
    applies it. It is never offered when it would create a duplicate key.
    """

    code = "OP104"
    name = "invalid-expose"
    summary = "invalid expose value"
    family = options_family.findings_for
    fix_safe = False  # a did-you-mean guesses intent ("tol" -> "tool" makes a tool)
    VALID: ClassVar[list[Valid]] = [
        Valid(
            """
            from openprogram import Agent


            class A(Agent):
                method_options = {"f": {"expose": "hidden"}}

                def f(self) -> None:
                    pass
            """
        ),
    ]
    INVALID: ClassVar[list[Invalid]] = [
        Invalid(
            """
            from openprogram import Agent


            class A(Agent):
                method_options = {"f": {"expose": "ful"}}

                def f(self) -> None:
                    pass
            """,
            range=(5, 39, 5, 44),
            message="invalid expose value 'ful'",
            fixed="""
            from openprogram import Agent


            class A(Agent):
                method_options = {"f": {"expose": "full"}}

                def f(self) -> None:
                    pass
            """,
        ),
    ]

    def fix_for(
        self, ctx: Context, finding: Any
    ) -> tuple[str, list[tuple[cst.CSTNode, str]]] | None:
        """Replace the misspelt value by the closest valid ``expose`` value."""
        node = finding.node
        value = string_value(node) if isinstance(node, cst.BaseExpression) else None
        best = did_you_mean(value, EXPOSE_VALUES) if value is not None else None
        if best is None or not isinstance(node, cst.BaseExpression):
            return None
        return (f"replace {value!r} by {best!r}", [(node, string_literal_like(node, best))])
