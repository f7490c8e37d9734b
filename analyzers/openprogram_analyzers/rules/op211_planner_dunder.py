"""OP211: Planner code: a dunder name or attribute (``().__class__``)."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers.rule import Context, Invalid, Rule


class RuleOP211(Rule):
    """Dunder names and attributes (``__class__``, ``__globals__``, ``__builtins__``...)
    are the usual ways out of the restricted namespace Planner code runs in (SPEC §2.9),
    so Planner code may not use them. Reported by ``check_planner_code``, which the
    engine runs before executing Planner code; the examples use the injected name ``llm``.
    """

    code = "OP211"
    name = "planner-dunder"
    summary = "Planner code: a dunder name or attribute"
    VALID: ClassVar[list[str]] = [
        'def workflow():\n    answer = llm("hi")\n    return answer.strip()\n',
    ]
    INVALID: ClassVar[list[tuple[str, Invalid]]] = [
        (
            "def workflow():\n    return ().__class__\n",
            Invalid("OP211", 2, 15, 2, 24, "dunder attribute '__class__' is not allowed"),
        ),
        (
            "def workflow():\n    return __builtins__\n",
            Invalid("OP211", 2, 12, 2, 24, "dunder name '__builtins__' is not allowed"),
        ),
    ]

    def check(self, ctx: Context) -> None:
        """Reported by ``check_planner_code`` only (Planner code is not a Program file)."""
