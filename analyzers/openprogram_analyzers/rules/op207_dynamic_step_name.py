"""OP207: step / workflow / parallel branch name that is not a literal string."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers import determinism
from openprogram_analyzers.rule import FamilyRule, Invalid, Valid


class RuleOP207(FamilyRule):
    """Why: A step's identity is its name plus its occurrence. A name computed from data changes
    between runs and breaks resuming. Repeated literal names are fine. A ``parallel`` given
    a list of callables (the control-flow form) has no branch names to check. A step or
    workflow bound by ``functools.partial`` (``write = partial(step, name)``, then
    ``write(fn, t)``) takes its name from the partial: reported there.

    Fix safety: No fix: the change needs the author's decision; ``# noqa: OP207`` suppresses it.
    """

    code = "OP207"
    name = "non-literal-step-name"
    summary = "step / workflow / parallel branch name that is not a literal string"
    family = determinism.findings_for
    VALID: ClassVar[list[Valid]] = [
        Valid(
            """
            from openprogram import Agent, step


            class Reporter(Agent):
                method_options = {"report": {"resumable": True}}

                def report(self, topics: list[str]) -> list[str]:
                    return [step("write", str.upper, t) for t in topics]
            """
        ),
        Valid(
            """
            import openprogram as op


            def shout(t: str) -> str:
                return t.upper()


            def main(topics: list[str]) -> list[str]:
                return op.parallel([lambda t=t: op.step("shout", shout, t) for t in topics])


            main.__agent_options__ = {"resumable": True}
            """
        ),
    ]
    INVALID: ClassVar[list[Invalid]] = [
        Invalid(
            """
            from openprogram import Agent, step


            class Reporter(Agent):
                method_options = {"report": {"resumable": True}}

                def report(self, topics: list[str]) -> list[str]:
                    return [step(f"write-{t}", str.upper, t) for t in topics]
            """,
            range=(8, 22, 8, 34),
            message="step name is not a literal string",
        ),
        Invalid(
            """
            from functools import partial

            from openprogram import workflow


            def shout(t: str) -> str:
                return t.upper()


            def main(topic: str) -> str:
                run = partial(workflow, "shout-" + topic)
                return run(shout, topic)


            main.__agent_options__ = {"resumable": True}
            """,
            range=(11, 29, 11, 45),
            message="workflow name is not a literal string in resumable function 'main'",
        ),
    ]
