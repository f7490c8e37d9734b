"""OP210: Planner code: a name that is not injected, or not exactly one zero-argument workflow()."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers.rule import Context, Invalid, Rule


class RuleOP210(Rule):
    """Code written by the Planner (SPEC §2.9) may use only the injected names and builtins,
    import nothing and define exactly one zero-argument ``def workflow():``. Reported by
    ``check_planner_code`` (the engine runs it before executing Planner code).
    """

    code = "OP210"
    name = "planner-code-shape"
    summary = (
        "Planner code: a name that is not injected, or not exactly one zero-argument workflow()"
    )
    VALID: ClassVar[list[str]] = [
        'def workflow():\n    return llm("hello")\n',
    ]
    INVALID: ClassVar[list[tuple[str, Invalid]]] = [
        (
            "def workflow(x):\n    return llm(x)\n",
            Invalid("OP210", 1, 14, 1, 15, "'workflow' must take no arguments", fixed=None),
        ),
    ]

    def check(self, ctx: Context) -> None:
        """Reported by ``check_planner_code`` only (Planner code is not a Program file)."""
