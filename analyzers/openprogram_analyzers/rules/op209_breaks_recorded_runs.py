"""OP209: an edit that breaks resuming recorded runs (needs a store)."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers import determinism
from openprogram_analyzers.rule import Context, Invalid, Rule, Valid

_PROGRAM = (
    "from openprogram import Agent, step\n\n\nclass Reporter(Agent):\n"
    '    method_options = {{"report": {{"resumable": True}}}}\n\n'
    "    def report(self, topic: str) -> str:\n"
    '        a = step("{a}", str.upper, topic)\n'
    '        return step("{b}", str.lower, a)\n'
)


class RuleOP209(Rule):
    """Why: The static step sequence of a resumable function must still produce the step
    identities recorded by its unfinished runs (paused, failed or interrupted: those
    ``resume`` takes and resumes with the current code, by its rules; and queued ones, which
    a worker runs from their recorded steps). A method is compared with the class the
    run's recorded entry runs it on (``smart = Smart().report``); a run without one, with
    each class of the module it may run on. Needs a store
    (``openprogram-lint --store DIR`` or the language server). The warning sits on the
    changed ``step(...)`` call (a renamed step, or one that now runs earlier than a step
    recorded before it) or, for a deleted step, on the function name, and says how many
    recorded runs the edit breaks. The examples have two runs recorded: fetch+write, and fetch only.

    Fix safety: No fix: the change needs the author's decision; ``# noqa: OP209`` suppresses it.
    """

    code = "OP209"
    name = "breaks-recorded-runs"
    summary = "an edit that breaks resuming recorded runs (needs a store)"
    VALID: ClassVar[list[Valid]] = [
        Valid(
            """
            from openprogram import Agent, step


            class Reporter(Agent):
                method_options = {"report": {"resumable": True}}

                def report(self, topic: str) -> str:
                    a = step("fetch", str.upper, topic)
                    return step("write", str.lower, a)
            """
        ),
        Valid(
            """
            from openprogram import Agent, step


            class Reporter(Agent):
                method_options = {"report": {"resumable": True}}

                def report(self, topic: str) -> str:
                    a = step("fetch", str.upper, topic)
                    a = step("check", str.strip, a)
                    return step("write", str.lower, a)
            """
        ),
        Valid(
            """
            from openprogram import Agent, step


            class Source:
                def fetch(self, topic: str) -> str:
                    return step("fetch", str.upper, topic)


            class Reporter(Agent):
                method_options = {"report": {"resumable": True}}

                def report(self, topic: str) -> str:
                    a = Source().fetch(topic)
                    return step("write", str.lower, a)
            """
        ),
    ]
    INVALID: ClassVar[list[Invalid]] = [
        Invalid(
            """
            from openprogram import Agent, step


            class Reporter(Agent):
                method_options = {"report": {"resumable": True}}

                def report(self, topic: str) -> str:
                    a = step("fetch2", str.upper, topic)
                    return step("write", str.lower, a)
            """,
            range=(8, 13, 8, 45),
            message="step 'fetch2' replaces step 'fetch' recorded for 'Reporter.report': this edit breaks 2 unfinished runs",
        ),
        Invalid(
            """
            from openprogram import Agent, step


            class Reporter(Agent):
                method_options = {"report": {"resumable": True}}

                def report(self, topic: str) -> str:
                    a = step("write", str.upper, topic)
                    return step("fetch", str.lower, a)
            """,
            range=(8, 13, 8, 44),
            message="step 'write' now runs before steps recorded earlier for 'Reporter.report': this edit breaks 1 unfinished run",
        ),
        Invalid(
            """
            from openprogram import Agent, step


            class Reporter(Agent):
                method_options = {"report": {"resumable": True}}

                def report(self, topic: str) -> str:
                    a = step("fetch", str.upper, topic)
                    return a
            """,
            range=(7, 9, 7, 15),
            message="step 'write' recorded for 'Reporter.report' no longer exists: this edit breaks 1 unfinished run",
        ),
        Invalid(
            """
            from openprogram import Agent, step


            class Source:
                def fetch(self, topic: str) -> str:
                    return step("fetch2", str.upper, topic)


            class Reporter(Agent):
                method_options = {"report": {"resumable": True}}

                def report(self, topic: str) -> str:
                    source = Source()
                    a = source.fetch(topic)
                    return step("write", str.lower, a)
            """,
            range=(6, 16, 6, 48),
            message="step 'fetch2' replaces step 'fetch' recorded for 'Reporter.report': this edit breaks 2 unfinished runs",
        ),
    ]

    RECORDED: ClassVar[dict[str, list[list[tuple[str, int]]]]] = {
        "Reporter.report": [[("fetch", 0), ("write", 0)], [("fetch", 0)]]
    }

    def check(self, ctx: Context) -> None:
        """Compare static step sequences with the recorded runs given to the analysis."""
        recorded = ctx.recorded_steps
        if not recorded:
            return
        for fn in determinism.resumable_functions(ctx.index):
            runs = recorded.get(fn.qualname)
            if runs:
                for f in determinism.compare_recorded(ctx.index, fn, runs):
                    ctx.report(self.code, f.node, f.message)
