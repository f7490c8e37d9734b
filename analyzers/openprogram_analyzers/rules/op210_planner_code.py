"""OP210: Planner code: a name that is not injected, or not exactly one zero-argument workflow()."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers.rule import Context, Invalid, Rule, Valid


class RuleOP210(Rule):
    """Why: Code written by the Planner (SPEC §2.9) may read only the injected names, names it
    binds itself and the basic builtins of ``WORKFLOW_BUILTINS`` (``open``, ``getattr``
    and the like are not there), imports nothing (an import brings in a name that is not
    injected), and must consist of exactly one plain, undecorated, zero-argument ``def
    workflow():`` (a docstring is fine; helpers and values go inside it).
    ``exec``/``eval`` are OP201, dunders OP211. Reported by
    ``check_planner_code``, which the engine runs before executing Planner code; the
    examples use the injected name ``llm``.

    Fix safety: No fix: the Planner rewrites its code; Planner code is never suppressed.
    """

    code = "OP210"
    name = "planner-code-shape"
    summary = (
        "Planner code: a name that is not injected, or not exactly one zero-argument workflow()"
    )
    VALID: ClassVar[list[Valid]] = [
        Valid(
            """
            def workflow():
                return llm("hello")
            """
        ),
        Valid(
            """
            \"\"\"Summarise the notes.\"\"\"


            def workflow():
                def ask(q):
                    return llm(q)

                parts = [ask(p) for p in ["a", "b"]]
                return max(parts, key=lambda s: len(s))
            """
        ),
    ]
    INVALID: ClassVar[list[Invalid]] = [
        Invalid(
            """
            import os


            def workflow():
                return llm(os.getcwd())
            """,
            range=(1, 1, 1, 10),
            message="imports are not allowed in Planner code",
        ),
        Invalid(
            """
            def workflow(x):
                return llm(x)
            """,
            range=(1, 14, 1, 15),
            message="'workflow' must take no arguments",
        ),
        Invalid(
            """
            def workflow():
                return lmm("hi")
            """,
            range=(2, 12, 2, 15),
            message="name 'lmm' is not available to Planner code (injected: llm); did you mean 'llm'?",
        ),
        Invalid(
            """
            def workflow():
                return open("notes.txt")
            """,
            range=(2, 12, 2, 16),
            message="name 'open' is not available to Planner code",
        ),
        Invalid(
            """
            def workflow():
                return llm("a")


            def workflow():
                return llm("b")
            """,
            range=(5, 5, 5, 13),
            message="`workflow` is defined more than once",
        ),
        Invalid(
            """
            PROMPT = "hi"


            def workflow():
                return llm(PROMPT)
            """,
            range=(1, 1, 1, 14),
            message="only `def workflow():` may appear at top level",
        ),
        Invalid(
            """
            \"\"\"No workflow here.\"\"\"
            """,
            range=(1, 1, 1, 24),
            message="no `def workflow():` found",
        ),
        Invalid(
            """
            async def workflow():
                return llm("hi")
            """,
            range=(1, 11, 1, 19),
            message="`workflow` must be a plain (not async) function",
        ),
        Invalid(
            """
            def workflow():
                return llm("hi")


            workflow = llm
            """,
            range=(5, 1, 5, 15),
            message="only `def workflow():` may appear at top level",
        ),
    ]

    def check(self, ctx: Context) -> None:
        """Reported by ``check_planner_code`` only (Planner code is not a Program file)."""
