"""OP209: an edit that breaks resuming recorded runs (needs a store)."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers import determinism
from openprogram_analyzers.rule import Context, Invalid, Rule

_PROGRAM = (
    "from openprogram import Agent, step\n\n\nclass Reporter(Agent):\n"
    '    method_options = {{"report": {{"resumable": True}}}}\n\n'
    "    def report(self, topic: str) -> str:\n"
    '        a = step("{a}", str.upper, topic)\n'
    '        return step("{b}", str.lower, a)\n'
)


class RuleOP209(Rule):
    """The static step sequence of a resumable function must still produce the step
    identities recorded by its paused or running runs. Needs a store
    (``openprogram-lint --store DIR`` or the language server). The warning sits on the
    changed ``step(...)`` call (a renamed step, or one that now runs earlier than a step
    recorded before it) or, for a deleted step, on the function name, and says how many
    recorded runs the edit breaks. The examples have two runs recorded: fetch+write, and fetch only.
    """

    code = "OP209"
    name = "breaks-recorded-runs"
    summary = "an edit that breaks resuming recorded runs (needs a store)"
    VALID: ClassVar[list[str]] = [
        _PROGRAM.format(a="fetch", b="write"),
        # a step added after the recorded ones breaks nothing
        _PROGRAM.format(a="fetch", b="write").replace(
            "        return step(", '        a = step("check", str.strip, a)\n        return step('
        ),
    ]
    INVALID: ClassVar[list[tuple[str, Invalid]]] = [
        (
            _PROGRAM.format(a="fetch2", b="write"),
            Invalid(
                "OP209",
                8,
                13,
                8,
                45,
                "step 'fetch2' replaces step 'fetch' recorded for 'Reporter.report': "
                "this edit breaks 2 paused/running runs",
            ),
        ),
        (
            _PROGRAM.format(a="write", b="fetch"),
            Invalid(
                "OP209",
                8,
                13,
                8,
                44,
                "step 'write' now runs before steps recorded earlier for 'Reporter.report': "
                "this edit breaks 1 paused/running run",
            ),
        ),
        (
            _PROGRAM.format(a="fetch", b="write").replace(
                '        return step("write", str.lower, a)', "        return a"
            ),
            Invalid(
                "OP209",
                7,
                9,
                7,
                15,
                "step 'write' recorded for 'Reporter.report' no longer exists: "
                "this edit breaks 1 paused/running run",
            ),
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
