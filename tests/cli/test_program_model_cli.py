"""One rulebook from the user's side: ``openprogram-lint`` and ``openprogram run`` (real
subprocesses) refuse the same Programs with the same code, however the import is spelt,
and honour the same suppressions and config."""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

import pytest
from cli_programs import LINT, cli, cli_json, lint

TEMPLATE = """\
{imports}
from openprogram import step


def double(n: int) -> int:
    return 2 * n


def main(n: int = 1) -> dict:
    {line}
    return {{"value": step("double", double, n)}}


main.__agent_options__ = {{"resumable": True}}
PROGRAM_ENTRIES = ["main"]
"""

# (imports, offending line, code): the spellings people actually write
SPELLINGS = [
    ("import time as t", "started = t.time()", "OP205"),
    ("from random import choice", "pick = choice([1, 2])", "OP205"),
    ("from time import monotonic", "started = monotonic()", "OP205"),
    ("from secrets import token_hex", "token = token_hex(4)", "OP205"),
    ("from importlib import import_module", 'mod = import_module("json")', "OP201"),
    ("from httpx import get", 'page = get("http://127.0.0.1:9")', "OP206"),
    ("from subprocess import check_output", 'out = check_output(["true"])', "OP206"),
    ("from urllib.request import urlopen", 'page = urlopen("http://127.0.0.1:9")', "OP206"),
    ("import os", 'home = os.environ["HOME"]', "OP205"),
    ("from os import getenv", 'home = getenv("HOME")', "OP205"),
    # a module-level alias of an import
    ("import time\nclock = time", "started = clock.time()", "OP205"),
    ("import time\nnow = time.time", "started = now()", "OP205"),
    ("from random import choice\npick = choice", "x = pick([1, 2])", "OP205"),
    # a star import binds what the module exports
    ("from time import *", "started = time()", "OP205"),
    ("from random import *", "x = random()", "OP205"),
    ("from os import *", 'home = environ["HOME"]', "OP205"),
    ("from os import *", 'fd = open("notes.txt", O_RDONLY)', "OP206"),  # os.open
    ("from openprogram import *", 'out = llm("hi")', "OP206"),
    # getattr with a literal attribute name is the attribute
    ("import time", 'started = getattr(time, "time")()', "OP205"),
    ('import time\nnow = getattr(time, "time")', "started = now()", "OP205"),
    ("import os", 'code = getattr(os, "system")("true")', "OP206"),
    # a generator made at module level: seeded or not, every run of the process shares it
    ("import random\nrng = random.Random()", "x = rng.random()", "OP205"),
    ("import random\nrng = random.Random(0)", "x = rng.choice([1, 2])", "OP205"),
    ("from random import SystemRandom\nrng = SystemRandom()", "x = rng.randint(1, 6)", "OP205"),
    # model calls: an agent loop, a Planner whose workflow() calls llm()/agent()
    ("from openprogram import goal", 'done = goal("tidy the notes")', "OP206"),
    # an Agent made by a factory or held by a class; a model runtime's request
    (
        "from openprogram import Agent\n\n\ndef make_bot() -> Agent:\n    return Agent()",
        'out = make_bot()("hi")',
        "OP206",
    ),
    (
        "from openprogram import Agent\n\n\nclass Team:\n    bot = Agent()",
        'out = Team.bot("hi")',
        "OP206",
    ),
    (
        "from openprogram import create_runtime",
        'out = create_runtime("scripted:echo").exec("hi")',
        "OP206",
    ),
    ("import openprogram as op", 'out = op.Runtime("scripted:echo").exec_full("hi")', "OP206"),
    (
        'from openprogram import create_runtime\nrt = create_runtime("scripted:echo")',
        'out = rt.exec("hi")',
        "OP206",
    ),
    # a model-judged condition; a model call in what repeat_until runs at once
    ("import openprogram as op", 'out = op.repeat_until(lambda: n, "it is even")', "OP206"),
    (
        "from openprogram import llm, repeat_until as ru",
        'out = ru(lambda: llm("hi"), lambda r: len(r) > 1)',
        "OP206",
    ),
    # a model call in what the control-flow parallel([...]) runs at once (not as steps)
    (
        "from openprogram import llm\n"
        "from openprogram.agentic_programming.control_flow import parallel as par",
        'out = par([lambda: llm("hi"), lambda: n])',
        "OP206",
    ),
    (
        "from openprogram.agentic_programming import control_flow as cf\nimport openprogram",
        'out = cf.parallel([lambda t=t: openprogram.llm(t) for t in ("a", "b")])',
        "OP206",
    ),
    ("import openprogram as op", 'out = op.parallel([lambda: op.llm("hi")])', "OP206"),
    # a model call through a name bound to one; control_flow's yes/no judge
    ("import openprogram as op", 'dm = op.decision.make; pick = dm("Pick", ["p", "q"])', "OP206"),
    (
        "from openprogram.agentic_programming.control_flow import judge",
        'ok = judge("n is even", n)',
        "OP206",
    ),
    (
        "from openprogram.programs.workflow import plan_and_run as plan",
        'done = plan("tidy the notes").result',
        "OP206",
    ),
]


def write(folder: Path, imports: str, line: str) -> None:
    (folder / "prog.py").write_text(TEMPLATE.format(imports=imports, line=line), encoding="utf-8")


@pytest.fixture(autouse=True)
def _own_check_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))


@pytest.mark.parametrize(("imports", "line", "code"), SPELLINGS, ids=[s[0] for s in SPELLINGS])
def test_lint_and_run_refuse_every_spelling(
    tmp_path: Path, imports: str, line: str, code: str
) -> None:
    write(tmp_path, imports, line)
    linted = lint("prog.py", cwd=tmp_path)
    assert linted.returncode == 1, linted.stdout + linted.stderr
    (finding,) = [ln for ln in linted.stdout.splitlines() if f" {code} " in ln]
    assert finding.startswith(f"prog.py:{10 + imports.count(chr(10))}:")
    ran = cli("run", "prog.py:main", "--store", "st", cwd=tmp_path)
    assert ran.returncode == 2, ran.stdout + ran.stderr
    # the run refuses with the linter's own line, verbatim
    assert finding in ran.stderr


# (imports, line): spellings next to those above that are deterministic and stay clean
LOOKALIKES = [
    # the module's own time() rebinds the star-imported one
    ("from time import *\n\n\ndef time() -> float:\n    return 0.0", "started = time()"),
    ("from time import *", 'started = step("stamp", time)'),
    ("import math", 'x = getattr(math, "floor")(2.5)'),
    ("import time", 'x = getattr(time, "time")'),  # not called here
    ("import random\nrng = random.Random(0)", 'x = step("pick", rng.choice, [1, 2])'),
    ("from fractions import Fraction\nhalf = Fraction(1, 2)", "x = half.limit_denominator(10)"),
    # a factory or class attribute that holds no Agent; a runtime used without a request
    ("def make_fmt() -> object:\n    return str.upper", 'out = make_fmt()("hi")'),
    ("class Team:\n    fmt = str.upper", 'out = Team.fmt("hi")'),
    ("from openprogram import create_runtime", 'create_runtime("scripted:echo").close()'),
]


@pytest.mark.parametrize(("imports", "line"), LOOKALIKES, ids=[s[0] for s in LOOKALIKES])
def test_lint_and_run_accept_lookalikes(tmp_path: Path, imports: str, line: str) -> None:
    write(tmp_path, imports, line)
    linted = lint("prog.py", cwd=tmp_path)
    assert linted.returncode == 0, linted.stdout + linted.stderr
    code, out = cli_json("run", "prog.py:main", "--args", '{"n": 3}', "--store", "st", cwd=tmp_path)
    assert (code, out["status"], out["result"]) == (0, "completed", {"value": 6}), out


def test_lint_runs_no_code_of_a_project_module_named_like_the_standard_library(
    tmp_path: Path,
) -> None:
    """`from colorsys import *` with the project's own colorsys.py first on the path (the
    project on PYTHONPATH, as a language server is often started): the analyzer reads a
    standard module's names by importing it, and must not import (run) the project's
    module instead; the star import of time still resolves."""
    (tmp_path / "colorsys.py").write_text(
        'open("RAN", "w").write("project code ran in the analyzer")\n', encoding="utf-8"
    )
    write(tmp_path, "from colorsys import *\nfrom time import *", "started = time()")
    path = f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"
    linted = lint("prog.py", cwd=tmp_path, extra_env={"PYTHONPATH": path})
    assert linted.returncode == 1, linted.stdout + linted.stderr
    assert " OP205 non-deterministic call time.time()" in linted.stdout
    assert not (tmp_path / "RAN").exists()


@pytest.mark.parametrize(
    ("imports", "line"),
    [
        ("from openprogram import repeat_until", "m = repeat_until(lambda: n, lambda r: r > 0)"),
        ("from openprogram import repeat_until as ru", 'm = ru(lambda: step("d", double, n), int)'),
        (
            "import openprogram as op",
            "m = op.repeat_until(action=lambda: step('d', double, n), condition=lambda r: r > 1)",
        ),
    ],
)
def test_repeat_until_judged_in_python_is_no_model_call(
    tmp_path: Path, imports: str, line: str
) -> None:
    """A lambda (or any Python callable) as repeat_until's condition is judged in Python:
    neither the linter nor the run refuses it as a model call outside a step."""
    write(tmp_path, imports, line)
    linted = lint("prog.py", cwd=tmp_path)
    assert linted.returncode == 0, linted.stdout + linted.stderr
    code, out = cli_json("run", "prog.py:main", "--args", '{"n": 3}', "--store", "st", cwd=tmp_path)
    assert (code, out["status"], out["result"]) == (0, "completed", {"value": 6}), out


@pytest.mark.parametrize(
    ("imports", "line"),
    [
        (
            "from openprogram.agentic_programming.control_flow import parallel as par",
            'm = par([lambda: step("a", double, n), lambda: step("b", double, n + 1)])',
        ),
        (
            "from openprogram import parallel",
            'm = parallel({"a": (double, (n,), {}), "b": (double, (n + 1,), {})})',
        ),
        (  # the top-level parallel given a list is the control-flow one: no branch names
            "import openprogram as op",
            'm = op.parallel([lambda: step("a", double, n), lambda: step("b", double, n + 1)])',
        ),
        (
            "from openprogram import parallel as par",
            'm = par([lambda i=i: step("a", double, n + i) for i in range(2)])',
        ),
    ],
)
def test_parallel_of_steps_is_no_model_call(tmp_path: Path, imports: str, line: str) -> None:
    """Steps in what the control-flow ``parallel([...])`` runs at once, and the durable
    ``parallel({...})`` (its functions run as steps): neither is refused."""
    write(tmp_path, imports, line)
    linted = lint("prog.py", cwd=tmp_path)
    assert linted.returncode == 0, linted.stdout + linted.stderr
    code, out = cli_json("run", "prog.py:main", "--args", '{"n": 3}', "--store", "st", cwd=tmp_path)
    assert (code, out["status"], out["result"]) == (0, "completed", {"value": 6}), out


def test_noqa_works_at_run_time_and_in_lint(tmp_path: Path) -> None:
    write(tmp_path, "import random", "rng = random.Random(42)  # noqa: OP205")
    assert lint("prog.py", cwd=tmp_path).returncode == 0
    code, out = cli_json("run", "prog.py:main", "--args", '{"n": 3}', "--store", "st", cwd=tmp_path)
    assert (code, out["status"], out["result"]) == (0, "completed", {"value": 6})


def test_config_ignore_applies_at_run_time(tmp_path: Path) -> None:
    write(tmp_path, "import time as t", "started = t.time()")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.openprogram.lint]\nper-file-ignores = {"prog.py" = ["OP205"]}\n', encoding="utf-8"
    )
    assert lint("prog.py", cwd=tmp_path).returncode == 0
    code, out = cli_json("run", "prog.py:main", "--store", "st", cwd=tmp_path)
    assert (code, out["status"]) == (0, "completed")


def test_cached_check_notices_an_edit(tmp_path: Path) -> None:
    write(tmp_path, "import time as t", "started = 1")
    assert cli("run", "prog.py:main", "--store", "st", cwd=tmp_path).returncode == 0
    assert cli("run", "prog.py:main", "--store", "st", cwd=tmp_path).returncode == 0  # warm
    write(tmp_path, "import time as t", "started = t.time()")
    ran = cli("run", "prog.py:main", "--store", "st", cwd=tmp_path)
    assert ran.returncode == 2 and "OP205" in ran.stderr


AGENT_PROGRAM = textwrap.dedent(
    """\
    from openprogram import Agent, step

    critic = Agent(model="m")


    class Writer(Agent):
        def draft(self, topic: str) -> str:
            return self(topic)


    class Base(Agent):
        method_options = {"report": {"resumable": True}}

        def report(self, topic: str) -> str:
            return step("echo", str.upper, topic)


    class Child(Base):
        def report(self, topic: str) -> str:
            {line}
            return step("echo", str.upper, topic)


    report = Child().report
    PROGRAM_ENTRIES = ["report"]
    """
)


@pytest.mark.parametrize(
    "line",
    ['critic("judge " + topic)', "Writer().draft(topic)", "writer = Writer(); writer.draft(topic)"],
)
def test_model_call_through_agent_in_inherited_resumable(tmp_path: Path, line: str) -> None:
    (tmp_path / "prog.py").write_text(AGENT_PROGRAM.replace("{line}", line), encoding="utf-8")
    linted = lint("prog.py", cwd=tmp_path)
    assert linted.returncode == 1 and "OP206 model call" in linted.stdout, linted.stdout
    ran = cli("run", "prog.py:report", "--args", '{"topic": "x"}', "--store", "st", cwd=tmp_path)
    assert ran.returncode == 2 and "OP206 model call" in ran.stderr, ran.stdout + ran.stderr


TEAM_PROGRAM = textwrap.dedent(
    """\
    from openprogram import Agent, step


    class Base:
        reviewer = Agent()

        def make_writer(self) -> Agent:
            return Agent()


    class Team(Base):
        method_options = {"report": {"resumable": True}}

        def report(self, topic: str) -> str:
            {line}
            return step("echo", str.upper, topic)


    report = Team().report
    PROGRAM_ENTRIES = ["report"]
    """
)


@pytest.mark.parametrize(
    "line",
    [
        'topic = self.reviewer("judge " + topic)',  # a class attribute of the base class
        "topic = self.make_writer()(topic)",  # what a factory method returns
        'topic = Team.reviewer("judge " + topic)',
    ],
)
def test_model_call_through_class_attribute_or_factory_method(tmp_path: Path, line: str) -> None:
    (tmp_path / "prog.py").write_text(TEAM_PROGRAM.replace("{line}", line), encoding="utf-8")
    linted = lint("prog.py", cwd=tmp_path)
    assert linted.returncode == 1, linted.stdout + linted.stderr
    (finding,) = [ln for ln in linted.stdout.splitlines() if " OP206 model call" in ln]
    assert finding.startswith("prog.py:15:"), finding
    ran = cli("run", "prog.py:report", "--args", '{"topic": "x"}', "--store", "st", cwd=tmp_path)
    assert ran.returncode == 2 and finding in ran.stderr, ran.stdout + ran.stderr


TEAM_INIT_PROGRAM = textwrap.dedent(
    """\
    from openprogram import Agent, step


    class Base(Agent):
        def __init__(self, fmt=str.upper) -> None:
            super().__init__()
            self.critic = Agent()
            self.fmt = fmt
            self.plain = str.strip


    class Team(Base):
        method_options = {"report": {"resumable": True}}

        def report(self, topic: str) -> str:
            {line}
            return step("echo", str.upper, topic)


    report = Team().report
    PROGRAM_ENTRIES = ["report"]
    """
)


def test_model_call_through_an_instance_attribute(tmp_path: Path) -> None:
    """The most common spelling: an Agent kept in ``self.critic`` by ``__init__`` (of the
    base class) and called in a resumable method."""
    line = 'topic = self.critic("judge " + topic)'
    (tmp_path / "prog.py").write_text(TEAM_INIT_PROGRAM.replace("{line}", line), encoding="utf-8")
    linted = lint("prog.py", cwd=tmp_path)
    assert linted.returncode == 1, linted.stdout + linted.stderr
    (finding,) = [ln for ln in linted.stdout.splitlines() if " OP206 model call" in ln]
    assert finding.startswith("prog.py:16:"), finding
    ran = cli("run", "prog.py:report", "--args", '{"topic": "x"}', "--store", "st", cwd=tmp_path)
    assert ran.returncode == 2 and finding in ran.stderr, ran.stdout + ran.stderr


TEAM_OUTSIDE_PROGRAM = textwrap.dedent(
    """\
    from openprogram import Agent, step


    class Team:
        lead = Agent()

        def __init__(self) -> None:
            self.bot = Agent()
            self.fmt = str.upper


    def report(topic: str) -> str:
        {line}
        return step("echo", str.upper, topic)


    report.__agent_options__ = {"resumable": True}
    PROGRAM_ENTRIES = ["report"]
    """
)


@pytest.mark.parametrize(
    "line",
    [
        "topic = Team().bot(topic)",
        "team = Team(); topic = team.bot(topic)",
        "topic = Team().lead(topic)",
    ],
)
def test_model_call_through_an_instance_made_in_the_function(tmp_path: Path, line: str) -> None:
    """``Team().bot(q)`` and ``team = Team(); team.bot(q)``, where ``Team.__init__`` keeps
    an Agent in ``self.bot``: a model call in a resumable function that lint and run
    passed (only ``self.bot`` inside the class was followed)."""
    (tmp_path / "prog.py").write_text(
        TEAM_OUTSIDE_PROGRAM.replace("{line}", line), encoding="utf-8"
    )
    linted = lint("prog.py", cwd=tmp_path)
    assert linted.returncode == 1, linted.stdout + linted.stderr
    (finding,) = [ln for ln in linted.stdout.splitlines() if " OP206 model call" in ln]
    assert finding.startswith("prog.py:13:"), finding
    ran = cli("run", "prog.py:report", "--args", '{"topic": "x"}', "--store", "st", cwd=tmp_path)
    assert ran.returncode == 2 and finding in ran.stderr, ran.stdout + ran.stderr


def test_an_instance_attribute_holding_no_agent_stays_clean_outside_its_class(
    tmp_path: Path,
) -> None:
    (tmp_path / "prog.py").write_text(
        TEAM_OUTSIDE_PROGRAM.replace("{line}", "topic = Team().fmt(topic)"), encoding="utf-8"
    )
    linted = lint("prog.py", cwd=tmp_path)
    assert linted.returncode == 0, linted.stdout + linted.stderr
    code, out = cli_json(
        "run", "prog.py:report", "--args", '{"topic": "x"}', "--store", "s", cwd=tmp_path
    )
    assert (code, out["status"], out["result"]) == (0, "completed", "X"), out


@pytest.mark.parametrize("line", ["topic = self.fmt(topic)", "topic = self.plain(topic)"])
def test_instance_attribute_holding_no_agent_stays_clean(tmp_path: Path, line: str) -> None:
    (tmp_path / "prog.py").write_text(TEAM_INIT_PROGRAM.replace("{line}", line), encoding="utf-8")
    linted = lint("prog.py", cwd=tmp_path)
    assert linted.returncode == 0, linted.stdout + linted.stderr
    code, out = cli_json(
        "run", "prog.py:report", "--args", '{"topic": " x "}', "--store", "s", cwd=tmp_path
    )
    assert (code, out["status"]) == (0, "completed"), out


def test_inherited_resumable_without_model_call_runs(tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(
        AGENT_PROGRAM.replace("{line}", "topic = topic.strip()"), encoding="utf-8"
    )
    assert lint("prog.py", cwd=tmp_path).returncode == 0
    code, out = cli_json(
        "run", "prog.py:report", "--args", '{"topic": "x"}', "--store", "s", cwd=tmp_path
    )
    assert (code, out["status"], out["result"]) == (0, "completed", "X")


HELPERS = """\
import time


def stamp(text: str) -> str:
    return text + str(time.time())
"""

CLOCK_PROGRAM = """\
{imports}
from openprogram import step


def main(text: str = "x") -> str:
    {line}
    return step("upper", str.upper, text)


main.__agent_options__ = {{"resumable": True}}
PROGRAM_ENTRIES = ["main"]
"""


@pytest.mark.parametrize(
    ("imports", "line"),
    [
        ("import helpers", "text = helpers.stamp(text)"),
        ("from helpers import stamp", "text = stamp(text)"),
        ("from helpers import now", "text = text + str(now())"),  # a re-export of time.time
        ("import helpers", "text = text + str(helpers.now())"),  # the same, as an attribute
        ("import helpers as h", "text = text + str(h.now())"),
        ("from helpers import *", "text = stamp(text)"),  # a star import of the helper
        ("from helpers import *", "text = text + str(now())"),
    ],
)
def test_first_party_helper_module_is_followed(tmp_path: Path, imports: str, line: str) -> None:
    (tmp_path / "helpers.py").write_text(
        HELPERS + "\n\nfrom time import time as now\n", encoding="utf-8"
    )
    (tmp_path / "prog.py").write_text(
        CLOCK_PROGRAM.format(imports=imports, line=line), encoding="utf-8"
    )
    ran = cli("run", "prog.py:main", "--store", "st", cwd=tmp_path)
    assert ran.returncode == 2 and "OP205" in ran.stderr, ran.stdout + ran.stderr
    assert ("helpers.py:5:" in ran.stderr) == ("now()" not in line)  # found in the helper file


@pytest.mark.parametrize(
    ("imports", "line"),
    [
        ("from pkg import now", "text = text + str(now())"),
        ("import pkg", "text = text + str(pkg.now())"),
        ("from pkg import clock", "text = text + str(clock.now())"),
    ],
)
def test_a_re_export_through_a_relative_import_is_followed(
    tmp_path: Path, imports: str, line: str
) -> None:
    """``pkg/__init__.py`` re-exports ``now`` with ``from .clock import now``, and
    ``pkg/clock.py`` has ``from time import time as now``: a clock read in the Program,
    which lint and the pre-run check passed (a relative re-export was not followed)."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from .clock import now\n", encoding="utf-8")
    (tmp_path / "pkg" / "clock.py").write_text("from time import time as now\n", encoding="utf-8")
    (tmp_path / "prog.py").write_text(
        CLOCK_PROGRAM.format(imports=imports, line=line), encoding="utf-8"
    )
    ran = cli("run", "prog.py:main", "--store", "st", cwd=tmp_path)
    assert ran.returncode == 2 and "OP205" in ran.stderr, ran.stdout + ran.stderr
    linted = lint("prog.py", cwd=tmp_path)
    assert linted.returncode == 1 and "OP205" in linted.stdout, linted.stdout + linted.stderr


def test_cache_notices_a_changed_helper_module(tmp_path: Path) -> None:
    (tmp_path / "helpers.py").write_text(HELPERS.replace("time.time()", "1"), encoding="utf-8")
    (tmp_path / "prog.py").write_text(
        CLOCK_PROGRAM.format(imports="import helpers", line="text = helpers.stamp(text)"),
        encoding="utf-8",
    )
    assert cli("run", "prog.py:main", "--store", "st", cwd=tmp_path).returncode == 0
    (tmp_path / "helpers.py").write_text(HELPERS, encoding="utf-8")  # the Program is unchanged
    ran = cli("run", "prog.py:main", "--store", "st", cwd=tmp_path)
    assert ran.returncode == 2 and "helpers.py:5:" in ran.stderr, ran.stdout + ran.stderr


def test_noqa_in_a_helper_module_is_honoured_and_never_reported_unused(tmp_path: Path) -> None:
    """``# noqa: OP205`` written once, in the helper module: the Program's lint and its run
    honour it, and the helper linted on its own (or with the folder) reported it unused
    (OP900), and ``--fix`` removed it, so the Program's lint and run refused again."""
    helper = HELPERS.replace("str(time.time())", "str(time.time())  # noqa: OP205")
    (tmp_path / "helpers.py").write_text(helper, encoding="utf-8")
    (tmp_path / "prog.py").write_text(
        CLOCK_PROGRAM.format(imports="import helpers", line="text = helpers.stamp(text)"),
        encoding="utf-8",
    )
    for args in (["prog.py"], ["helpers.py"], ["."], ["helpers.py", "prog.py"], ["--fix", "."]):
        linted = lint(*args, cwd=tmp_path)
        assert (linted.returncode, linted.stdout) == (0, ""), (args, linted.stdout)
    assert (tmp_path / "helpers.py").read_text(encoding="utf-8") == helper
    code, out = cli_json("run", "prog.py:main", "--store", "st", cwd=tmp_path)
    assert (code, out["status"]) == (0, "completed"), out


def test_run_lists_every_finding_on_its_own_line_as_lint_prints_them(tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(
        TEMPLATE.format(
            imports="import time as t\nfrom random import choice",
            line="started, pick = t.time(), choice([1, 2])",
        ),
        encoding="utf-8",
    )
    linted = lint("prog.py", "--quiet", cwd=tmp_path)
    findings = [ln for ln in linted.stdout.splitlines() if " OP205 " in ln]
    assert len(findings) == 2, linted.stdout
    ran = cli("run", "prog.py:main", "--store", "st", cwd=tmp_path)
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert ran.stderr.splitlines() == [
        "openprogram: error: main cannot run as a resumable function:",
        *findings,
    ]
    code, out = cli_json("run", "prog.py:main", "--store", "st", cwd=tmp_path)
    assert code == 2 and out["status"] == "error"
    assert out["error"].splitlines() == ["main cannot run as a resumable function:", *findings]


# ---- openprogram-lint on the Program alone follows its helper modules as the run does

CLOCK = """\
import time
from random import choice
from random import random as rand


def now() -> float:
    return time.time()


def steady() -> float:
    return 1.0
"""


# AGENT_PROGRAM whose subclass's inherited resumable method calls an aliased helper module
INHERITED = "import helpers as h\n" + AGENT_PROGRAM.replace(
    "{line}", "topic = topic + str(h.now())"
)


def lint_and_run(folder: Path, entry: str, args: str = "{}") -> tuple[list[str], list[str]]:
    """What ``openprogram-lint prog.py`` and ``openprogram run`` print about the Program
    (lint's summary line and the run's header line left out)."""
    linted = lint("prog.py", cwd=folder)
    assert linted.returncode == 1 and not linted.stderr, linted.stdout + linted.stderr
    ran = cli("run", f"prog.py:{entry}", "--args", args, "--store", "st", cwd=folder)
    assert ran.returncode == 2, ran.stdout + ran.stderr
    header, *refused = ran.stderr.splitlines()
    assert header.startswith("openprogram: error: ")
    assert header.endswith(" cannot run as a resumable function:")
    return linted.stdout.splitlines()[:-1], refused


@pytest.mark.parametrize(
    ("imports", "line", "where"),
    [
        ("import helpers", "text = text + str(helpers.now())", "helpers.py:7:12:"),
        ("from helpers import now", "text = text + str(now())", "helpers.py:7:12:"),
        ("import helpers as h", "text = text + str(h.now())", "helpers.py:7:12:"),
        # re-exports: what the helper module imported, called through it
        ("import helpers", 'text = text + helpers.choice("ab")', "prog.py:6:19:"),
        ("from helpers import rand", "text = text + str(rand())", "prog.py:6:23:"),
    ],
)
def test_lint_of_the_program_alone_follows_its_helper_module(
    tmp_path: Path, imports: str, line: str, where: str
) -> None:
    (tmp_path / "helpers.py").write_text(CLOCK, encoding="utf-8")
    (tmp_path / "prog.py").write_text(
        CLOCK_PROGRAM.format(imports=imports, line=line), encoding="utf-8"
    )
    linted, refused = lint_and_run(tmp_path, "main")
    (finding,) = [ln for ln in linted if " OP205 " in ln]
    assert finding.startswith(where), linted
    # the same finding, code and message (and call chain) at lint time and at run time
    assert sorted(linted) == sorted(refused)


def test_inherited_resumable_method_calling_an_aliased_helper_module(tmp_path: Path) -> None:
    (tmp_path / "helpers.py").write_text(CLOCK, encoding="utf-8")
    (tmp_path / "prog.py").write_text(INHERITED, encoding="utf-8")
    linted, refused = lint_and_run(tmp_path, "report", '{"topic": "x"}')
    assert linted == [
        "helpers.py:7:12: OP205 non-deterministic call time.time() in helper 'now' outside a "
        "step: a resumed run would see a different value; move it into a step",
        "    prog.py:21:29: note: 'Child.report' calls 'helpers.now' here",
    ]
    assert sorted(linted) == sorted(refused)


def test_helper_module_reached_through_another_one_and_a_cycle(tmp_path: Path) -> None:
    (tmp_path / "helpers.py").write_text(
        "import util\n\n\ndef ping(n: int) -> float:\n    return util.pong(n)\n",
        encoding="utf-8",
    )
    (tmp_path / "util.py").write_text(  # imports helpers back: a cycle
        "import time\n\nimport helpers\n\n\ndef pong(n: int) -> float:\n"
        "    return helpers.ping(n - 1) if n else time.monotonic()\n",
        encoding="utf-8",
    )
    (tmp_path / "prog.py").write_text(
        CLOCK_PROGRAM.format(imports="import helpers", line="text = text + str(helpers.ping(2))"),
        encoding="utf-8",
    )
    linted, refused = lint_and_run(tmp_path, "main")
    assert linted[0].startswith("util.py:7:42: OP205 non-deterministic call time.monotonic()")
    assert linted[1:] == [
        "    prog.py:6:23: note: 'main' calls 'helpers.ping' here",
        "    helpers.py:5:12: note: 'ping' calls 'util.pong' here",
    ]
    assert sorted(linted) == sorted(refused)


def test_clean_helper_module_no_finding_and_the_run_completes(tmp_path: Path) -> None:
    (tmp_path / "helpers.py").write_text(CLOCK, encoding="utf-8")
    (tmp_path / "prog.py").write_text(
        CLOCK_PROGRAM.format(imports="import helpers", line="text = text + str(helpers.steady())"),
        encoding="utf-8",
    )
    linted = lint("prog.py", cwd=tmp_path)
    assert (linted.returncode, linted.stdout, linted.stderr) == (0, "", "")
    code, out = cli_json("run", "prog.py:main", "--store", "st", cwd=tmp_path)
    assert (code, out["status"], out["result"]) == (0, "completed", "X1.0")


def test_helper_module_with_a_syntax_error_is_not_followed(tmp_path: Path) -> None:
    (tmp_path / "helpers.py").write_text("def now(:\n    return 1\n", encoding="utf-8")
    (tmp_path / "prog.py").write_text(
        CLOCK_PROGRAM.format(imports="import helpers", line="text = text + str(helpers.now())"),
        encoding="utf-8",
    )
    # as by the pre-run check: Python could not import it either; no internal error
    linted = lint("prog.py", cwd=tmp_path)
    assert (linted.returncode, linted.stdout, linted.stderr) == (0, "", "")
    ran = cli("run", "prog.py:main", "--store", "st", cwd=tmp_path)
    assert ran.returncode == 2 and "syntax error" in ran.stderr, ran.stderr
    assert "cannot run as a resumable function" not in ran.stderr
    # the error names the helper and its line, not the Program's line 1
    helper = tmp_path / "helpers.py"
    assert f"{helper}:1: syntax error" in ran.stderr and "(imported by prog.py)" in ran.stderr
    assert "prog.py:1:" not in ran.stderr, ran.stderr
    module = cli("run", "prog:main", "--store", "st", cwd=tmp_path)
    assert module.returncode == 2 and f"{helper}:1: syntax error" in module.stderr, module.stderr
    (tmp_path / "prog.py").write_text("def main(:\n", encoding="utf-8")  # the Program's own
    own = cli("run", "prog.py:main", "--store", "st", cwd=tmp_path)
    assert own.returncode == 2 and "prog.py:1: syntax error" in own.stderr, own.stderr
    assert "imported by" not in own.stderr


def test_module_not_next_to_the_program_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(
        CLOCK_PROGRAM.format(imports="import nothere", line="text = text + str(nothere.now())"),
        encoding="utf-8",
    )
    linted = lint("prog.py", cwd=tmp_path)
    assert linted.returncode == 1 and not linted.stderr
    assert linted.stdout.splitlines()[:-1] == [
        "prog.py:6:23: OP208 resumable function 'main' references the third-party module "
        "'nothere': only standard-library module and class objects can be restored"
    ]


def test_cached_lint_notices_a_changed_helper_module(tmp_path: Path) -> None:
    """The result cache and the replay of an unchanged run depend on the helper files."""
    (tmp_path / "prog.py").write_text(
        CLOCK_PROGRAM.format(imports="import helpers", line="text = text + str(helpers.now())"),
        encoding="utf-8",
    )

    def cached_lint() -> str:
        linted = subprocess.run(
            [LINT, "prog.py"], capture_output=True, text=True, timeout=120, cwd=tmp_path
        )
        assert linted.returncode in (0, 1) and not linted.stderr, linted.stderr
        return " ".join(ln.split(" ")[1] for ln in linted.stdout.splitlines() if ": OP" in ln)

    assert cached_lint() == "OP208"  # no helpers.py yet: a third-party module
    (tmp_path / "helpers.py").write_text(CLOCK, encoding="utf-8")  # appears
    assert cached_lint() == "OP205"
    assert cached_lint() == "OP205"  # replayed
    (tmp_path / "helpers.py").write_text(CLOCK.replace("time.time()", "1.0"), encoding="utf-8")
    assert cached_lint() == ""
    (tmp_path / "prog.py").touch()  # not replayed: the result cache decides, by content
    (tmp_path / "helpers.py").write_text(CLOCK, encoding="utf-8")
    assert cached_lint() == "OP205"


@pytest.mark.parametrize(
    "header",
    [b"# -*- coding: latin-1 -*-\n# caf\xe9\n", b"# caf\xe9 (a stray latin-1 byte)\n"],
    ids=["coding-cookie", "stray-byte"],
)
def test_a_helper_module_that_is_not_utf8_is_followed(tmp_path: Path, header: bytes) -> None:
    """A helper saved in latin-1 (declared by a PEP 263 cookie, or a stray byte in a
    comment, which Python still imports): lint and the run both follow it, as Python does."""
    (tmp_path / "helpers.py").write_bytes(header + CLOCK.encode("utf-8"))
    (tmp_path / "prog.py").write_text(
        CLOCK_PROGRAM.format(imports="import helpers", line="text = text + str(helpers.now())"),
        encoding="utf-8",
    )
    linted, refused = lint_and_run(tmp_path, "main")
    line = header.count(b"\n") + 7  # CLOCK's time.time() is on its line 7
    assert linted[0].startswith(f"helpers.py:{line}:12: OP205 non-deterministic call time.time()")
    assert sorted(linted) == sorted(refused)


DECLARED = """\
import time as t
{imports}
from openprogram import step


def double(n: int) -> int:
    return 2 * n


{decorator}
def {name}(n: int = 1) -> dict:
    started = t.time()
    return {{"value": step("double", double, n)}}


{after}
PROGRAM_ENTRIES = ["main"]
"""

# (imports, decorator, function name, what follows it): the ways to declare resumable
DECLARATIONS = [
    ("from openprogram.durable import resumable", "@resumable", "main", ""),
    ("from openprogram import agentic_function", "@agentic_function(resumable=True)", "main", ""),
    ("import openprogram as op", "@op.agentic_function(resumable=True, expose='io')", "main", ""),
    ("from openprogram.durable import resumable as durable", "", "_main", "main = durable(_main)"),
    (
        "from openprogram import agentic_function",
        "",
        "_main",
        "main = agentic_function(resumable=True)(_main)",
    ),
]


@pytest.mark.parametrize(
    ("imports", "decorator", "name", "after"),
    DECLARATIONS,
    ids=[d[1] or d[3] for d in DECLARATIONS],
)
def test_lint_and_run_refuse_alike_however_resumable_is_declared(
    tmp_path: Path, imports: str, decorator: str, name: str, after: str
) -> None:
    (tmp_path / "prog.py").write_text(
        DECLARED.format(imports=imports, decorator=decorator, name=name, after=after),
        encoding="utf-8",
    )
    linted = lint("prog.py", cwd=tmp_path)
    assert linted.returncode == 1, linted.stdout + linted.stderr
    (finding,) = [ln for ln in linted.stdout.splitlines() if " OP205 " in ln]
    assert finding.startswith("prog.py:12:") and f"resumable function '{name}'" in finding
    ran = cli("run", "prog.py:main", "--store", "st", cwd=tmp_path)
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert finding in ran.stderr


ENTRIES = """\
def main(n: int = 1) -> int:
    return n


{extra}
PROGRAM_ENTRIES = {entries}
"""

# (extra definitions, PROGRAM_ENTRIES, code, the entry the finding concerns): each
# refused by lint and by run alike; ``None``: the whole list (every entry is refused)
BAD_ENTRIES = [
    ("", '["main", "mian"]', "OP402", "mian"),
    ("go = lambda n=1: n", '["main", "go"]', "OP403", "go"),
    ("", "[main, lambda: 1]", "OP403", "<lambda>"),
    ("def _helper() -> int:\n    return 1", '["main", "_helper"]', "OP403", "_helper"),
    ("def numbers():\n    yield 1", '["main", "numbers"]', "OP403", "numbers"),
    # an async def would "complete" with a never-awaited coroutine as its result
    ("async def co(n: int = 1) -> int:\n    return n", '["main", "co"]', "OP403", "co"),
    ("async def co(n: int = 1) -> int:\n    return n", "[main, co]", "OP403", "co"),
    ("async def ticks():\n    yield 1", '["main", "ticks"]', "OP403", "ticks"),
    ("LIMIT = 3", '["main", "LIMIT"]', "OP403", "LIMIT"),
    ("", '["main", "main"]', "OP404", "main"),
    ("", '{"main"}', "OP401", None),
]


@pytest.mark.parametrize(
    ("extra", "entries", "code", "concerns"), BAD_ENTRIES, ids=[e[1] for e in BAD_ENTRIES]
)
def test_bad_program_entries_get_the_same_code_and_message_from_lint_and_run(
    tmp_path: Path, extra: str, entries: str, code: str, concerns: str | None
) -> None:
    """``run`` refuses the entry a finding concerns (or every entry, for a finding on the
    list as a whole) with lint's code and message; another entry runs."""
    (tmp_path / "prog.py").write_text(
        ENTRIES.format(extra=extra, entries=entries), encoding="utf-8"
    )
    linted = lint("prog.py", cwd=tmp_path)
    assert linted.returncode == 1, linted.stdout + linted.stderr
    (finding,) = [ln for ln in linted.stdout.splitlines() if f" {code} " in ln]
    said = finding.split(f" {code} ", 1)[1]
    refused = ["main"] if concerns in (None, "main") else [concerns]
    if concerns == "<lambda>":
        refused = []  # a lambda without a name cannot be named by run
    for name in refused:
        ran = cli("run", f"prog.py:{name}", "--store", "st", cwd=tmp_path)
        assert ran.returncode == 2, ran.stdout + ran.stderr
        assert ran.stderr.strip().splitlines()[-1].endswith(f"prog.py: {code} {said}"), ran.stderr
    if "main" not in refused:
        ran = cli("run", "prog.py:main", "--store", "st", cwd=tmp_path)
        assert ran.returncode == 0, ran.stdout + ran.stderr


def test_a_bad_method_options_entry_reads_in_run_as_lint_prints_it(tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(
        "from openprogram import Agent as Base\n\n\n"
        "class Helper(Base):\n"
        '    method_options = {"go": {"cache": True}}\n\n'
        "    def go(self, q: str) -> str:\n"
        "        return q\n\n\n"
        "def main() -> int:\n"
        "    return 1\n\n\n"
        'PROGRAM_ENTRIES = ["main"]\n',
        encoding="utf-8",
    )
    linted = lint("prog.py", cwd=tmp_path)
    (finding,) = [ln for ln in linted.stdout.splitlines() if " OP106 " in ln]
    assert finding.startswith("prog.py:5:30: ")
    ran = cli("run", "prog.py:main", "--store", "st", cwd=tmp_path)
    assert ran.returncode == 2, ran.stdout + ran.stderr
    said = finding.removeprefix("prog.py:5:30: ")
    assert f"prog.py: importing the Program failed: {said} (in class Helper of prog.py)" in (
        ran.stderr
    )
    assert "_openprogram_program_" not in ran.stderr


STEP_USAGE = [
    ('step("add one", lambda y: y + 1, n)', "OP213"),
    ('step("a/b", abs, n)', "OP212"),
    ('step("", abs, n)', "OP212"),
    ('workflow("w#1", abs, n)', "OP212"),
]


@pytest.mark.parametrize(("call", "code"), STEP_USAGE, ids=[c[0] for c in STEP_USAGE])
def test_a_bad_step_is_refused_before_the_run_is_recorded(
    tmp_path: Path, call: str, code: str
) -> None:
    """The pre-run check reports OP212/OP213 as lint does: the run is refused (exit 2)
    with lint's line and nothing recorded, instead of failing at the step (exit 1)."""
    (tmp_path / "prog.py").write_text(
        "from openprogram import step, workflow\n"
        "from openprogram.durable import resumable\n\n\n"
        "@resumable\n"
        "def main(n: int = 2) -> int:\n"
        f"    return {call}\n\n\n"
        'PROGRAM_ENTRIES = ["main"]\n',
        encoding="utf-8",
    )
    linted = lint("prog.py", cwd=tmp_path)
    (finding,) = [ln for ln in linted.stdout.splitlines() if f" {code} " in ln]
    ran = cli("run", "prog.py:main", "--store", "st", cwd=tmp_path)
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert finding in ran.stderr
    assert not (tmp_path / "st").exists()  # nothing recorded, not even the store


SHADOWED = """\
from random import choice
{between}
from openprogram import step
from openprogram.durable import resumable


{definition}


def work(x: int) -> int:
    return x


@resumable
def main() -> int:
    return step("w", work, choice([1, 2]))


PROGRAM_ENTRIES = ["main"]
"""


@pytest.mark.parametrize(
    ("between", "definition", "refused"),
    [
        ("", "def choice(xs: list[int]) -> int:\n    return xs[0]", False),
        (
            "",
            "class choice(int):\n    def __new__(cls, xs: list[int]) -> int:\n        return xs[0]",
            False,
        ),
        (
            "",
            "try:\n    from random import choice\nexcept ImportError:\n"
            "    def choice(xs: list[int]) -> int:\n        return xs[0]",
            True,
        ),
    ],
    ids=["def", "class", "fallback def"],
)
def test_a_module_function_named_like_an_import_is_the_modules_own(
    tmp_path: Path, between: str, definition: str, refused: bool
) -> None:
    """``def choice`` after ``from random import choice`` rebinds the name: lint and run
    both took the call for random.choice (OP205) and refused a deterministic Program. A
    fallback in an ``except ImportError:`` branch leaves the import in place."""
    (tmp_path / "prog.py").write_text(
        SHADOWED.format(between=between, definition=definition), encoding="utf-8"
    )
    linted = lint("prog.py", cwd=tmp_path)
    ran = cli("run", "prog.py:main", "--store", "st", cwd=tmp_path)
    if refused:
        assert linted.returncode == 1 and " OP205 " in linted.stdout, linted.stdout
        assert ran.returncode == 2 and " OP205 " in ran.stderr, ran.stderr
    else:
        assert linted.returncode == 0, linted.stdout + linted.stderr
        assert ran.returncode == 0, ran.stderr


def test_a_bad_decorator_option_reads_in_run_as_lint_prints_it(tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(
        "import openprogram as op\n\n\n"
        '@op.agentic_function(expose="everything")\n'
        "def main() -> int:\n"
        "    return 1\n\n\n"
        'PROGRAM_ENTRIES = ["main"]\n',
        encoding="utf-8",
    )
    linted = lint("prog.py", cwd=tmp_path)
    (finding,) = [ln for ln in linted.stdout.splitlines() if " OP104 " in ln]
    said = finding.split(": ", 1)[1]
    ran = cli("run", "prog.py:main", "--store", "st", cwd=tmp_path)
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert f"importing the Program failed: {said} (in function main of prog.py)" in ran.stderr
    assert "_openprogram_program_" not in ran.stderr


# (menu, code): a bad decision menu of each kind lint reports (OP301-OP306)
BAD_MENUS = [
    ('{"a": ("d", {"n": [str, int]})}', "OP301"),
    ('{"a": ("d", {"f": {"type": {"x": str}}})}', "OP302"),
    ('{"a": ("d", {"f": {"description": 3}})}', "OP302"),
    ('{"a": ("desc", {"n": list[int]}), "b": "x"}', "OP303"),
    ('{"a": ("d", {"n": {"type": "int"}})}', "OP302"),
    ('{"a": ("d", {"n": {"type": complex}})}', "OP303"),
    ('{"a": ("d", {"decision": str})}', "OP303"),
    ('{"a": ("d", {"n": {"type": list, "fields": {"x": str}}})}', "OP303"),
    ('{"a": ("d", {"n": {"type": int, "options": ["x"]}})}', "OP304"),
    ('{"a": ("d", {"n": {"options": []}})}', "OP304"),
    ('{"a": ("d", {"n": {"options": [1, "x"]}})}', "OP304"),
    ('{"pair": (1, 2)}', "OP305"),
    ('{"x": (1, 2, 3)}', "OP305"),
    ('["yes", 42]', "OP305"),
    ('[("plan", {"goal": str}), "stop"]', "OP305"),
    ('[("plan", "d", "x")]', "OP305"),
    ('[(3, "three")]', "OP305"),
    ('["yes", "no", "yes"]', "OP306"),
    ('{"": "x", "b": "y"}', "OP306"),
    ('["", "no"]', "OP306"),
]

MENU_PROGRAM = """\
from openprogram import decision


def main(q: str) -> object:
{body}


PROGRAM_ENTRIES = ["main"]
"""


@pytest.mark.parametrize(("menu", "code"), BAD_MENUS, ids=[m[0] for m in BAD_MENUS])
def test_a_bad_menu_built_at_run_time_fails_with_lints_code_and_message(
    tmp_path: Path, menu: str, code: str
) -> None:
    """A menu lint sees (a literal in the call) and the same menu lint cannot see (built
    in a variable): the run of the second fails with the code and message lint prints
    for the first. It failed with a bare TypeError without the code."""
    (tmp_path / "literal.py").write_text(
        MENU_PROGRAM.format(body=f"    return decision.make(q, {menu})"), encoding="utf-8"
    )
    (tmp_path / "prog.py").write_text(
        MENU_PROGRAM.format(body=f"    menu = {menu}\n    return decision.make(q, menu)"),
        encoding="utf-8",
    )
    linted = lint("literal.py", "prog.py", cwd=tmp_path)
    assert linted.returncode == 1, linted.stdout + linted.stderr
    (finding,) = [ln for ln in linted.stdout.splitlines() if ln.startswith("literal.py:")]
    said = finding.split(": ", 1)[1]
    assert said.startswith(f"{code} ")
    assert "prog.py:" not in linted.stdout  # lint cannot see the built menu
    ran = cli("run", "prog.py:main", "--args", '{"q": "pick"}', "--store", "st", cwd=tmp_path)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    (failed,) = [ln for ln in ran.stderr.splitlines() if " failed: " in ln]
    reason = failed.split(" failed: MenuViolation: ", 1)[1]
    assert reason.split(" (in ", 1)[0] == said, (reason, said)
    assert reason.endswith("(at prog.py:6 in main)"), reason


HOOKED = """\
from openprogram import Agent, decision, step


def act(x: str) -> str:
    return x.upper()


class Flow(Agent):
    method_options = {{"report": {{"resumable": True}}}}

    def pick(self, x: str) -> str:
        return x

    def report(self, x: str) -> dict:
        return {{"a": step("act", act, self.pick(x))}}


class Smart(Flow):
    def pick(self, x: str) -> str:
        return decision.make("Pick", ["p", "q"])


{entry}
PROGRAM_ENTRIES = ["report"]
"""


def test_a_hook_overridden_by_the_entrys_class_is_followed(tmp_path: Path) -> None:
    """The base's resumable ``report`` calls the hook ``self.pick`` outside a step; the
    entry runs it on a ``Smart``, whose ``pick`` asks the model: lint and the run refuse
    it with the same line (a resume would ask again)."""
    (tmp_path / "prog.py").write_text(HOOKED.format(entry="report = Smart().report"))
    linted = lint("prog.py", cwd=tmp_path)
    assert linted.returncode == 1, linted.stdout + linted.stderr
    (finding,) = [ln for ln in linted.stdout.splitlines() if " OP206 " in ln]
    assert finding.startswith("prog.py:20:") and "helper 'Smart.pick'" in finding
    ran = cli("run", "prog.py:report", "--args", '{"x": "a"}', "--store", "st", cwd=tmp_path)
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert finding in ran.stderr


def test_a_hook_not_overridden_by_the_entrys_class_stays_clean(tmp_path: Path) -> None:
    """The entry runs ``report`` on a ``Flow``: its own ``pick`` is called, not the
    subclass's, so neither lint nor the run refuses it, and it runs."""
    (tmp_path / "prog.py").write_text(HOOKED.format(entry="report = Flow().report"))
    linted = lint("prog.py", cwd=tmp_path)
    assert linted.returncode == 0, linted.stdout + linted.stderr
    code, out = cli_json(
        "run", "prog.py:report", "--args", '{"x": "a"}', "--store", "st", cwd=tmp_path
    )
    assert (code, out["status"], out["result"]) == (0, "completed", {"a": "A"}), out


def test_a_hook_with_no_known_receiver_follows_every_override(tmp_path: Path) -> None:
    """No entry says which class ``report`` runs on: any subclass overriding the hook may
    be the one, so lint reports ``Smart.pick``."""
    (tmp_path / "prog.py").write_text(HOOKED.format(entry="").replace('["report"]', "[]"))
    linted = lint("prog.py", cwd=tmp_path)
    assert linted.returncode == 1, linted.stdout + linted.stderr
    assert "OP206 model call (openprogram.decision.make) directly in helper 'Smart.pick'" in (
        linted.stdout
    )


def test_method_options_merge_along_the_mro_in_lint_as_at_run_time(tmp_path: Path) -> None:
    """The base makes ``go`` a tool; the subclass adds ``cache`` for it. The runtime merges
    ``method_options`` along the MRO (SPEC §2.3), so ``cache`` is a tool's option: lint
    must not report OP106, and the entry runs."""
    (tmp_path / "prog.py").write_text(
        textwrap.dedent(
            """\
            from openprogram import Agent


            class A(Agent):
                method_options = {"go": {"tool": True}}

                def go(self, x: str) -> str:
                    return x.upper()


            class B(A):
                method_options = {"go": {"cache": True}}


            go = B().go
            PROGRAM_ENTRIES = ["go"]
            """
        )
    )
    linted = lint("prog.py", cwd=tmp_path)
    assert linted.returncode == 0, linted.stdout + linted.stderr
    code, out = cli_json("run", "prog.py:go", "--args", '{"x": "a"}', "--store", "st", cwd=tmp_path)
    assert (code, out["status"], out["result"]) == (0, "completed", "A"), out


@pytest.mark.parametrize(
    ("options", "code", "message"),
    [
        ('["same", "same"]', "OP306", "duplicate option name 'same' in a decision menu"),
        (
            '{"fast": 1}',
            "OP305",
            "route's dict form maps each option to its description, but option 'fast' maps "
            "to a number (1)",
        ),
    ],
)
def test_route_options_are_refused_by_lint_and_run_alike(
    tmp_path: Path, options: str, code: str, message: str
) -> None:
    (tmp_path / "prog.py").write_text(
        "from openprogram import route\n\n\n"
        f"def main(x: str) -> str:\n    return route('Pick', {options})\n\n\n"
        'PROGRAM_ENTRIES = ["main"]\n'
    )
    linted = lint("prog.py", cwd=tmp_path)
    assert linted.returncode == 1, linted.stdout + linted.stderr
    (finding,) = linted.stdout.splitlines()[:1]
    assert finding.startswith("prog.py:5:") and f" {code} {message}" in finding
    said = finding.split(f" {code} ", 1)[1]
    ran = cli("run", "prog.py:main", "--args", '{"x": "a"}', "--store", "st", cwd=tmp_path)
    assert ran.returncode != 0, ran.stdout + ran.stderr
    assert f"{code} {said}" in ran.stderr
