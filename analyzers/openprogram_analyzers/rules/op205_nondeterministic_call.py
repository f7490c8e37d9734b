"""OP205: non-deterministic call outside a step."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers import determinism
from openprogram_analyzers.rule import FamilyRule, Invalid, Valid


class RuleOP205(FamilyRule):
    """Why: A resumed run replays the orchestration body: ``time.time()``, ``random.random()``,
    ``uuid.uuid4()``... return different values then. Call them inside a step. So does a
    generator made at module level (``rng = random.Random(7)``, ``SystemRandom()``), seeded
    or not: it is shared by every run of the process and each call advances it, so a
    resumed run continues its sequence instead of replaying it. A lambda or a nested
    ``def`` of the body runs in the body (``sorted(xs, key=lambda _: random.random())``),
    and so does a callable handed to a call that may call it (``map(random.choice, xs)``),
    unless it is the function of a step (also of a step bound by ``functools.partial``:
    ``save = partial(step, "save")``, then ``save(fn)``). ``time.sleep`` is none: it returns nothing, so a
    resumed run that waits again sees no other value.

    Fix safety: No fix: the change needs the author's decision; ``# noqa: OP205`` suppresses it.
    """

    code = "OP205"
    name = "non-deterministic-call"
    summary = "non-deterministic call outside a step"
    family = determinism.findings_for
    VALID: ClassVar[list[Valid]] = [
        Valid(
            """
            import functools
            import time

            from openprogram import step

            stamp = functools.partial(step, "stamp")


            def now() -> float:
                return time.time()


            def main() -> float:
                return stamp(now)


            main.__agent_options__ = {"resumable": True}
            """
        ),
        Valid(
            """
            import time
            from time import sleep

            from openprogram import step
            from openprogram.durable import resumable


            @resumable
            def crawl(pages: list[str]) -> list[str]:
                out = []
                for page in pages:
                    out.append(step("fetch", str.upper, page))
                    time.sleep(1.0)  # rate limiting: a replay waits again, nothing differs
                    sleep(0.5)
                return out
            """
        ),
        Valid(
            """
            import time

            from openprogram import Agent, step


            class Reporter(Agent):
                method_options = {"report": {"resumable": True}}

                def report(self, topic: str) -> float:
                    return step("stamp", time.time)
            """
        ),
        Valid(
            """
            import random

            from openprogram import step

            rng = random.Random(7)


            def main(options: list[str]) -> str:
                return step("pick", rng.choice, options)


            main.__agent_options__ = {"resumable": True}
            """
        ),
        Valid(
            """
            import random

            from openprogram import step


            class Fmt:
                def clean(self, q: str) -> str:
                    return q.strip().lower()

                @staticmethod
                def seed() -> int:
                    return 7


            def main(q: str) -> str:
                f = Fmt()
                return step("save", str.upper, f.clean(q) + str(Fmt.seed()))


            main.__agent_options__ = {"resumable": True}
            """
        ),
    ]
    INVALID: ClassVar[list[Invalid]] = [
        Invalid(
            """
            import time

            from openprogram import Agent, step


            class Reporter(Agent):
                method_options = {"report": {"resumable": True}}

                def report(self, topic: str) -> float:
                    started = time.time()
                    return step("stamp", str, started)
            """,
            range=(10, 19, 10, 30),
            message="non-deterministic call time.time()",
        ),
        Invalid(
            """
            import random

            from openprogram import step

            rng = random.Random(7)


            def main(options: list[str]) -> str:
                first = rng.choice(options)
                return step("save", str.upper, first)


            main.__agent_options__ = {"resumable": True}
            """,
            range=(9, 13, 9, 32),
            message="non-deterministic call random.Random.choice()",
        ),
        Invalid(
            """
            import random

            from openprogram import step


            def main(options: list[str]) -> str:
                order = sorted(options, key=lambda _: random.random())
                return step("save", str.upper, order[0])


            main.__agent_options__ = {"resumable": True}
            """,
            range=(7, 43, 7, 58),
            message="non-deterministic call random.random() in resumable function 'main'",
        ),
        Invalid(
            """
            import random

            from openprogram import step


            def main(groups: list[list[str]]) -> str:
                picks = list(map(random.choice, groups))
                return step("save", str.upper, "".join(picks))


            main.__agent_options__ = {"resumable": True}
            """,
            range=(7, 22, 7, 35),
            message="non-deterministic callable random.choice passed to map()",
        ),
        Invalid(
            """
            import random

            from openprogram import step


            def main(options: list[str]) -> str:
                def key(_: str) -> float:
                    return random.random()

                return step("save", str.upper, sorted(options, key=key)[0])


            main.__agent_options__ = {"resumable": True}
            """,
            range=(8, 16, 8, 31),
            message="in helper 'main.<locals>.key' of resumable function 'main' outside a step",
        ),
        Invalid(
            """
            import random

            from openprogram import step


            class Dice:
                def roll(self) -> float:
                    return random.random()


            def main(q: str) -> str:
                d = Dice()
                return step("save", str.upper, q + str(d.roll()))


            main.__agent_options__ = {"resumable": True}
            """,
            range=(8, 16, 8, 31),
            message="non-deterministic call random.random() in helper 'Dice.roll' outside a step",
        ),
    ]
