"""OP209: an edit that breaks resuming recorded runs (needs a store)."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers import determinism
from openprogram_analyzers.rule import Context, Invalid, Rule


class RuleOP209(Rule):
    """The static step sequence of a resumable function must still produce the step
    identities recorded by its paused or running runs. Needs a store
    (``openprogram-lint --store DIR`` or the language server).
    """

    code = "OP209"
    name = "breaks-recorded-runs"
    summary = "an edit that breaks resuming recorded runs (needs a store)"
    VALID: ClassVar[list[str]] = [
        'from openprogram import Agent, step\n\n\nclass Reporter(Agent):\n    method_options = {"report": {"resumable": True}}\n\n    def report(self, topic: str) -> str:\n        a = step("fetch", str.upper, topic)\n        return step("write", str.lower, a)\n',
    ]
    INVALID: ClassVar[list[tuple[str, Invalid]]] = [
        (
            'from openprogram import Agent, step\n\n\nclass Reporter(Agent):\n    method_options = {"report": {"resumable": True}}\n\n    def report(self, topic: str) -> str:\n        a = step("fetch2", str.upper, topic)\n        return step("write", str.lower, a)\n',
            Invalid(
                "OP209", 7, 9, 7, 15, "step 'fetch' recorded by a paused/running run", fixed=None
            ),
        ),
    ]

    RECORDED: ClassVar[dict[str, list[list[tuple[str, int]]]]] = {
        "Reporter.report": [[("fetch", 0), ("write", 0)]]
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
