"""OP210: Planner code: a name that is not injected, or not exactly one zero-argument workflow()."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers.rule import Context, Invalid, Rule


class RuleOP210(Rule):
    """Code written by the Planner (SPEC §2.9) may read only the injected names, names it
    binds itself and the basic builtins of ``WORKFLOW_BUILTINS`` (``open``, ``getattr``
    and the like are not there), and must consist of exactly one plain, undecorated,
    zero-argument ``def workflow():`` (a docstring is fine; helpers and values go inside
    it). Imports are OP202, ``exec``/``eval`` OP201, dunders OP211. Reported by
    ``check_planner_code``, which the engine runs before executing Planner code; the
    examples use the injected name ``llm``.
    """

    code = "OP210"
    name = "planner-code-shape"
    summary = (
        "Planner code: a name that is not injected, or not exactly one zero-argument workflow()"
    )
    VALID: ClassVar[list[str]] = [
        'def workflow():\n    return llm("hello")\n',
        '"""Summarise the notes."""\n\n\ndef workflow():\n    def ask(q):\n        return llm(q)\n\n    parts = [ask(p) for p in ["a", "b"]]\n    return max(parts, key=lambda s: len(s))\n',
    ]
    INVALID: ClassVar[list[tuple[str, Invalid]]] = [
        (
            "def workflow(x):\n    return llm(x)\n",
            Invalid("OP210", 1, 14, 1, 15, "'workflow' must take no arguments", fixed=None),
        ),
        (
            'def workflow():\n    return lmm("hi")\n',
            Invalid(
                "OP210",
                2,
                12,
                2,
                15,
                "name 'lmm' is not available to Planner code (injected: llm); did you mean 'llm'?",
            ),
        ),
        (
            'def workflow():\n    return open("notes.txt")\n',
            Invalid("OP210", 2, 12, 2, 16, "name 'open' is not available to Planner code"),
        ),
        (
            'def workflow():\n    return llm("a")\n\n\ndef workflow():\n    return llm("b")\n',
            Invalid("OP210", 5, 5, 5, 13, "`workflow` is defined more than once"),
        ),
        (
            'PROMPT = "hi"\n\n\ndef workflow():\n    return llm(PROMPT)\n',
            Invalid("OP210", 1, 1, 1, 14, "only `def workflow():` may appear at top level"),
        ),
        (
            '"""No workflow here."""\n',
            Invalid("OP210", 1, 1, 1, 24, "no `def workflow():` found"),
        ),
        (
            'async def workflow():\n    return llm("hi")\n',
            Invalid("OP210", 1, 11, 1, 19, "`workflow` must be a plain (not async) function"),
        ),
        (
            'def workflow():\n    return llm("hi")\n\n\nworkflow = llm\n',
            Invalid("OP210", 5, 1, 5, 15, "only `def workflow():` may appear at top level"),
        ),
    ]

    def check(self, ctx: Context) -> None:
        """Reported by ``check_planner_code`` only (Planner code is not a Program file)."""
