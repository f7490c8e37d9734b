"""OP104: invalid expose value."""

from __future__ import annotations

from typing import Any, ClassVar

import libcst as cst

from openprogram.options import EXPOSE_VALUES, did_you_mean
from openprogram_analyzers.literals import string_literal_like, string_value
from openprogram_analyzers.rule import Context, FamilyRule, Invalid


class RuleOP104(FamilyRule):
    """``expose`` is one of ``"full"``, ``"io"``, ``"llm"``, ``"hidden"``. The fix
    replaces a misspelt value with the closest valid one.
    """

    code = "OP104"
    name = "invalid-expose"
    summary = "invalid expose value"
    family = "options_family"
    fix_safe = False  # a did-you-mean guesses intent ("tol" -> "tool" makes a tool)
    VALID: ClassVar[list[str]] = [
        'from openprogram import Agent\n\n\nclass A(Agent):\n    method_options = {"f": {"expose": "hidden"}}\n\n    def f(self) -> None:\n        pass\n',
    ]
    INVALID: ClassVar[list[tuple[str, Invalid]]] = [
        (
            'from openprogram import Agent\n\n\nclass A(Agent):\n    method_options = {"f": {"expose": "ful"}}\n\n    def f(self) -> None:\n        pass\n',
            Invalid(
                "OP104",
                5,
                39,
                5,
                44,
                "invalid expose value 'ful'",
                fixed='from openprogram import Agent\n\n\nclass A(Agent):\n    method_options = {"f": {"expose": "full"}}\n\n    def f(self) -> None:\n        pass\n',
            ),
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
