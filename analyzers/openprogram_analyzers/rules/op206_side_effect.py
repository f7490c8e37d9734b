"""OP206: side effect outside a step: model call, network, file or subprocess I/O."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers import determinism
from openprogram_analyzers.rule import FamilyRule, Invalid, Valid


class RuleOP206(FamilyRule):
    """Why: Side effects in the orchestration body run again on every resume. Put model calls,
    network, file and subprocess work into ``step('name', fn, ...)``; a function doing
    such work handed to a call that may call it counts as called there (``map(open, paths)``). Model calls are
    ``llm``/``agent`` (also handed to a call that may call them, ``map(llm, xs)``,
    ``functools.partial(llm, q)``, or called through a partial, ``ask = partial(llm,
    system=s)`` then ``ask(q)``, or called in a lambda, ``map(lambda s: llm(s), xs)``),
    a call of an Agent instance (also one a function of the module returns,
    ``make_bot()(q)``, or a class attribute holds, ``self.bot(q)`` with ``bot = Bot()`` in
    the class body or ``self.bot = Bot()`` in a method, or one a first-party module of
    the project makes, ``from bots import critic`` with ``critic = Critic()`` in
    ``bots.py``; installed packages are not read) or of its turn methods
    (``bot.run_turn(...)``; an instance handed to a call that calls it, ``map(bot, xs)``,
    ``sorted(xs, key=self)``, but not one handed over as data, ``isinstance(bot, Agent)``),
    a model runtime's request
    (``create_runtime().exec(q)``, ``rt.exec_full(q)``), the judgements of the
    control-flow primitives and ``goal``, and a Planner run (``plan_and_run``,
    ``run_workflow_code``: its ``llm()``/``agent()`` calls run again). The body of a
    durable ``workflow(name, fn, ...)`` is orchestration too: an interrupted workflow runs
    it again on resume, so its model calls belong in steps. A ``repeat_until`` /
    ``validate_and_retry`` / ``conditional`` whose condition is a callable (a lambda, a
    function of the module or a builtin) is judged in Python, not by the model; the callables it runs
    at once (the action, the retry, the branches, that condition) are orchestration too,
    so a model call in them is reported where it is written. So are the callables of a
    control-flow ``parallel([...])`` (``openprogram.parallel`` given a list runs it): they
    run at once, in threads of the caller, not as steps. The durable
    ``parallel({"branch": (fn, args, kwargs)})`` runs each ``fn`` as a workflow body of
    its own: an interrupted branch runs it again on resume, so its model calls belong in
    steps too. A method the module's Agent class defines, called on an instance
    (``bot.normalize(q)``), runs its own body in a call scope (a ``code`` node, no request
    of its own), so it is followed like ``self.normalize(q)``: a model call in it
    (``self(q)``, ``llm``) is reported there, with the call chain. File I/O includes
    reading the file system (``os.listdir``, ``os.path.exists``, ``glob.glob``; not the
    path arithmetic of ``os.path.join``) and databases kept in files (``sqlite3.connect``,
    ``shelve.open``, and the calls of the connection they return: ``con.execute(...)``).

    Fix safety: No fix: the change needs the author's decision; ``# noqa: OP206`` suppresses it.
    """

    code = "OP206"
    name = "side-effect-outside-step"
    summary = "side effect outside a step: model call, network, file or subprocess I/O"
    family = determinism.findings_for
    VALID: ClassVar[list[Valid]] = [
        Valid(
            """
            from openprogram import Agent, step

            bot = Agent()


            def ask(agent: Agent, q: str) -> str:
                return agent(q)


            def main(q: str) -> str:
                kind = type(bot).__name__ if isinstance(bot, Agent) else "other"
                return step("ask", ask, bot, kind + q)


            main.__agent_options__ = {"resumable": True}
            """
        ),
        Valid(
            """
            import os

            from openprogram import step
            from openprogram.durable import resumable


            def names(folder: str) -> list[str]:
                return sorted(os.listdir(folder))  # file-system reads belong in a step


            @resumable
            def build(folder: str) -> int:
                found = step("list", names, os.path.join(folder, "in"))  # path arithmetic
                return len(found)
            """
        ),
        Valid(
            """
            from openprogram import llm

            from openprogram import Agent, step


            class Reporter(Agent):
                method_options = {"report": {"resumable": True}}

                def report(self, topic: str) -> str:
                    return step("draft", llm, topic)
            """
        ),
        Valid(
            """
            from openprogram import llm, step, workflow


            def review(text: str) -> str:
                return step("ask", llm, "review " + text)


            def main(text: str) -> str:
                return workflow("review", review, text)


            main.__agent_options__ = {"resumable": True}
            """
        ),
        Valid(
            """
            from openprogram import repeat_until, step


            def draft(topic: str) -> str:
                return topic


            def once(topic: str) -> str:
                return step("draft", draft, topic)


            def longer(text: str) -> bool:
                return len(text) > 40


            def main(topic: str) -> str:
                first = repeat_until(lambda: once(topic), lambda r: len(r) > 40)
                return repeat_until(lambda: once(first), longer, max_rounds=3)


            main.__agent_options__ = {"resumable": True}
            """
        ),
        Valid(
            """
            from openprogram import repeat_until as ru, step


            def draft(topic: str) -> str:
                return topic


            def main(topic: str) -> str:
                return ru(lambda: step("draft", draft, topic), lambda r: len(r) > 40)


            main.__agent_options__ = {"resumable": True}
            """
        ),
        Valid(
            """
            import openprogram as op


            def draft(topic: str) -> str:
                return topic


            def main(topic: str) -> str:
                return op.repeat_until(
                    action=lambda: op.step("draft", draft, topic),
                    condition=lambda r: len(r) > 40,
                )


            main.__agent_options__ = {"resumable": True}
            """
        ),
        Valid(
            """
            from openprogram import step
            from openprogram.agentic_programming.control_flow import parallel as par


            def draft(topic: str) -> str:
                return topic


            def main(a: str, b: str) -> list[str]:
                return par([lambda: step("a", draft, a), lambda: step("b", draft, b)])


            main.__agent_options__ = {"resumable": True}
            """
        ),
        Valid(
            """
            from openprogram import step
            from openprogram.agentic_programming import control_flow as cf


            def draft(topic: str) -> str:
                return topic


            def main(topics: list[str]) -> list[str]:
                return cf.parallel([lambda t=t: step("draft", draft, t) for t in topics])


            main.__agent_options__ = {"resumable": True}
            """
        ),
        Valid(
            """
            import openprogram as op


            def ask(topic: str) -> str:
                return op.step("research", op.llm, "research " + topic)


            def main(a: str, b: str) -> dict[str, str]:
                return op.parallel({"a": (ask, (a,), {}), "b": (ask, (b,), {})})


            main.__agent_options__ = {"resumable": True}
            """
        ),
        Valid(
            """
            from openprogram import Agent, create_runtime, step


            class Team:
                method_options = {"report": {"resumable": True}}
                bot = Agent()

                def __init__(self) -> None:
                    self.bot = str.upper  # the instance attribute hides the class's Agent

                def report(self, topic: str) -> str:
                    create_runtime("scripted:echo").close()
                    return step("save", str.lower, self.bot(topic))
            """
        ),
        Valid(
            """
            from openprogram import Agent, step


            class Bot(Agent):
                def normalize(self, q: str) -> str:  # string work, no model call
                    return q.strip().lower()


            bot = Bot()


            def build(q: str) -> str:
                return step("save", str.upper, bot.normalize(q))  # followed as self.x() is


            build.__agent_options__ = {"resumable": True}
            """
        ),
    ]
    INVALID: ClassVar[list[Invalid]] = [
        Invalid(
            """
            import functools

            from openprogram import llm, step

            ask = functools.partial(llm, system="Answer in one word.")


            def main(q: str) -> str:
                word = ask(q)
                return step("keep", str.upper, word)


            main.__agent_options__ = {"resumable": True}
            """,
            range=(9, 12, 9, 18),
            message="model call (openprogram.llm) directly in resumable function 'main'",
        ),
        Invalid(
            """
            import os

            from openprogram import step
            from openprogram.durable import resumable


            @resumable
            def build(folder: str) -> int:
                names = os.listdir(os.path.join(folder, "in"))
                return step("count", len, names)
            """,
            range=(9, 13, 9, 51),
            message="file I/O (os.listdir) directly in resumable function 'build'",
        ),
        Invalid(
            """
            import os
            import sqlite3

            from openprogram import step
            from openprogram.durable import resumable


            @resumable
            def build(folder: str) -> int:
                con = sqlite3.connect(os.path.join(folder, "seen.db"))  # noqa: OP206
                con.execute("create table if not exists seen(name)")
                return step("count", len, folder)
            """,
            range=(11, 5, 11, 57),
            message="file I/O (con.execute) directly in resumable function 'build'",
        ),
        Invalid(
            """
            from openprogram import Agent, decision, step


            class Flow(Agent):
                method_options = {"report": {"resumable": True}}

                def pick(self, x: str) -> str:
                    return x

                def report(self, x: str) -> str:
                    return step("act", str.upper, self.pick(x))


            class Smart(Flow):
                def pick(self, x: str) -> str:
                    return decision.make("Pick", ["p", "q"])


            report = Smart().report
            """,
            range=(16, 16, 16, 49),
            message="model call (openprogram.decision.make) directly in helper 'Smart.pick'",
        ),
        Invalid(
            """
            from openprogram import llm

            from openprogram import Agent, step


            class Reporter(Agent):
                method_options = {"report": {"resumable": True}}

                def report(self, topic: str) -> str:
                    return llm(topic)
            """,
            range=(10, 16, 10, 26),
            message="model call (openprogram.llm)",
        ),
        Invalid(
            """
            from openprogram import agent, workflow


            def review(text: str) -> str:
                return agent("review " + text)


            def main(text: str) -> str:
                return workflow("review", review, text)


            main.__agent_options__ = {"resumable": True}
            """,
            range=(5, 12, 5, 35),
            message="model call (openprogram.agent) directly in workflow body 'review'",
        ),
        Invalid(
            """
            import openprogram as op


            def review(text: str) -> str:
                return op.llm("review " + text)


            @op.agentic_function(resumable=True)
            def main(text: str) -> dict:
                return op.parallel({"first": (review, (text,), {}), "second": (str.upper, (text,), {})})
            """,
            range=(5, 12, 5, 36),
            message="model call (openprogram.llm) directly in parallel branch 'review'",
        ),
        Invalid(
            """
            from openprogram import Agent, step


            class Base(Agent):
                def ask(self, q: str) -> str:
                    return self(q)


            class Reporter(Base):
                method_options = {"report": {"resumable": True}}

                def ask(self, q: str) -> str:
                    return super().ask(q.strip())

                def report(self, topic: str) -> str:
                    return step("save", str.upper, self.ask(topic))
            """,
            range=(6, 16, 6, 23),
            message="model call (self) directly in helper 'Base.ask'",
        ),
        Invalid(
            """
            from openprogram import Agent, step


            def make_bot() -> Agent:
                return Agent()


            def main(topic: str) -> str:
                return step("save", str.upper, make_bot()(topic))


            main.__agent_options__ = {"resumable": True}
            """,
            range=(9, 36, 9, 53),
            message="model call (make_bot())",
        ),
        Invalid(
            """
            from openprogram import Agent, step


            class Team:
                method_options = {"report": {"resumable": True}}
                bot = Agent()

                def report(self, topic: str) -> str:
                    return step("save", str.upper, self.bot(topic))
            """,
            range=(9, 40, 9, 55),
            message="model call (self.bot)",
        ),
        Invalid(
            """
            from openprogram import create_runtime


            def main(topic: str) -> str:
                return create_runtime().exec("summarize " + topic)


            main.__agent_options__ = {"resumable": True}
            """,
            range=(5, 12, 5, 55),
            message="model call (create_runtime().exec)",
        ),
        Invalid(
            """
            from openprogram.programs.workflow import plan_and_run


            def main(task: str) -> str:
                return plan_and_run(task).result


            main.__agent_options__ = {"resumable": True}
            """,
            range=(5, 12, 5, 30),
            message="model call (openprogram.programs.workflow.plan_and_run)",
        ),
        Invalid(
            """
            from openprogram import goal


            def main(text: str) -> str:
                return goal("make it clear: " + text)


            main.__agent_options__ = {"resumable": True}
            """,
            range=(5, 12, 5, 42),
            message="model call (openprogram.goal)",
        ),
        Invalid(
            """
            import openprogram as op


            def draft(topic: str) -> str:
                return topic


            def main(topic: str) -> str:
                return op.repeat_until(lambda: op.step("draft", draft, topic), "it is detailed")


            main.__agent_options__ = {"resumable": True}
            """,
            range=(9, 12, 9, 85),
            message="model call (openprogram.repeat_until) directly in resumable function 'main'",
        ),
        Invalid(
            """
            from openprogram import llm, repeat_until as ru


            def main(topic: str) -> str:
                return ru(lambda: llm(topic), lambda r: len(r) > 40)


            main.__agent_options__ = {"resumable": True}
            """,
            range=(5, 23, 5, 33),
            message="model call (openprogram.llm) directly in resumable function 'main'",
        ),
        Invalid(
            """
            import openprogram as op


            def draft(topic: str) -> str:
                return topic


            def main(topic: str) -> str:
                return op.repeat_until(
                    lambda: op.step("draft", draft, topic),
                    lambda r: op.llm("Is this detailed? " + r) == "yes",
                )


            main.__agent_options__ = {"resumable": True}
            """,
            range=(11, 19, 11, 51),
            message="model call (openprogram.llm) directly in resumable function 'main'",
        ),
        Invalid(
            """
            from openprogram import agent, repeat_until


            def ask(topic: str) -> str:
                return agent("research " + topic)


            def main(topic: str) -> str:
                return repeat_until(lambda: ask(topic), lambda r: len(r) > 40)


            main.__agent_options__ = {"resumable": True}
            """,
            range=(5, 12, 5, 38),
            message="model call (openprogram.agent) directly in helper 'ask'",
        ),
        Invalid(
            """
            from openprogram import llm, step
            from openprogram.agentic_programming.control_flow import parallel as par


            def draft(topic: str) -> str:
                return topic


            def main(a: str, b: str) -> list[str]:
                return par([lambda: step("a", draft, a), lambda: llm(b)])


            main.__agent_options__ = {"resumable": True}
            """,
            range=(10, 54, 10, 60),
            message="model call (openprogram.llm) directly in resumable function 'main'",
        ),
        Invalid(
            """
            import openprogram as op


            def main(topics: list[str]) -> list[str]:
                return op.parallel([lambda t=t: op.llm("research " + t) for t in topics])


            main.__agent_options__ = {"resumable": True}
            """,
            range=(5, 37, 5, 60),
            message="model call (openprogram.llm) directly in resumable function 'main'",
        ),
        Invalid(
            """
            from openprogram import agent
            from openprogram.agentic_programming import control_flow as cf


            def ask(topic: str) -> str:
                return agent("research " + topic)


            def main(a: str, b: str) -> list[str]:
                return cf.parallel([lambda: ask(a), lambda: ask(b)])


            main.__agent_options__ = {"resumable": True}
            """,
            range=(6, 12, 6, 38),
            message="model call (openprogram.agent) directly in helper 'ask'",
        ),
        Invalid(
            """
            from openprogram import Agent, step


            class Team(Agent):
                method_options = {"report": {"resumable": True}}

                def __init__(self) -> None:
                    super().__init__()
                    self.critic = Agent()

                def report(self, topic: str) -> str:
                    notes = self.critic("judge " + topic)
                    return step("save", str.upper, notes)
            """,
            range=(12, 17, 12, 46),
            message="model call (self.critic) directly in resumable function 'Team.report'",
        ),
        Invalid(
            """
            from openprogram import Agent, resumable, step


            class Team:
                def __init__(self) -> None:
                    self.critic = Agent()


            @resumable
            def report(topic: str) -> str:
                notes = Team().critic("judge " + topic)
                return step("save", str.upper, notes)
            """,
            range=(11, 13, 11, 44),
            message="model call (Team().critic) directly in resumable function 'report'",
        ),
        Invalid(
            """
            from openprogram import llm, step


            def main(topics: list[str]) -> str:
                parts = list(map(lambda t: llm("Summarize " + t), topics))
                return step("save", str.upper, " ".join(parts))


            main.__agent_options__ = {"resumable": True}
            """,
            range=(5, 32, 5, 53),
            message="model call (openprogram.llm) directly in resumable function 'main'",
        ),
        Invalid(
            """
            from openprogram import llm, step


            def main(topics: list[str]) -> str:
                parts = list(map(llm, topics))
                return step("save", str.upper, " ".join(parts))


            main.__agent_options__ = {"resumable": True}
            """,
            range=(5, 22, 5, 25),
            message="model call (llm passed to map) directly in resumable function 'main'",
        ),
        Invalid(
            """
            from openprogram import Agent, step

            bot = Agent()


            def main(topics: list[str]) -> str:
                parts = list(map(bot, topics))
                return step("save", str.upper, " ".join(parts))


            main.__agent_options__ = {"resumable": True}
            """,
            range=(7, 22, 7, 25),
            message="model call (bot passed to map) directly in resumable function 'main'",
        ),
        Invalid(
            """
            from openprogram import Agent, step


            class Team(Agent):
                method_options = {"report": {"resumable": True}}

                def report(self, topics: list[str]) -> str:
                    ranked = sorted(topics, key=self)
                    return step("save", str.upper, ranked[0])
            """,
            range=(8, 37, 8, 41),
            message="model call (self passed to sorted) directly in resumable function 'Team.report'",
        ),
        Invalid(
            """
            from openprogram import step


            def main(paths: list[str]) -> str:
                texts = [f.read() for f in map(open, paths)]
                return step("save", str.upper, " ".join(texts))


            main.__agent_options__ = {"resumable": True}
            """,
            range=(5, 36, 5, 40),
            message="file I/O (open passed to map) directly in resumable function 'main'",
        ),
        Invalid(
            """
            from openprogram import Agent, step


            class Bot(Agent):
                def normalize(self, q: str) -> str:
                    return self("Normalize " + q)


            def build(q: str) -> str:
                return step("save", str.upper, Bot().normalize(q))


            build.__agent_options__ = {"resumable": True}
            """,
            range=(6, 16, 6, 38),
            message="model call (self) directly in helper 'Bot.normalize'",
        ),
        Invalid(
            """
            from openprogram import llm, step


            class Base:
                def summarize(self, q: str) -> str:
                    return llm("Summarize " + q)


            class Helper(Base):
                pass


            def build(q: str) -> str:
                return step("save", str.upper, Helper().summarize(q))


            build.__agent_options__ = {"resumable": True}
            """,
            range=(6, 16, 6, 37),
            message="model call (openprogram.llm) directly in helper 'Base.summarize'",
        ),
    ]
