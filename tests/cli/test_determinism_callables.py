"""The determinism check sees work a resumable body does in a lambda, in a nested ``def``
or through a callable it hands to another call (``map``, ``sorted(key=...)``; an Agent
instance or ``open`` too), and follows a
method called on an Agent instance as it follows ``self.method()``: ``openprogram-lint``
and the pre-run check of ``openprogram run`` report the same line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_programs import cli, lint

HEAD = """import random

from openprogram import Agent, llm, step


def fetch(x: str) -> str:
    return x.upper()


class Bot(Agent):
    def normalize(self, q: str) -> str:
        return q.strip().lower()

    def draft(self, q: str) -> str:
        return self("Draft " + q)


bot = Bot()


def main(q: str) -> str:
"""
TAIL = """

main.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["main"]
"""

REFUSED = [
    (
        "    order = sorted([q, 'b'], key=lambda _: random.random())\n"
        "    return step('fetch', fetch, order[0])",
        "main.py:22:44: OP205 non-deterministic call random.random() in resumable function "
        "'main' outside a step",
    ),
    (
        "    picks = list(map(random.choice, [[q, 'a'], ['b', 'c']]))\n"
        "    return step('fetch', fetch, ''.join(picks))",
        "main.py:22:22: OP205 non-deterministic callable random.choice passed to map() in "
        "resumable function 'main' outside a step",
    ),
    (
        "    parts = list(map(lambda s: llm('Summarize ' + s), [q, q + '!']))\n"
        "    return step('fetch', fetch, ' '.join(parts))",
        "main.py:22:32: OP206 model call (openprogram.llm) directly in resumable function 'main'",
    ),
    (
        "    parts = list(map(llm, [q, q + '!']))\n    return step('fetch', fetch, ' '.join(parts))",
        "main.py:22:22: OP206 model call (llm passed to map) directly in resumable function 'main'",
    ),
    (
        "    def key(_: str) -> float:\n        return random.random()\n\n"
        "    return step('fetch', fetch, sorted([q, 'b'], key=key)[0])",
        "main.py:23:16: OP205 non-deterministic call random.random() in helper "
        "'main.<locals>.key' of resumable function 'main' outside a step",
    ),
    (  # an Agent instance is callable: map calls it, as bot(q) would
        "    parts = list(map(bot, [q, q + '!']))\n    return step('fetch', fetch, ' '.join(parts))",
        "main.py:22:22: OP206 model call (bot passed to map) directly in resumable function 'main'",
    ),
    (  # a builtin with a side effect handed to map, as open(p) called there
        "    texts = [f.read() for f in map(open, [q])]\n"
        "    return step('fetch', fetch, ' '.join(texts))",
        "main.py:22:36: OP206 file I/O (open passed to map) directly in resumable function 'main'",
    ),
    (
        "    return step('fetch', fetch, bot.draft(q))",
        "main.py:15:16: OP206 model call (self) directly in helper 'Bot.draft'",
    ),
]


@pytest.mark.parametrize(("body", "line"), REFUSED)
def test_lint_and_run_refuse_the_same_line(tmp_path: Path, body: str, line: str) -> None:
    (tmp_path / "main.py").write_text(HEAD + body + TAIL, encoding="utf-8")
    linted = lint("main.py", cwd=tmp_path)
    assert linted.returncode == 1, linted.stdout + linted.stderr
    assert line in linted.stdout
    ran = cli("run", "main.py:main", "--args", '{"q": "x"}', "--store", "st", cwd=tmp_path)
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert line in ran.stderr
    assert cli("runs", "--json", "--store", "st", cwd=tmp_path).stdout.strip() == "[]"


ACCEPTED = [
    # a method of the Agent doing string work runs as self.normalize(q) would
    "    return step('fetch', fetch, bot.normalize(q))",
    # a lambda that is the key of a sort, with no model call or random value in it
    "    return step('fetch', fetch, sorted([q, 'b'], key=lambda s: s.lower())[0])",
    # a function handed to map that does plain work
    "    return step('fetch', fetch, ''.join(map(str.strip, [q, ' b '])))",
    # an Agent instance handed over as data, not called
    "    return step('fetch', fetch, q + str(isinstance(bot, Agent)))",
]


@pytest.mark.parametrize("body", ACCEPTED)
def test_lint_and_run_accept_plain_work(tmp_path: Path, body: str) -> None:
    (tmp_path / "main.py").write_text(HEAD + body + TAIL, encoding="utf-8")
    linted = lint("main.py", cwd=tmp_path)
    assert linted.returncode == 0, linted.stdout + linted.stderr
    ran = cli(
        "run", "main.py:main", "--args", '{"q": " X "}', "--store", "st", "--json", cwd=tmp_path
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert json.loads(ran.stdout)["status"] == "completed"


def test_a_method_no_class_defines_is_no_model_call_but_a_turn_is(tmp_path: Path) -> None:
    body = "    a = bot.ask(q)\n    b = bot.run_turn(q)\n    return step('fetch', fetch, a + b)"
    (tmp_path / "main.py").write_text(HEAD + body + TAIL, encoding="utf-8")
    out = lint("main.py", cwd=tmp_path).stdout
    assert "OP206 model call (bot.run_turn)" in out
    assert "bot.ask" not in out


PLAIN_CLASSES = """import random

from openprogram import llm, step


def fetch(x: str) -> str:
    return x.upper()


class Base:
    def pick(self) -> float:
        return random.random()


class Helper(Base):
    def compute(self, q: str) -> str:
        return llm("Summarize " + q)

    @classmethod
    def make(cls) -> float:
        return random.random()

    def clean(self, q: str) -> str:
        return q.strip()


def on_instance(q: str) -> str:
    h = Helper()
    return step("fetch", fetch, h.compute(q))


def on_new_instance(q: str) -> str:
    return step("fetch", fetch, Helper().compute(q))


def inherited(q: str) -> str:
    h = Helper()
    return step("fetch", fetch, q + str(h.pick()))


def on_class(q: str) -> str:
    return step("fetch", fetch, q + str(Helper.make()))


def plain(q: str) -> str:
    return step("fetch", fetch, Helper().clean(q))


for f in (on_instance, on_new_instance, inherited, on_class, plain):
    f.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["on_instance", "on_new_instance", "inherited", "on_class", "plain"]
"""


@pytest.mark.parametrize(
    ("entry", "line"),
    [
        (
            "on_instance",
            "main.py:17:16: OP206 model call (openprogram.llm) directly in helper 'Helper.compute'",
        ),
        (
            "on_new_instance",
            "main.py:17:16: OP206 model call (openprogram.llm) directly in helper 'Helper.compute'",
        ),
        (
            "inherited",
            "main.py:12:16: OP205 non-deterministic call random.random() in helper 'Base.pick'",
        ),
        (
            "on_class",
            "main.py:21:16: OP205 non-deterministic call random.random() in helper 'Helper.make'",
        ),
    ],
)
def test_methods_of_a_plain_class_followed_by_lint_and_run(
    tmp_path: Path, entry: str, line: str
) -> None:
    """``h.compute()`` on an instance of a class of the module (no Agent), on
    ``Helper()``, a method inherited from a base class, a classmethod on the class: their
    bodies run in the resumable body, as a module function's would."""
    (tmp_path / "main.py").write_text(PLAIN_CLASSES, encoding="utf-8")
    linted = lint("main.py", cwd=tmp_path)
    assert line in linted.stdout, linted.stdout
    ran = cli("run", f"main.py:{entry}", "--args", '{"q": "x"}', "--store", "st", cwd=tmp_path)
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert line in ran.stderr
    assert f"note: '{entry}' calls " in ran.stderr
    ran = cli("run", "main.py:plain", "--args", '{"q": " x "}', "--store", "st", cwd=tmp_path)
    assert ran.returncode == 0, ran.stdout + ran.stderr


EXACT_CLASS = """import random

from openprogram import step


def save(x: str) -> str:
    return x.upper()


class Source:
    def fetch(self, q: str) -> str:
        return self.clean(q)

    def clean(self, q: str) -> str:
        return q.strip()


class ShuffledSource(Source):
    def clean(self, q: str) -> str:
        return random.choice([q, q.upper()])


def plain(q: str) -> str:
    return step("save", save, Source().fetch(q))


def shuffled(q: str) -> str:
    source = ShuffledSource()
    return step("save", save, source.fetch(q))


for f in (plain, shuffled):
    f.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["plain", "shuffled"]
"""


def test_self_in_a_method_of_a_made_instance_is_that_class(tmp_path: Path) -> None:
    """``Source().fetch(q)`` runs ``Source.clean`` for ``self.clean(q)``, not the override
    of a subclass the body never makes: lint and run accept ``plain`` (both refused it
    before, with OP205 in ``ShuffledSource.clean``) and refuse ``shuffled``."""
    (tmp_path / "main.py").write_text(EXACT_CLASS, encoding="utf-8")
    line = (
        "main.py:20:16: OP205 non-deterministic call random.choice() in helper "
        "'ShuffledSource.clean' outside a step"
    )
    linted = lint("main.py", cwd=tmp_path)
    assert linted.stdout.count(line) == 1, linted.stdout
    assert "'plain' calls" not in linted.stdout
    ran = cli("run", "main.py:plain", "--args", '{"q": " x "}', "--store", "st", cwd=tmp_path)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    ran = cli("run", "main.py:shuffled", "--args", '{"q": "x"}', "--store", "st", cwd=tmp_path)
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert line in ran.stderr
    assert "note: 'shuffled' calls 'Source.fetch' here" in ran.stderr
