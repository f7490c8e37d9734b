"""Names a Program binds elsewhere are seen for what they are, by ``openprogram-lint`` and
the pre-run check of ``openprogram run`` alike: an Agent instance a first-party module
makes (``from bots import critic``), a step or workflow bound by ``functools.partial``,
and names imported from a module (``from os import environ``), which are not globals of
the Program."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_programs import cli, lint

BOTS = """from openprogram import Agent


class Critic(Agent):
    pass


critic = Critic()
"""

REVIEW = """from openprogram import step, workflow

{imports}


def review(text: str) -> str:
    notes = {callee}("judge " + text)
    return step("keep", str.upper, notes)


def main(text: str) -> str:
    direct = {callee}("hello " + text)
    return workflow("review", review, direct)


main.__agent_options__ = {{"resumable": True}}
PROGRAM_ENTRIES = ["main"]
"""


def refused_alike(folder: Path, prog: str, args: str, lines: list[str]) -> None:
    """``openprogram-lint PROG`` reports each of ``lines`` (exit 1), and ``openprogram run
    PROG:main`` refuses the Program with the same lines (exit 2), recording no run."""
    linted = lint(prog, cwd=folder)
    ran = cli("run", f"{prog}:main", "--args", args, "--store", "st", cwd=folder)
    assert linted.returncode == 1 and ran.returncode == 2, linted.stdout + ran.stderr
    for line in lines:
        assert line in linted.stdout, linted.stdout
        assert line in ran.stderr, ran.stderr
    assert cli("runs", "--json", "--store", "st", cwd=folder).stdout.strip() == "[]"


IMPORTED_AGENT = {
    "from bots import critic": ("prog.py", "from bots import critic", "critic"),
    "import bots": ("prog.py", "import bots", "bots.critic"),
    "from .bots import critic": ("pkg/prog.py", "from .bots import critic", "critic"),
}


@pytest.mark.parametrize(("prog", "imports", "callee"), IMPORTED_AGENT.values(), ids=IMPORTED_AGENT)
def test_an_agent_instance_of_a_first_party_module_is_a_model_call(
    tmp_path: Path, prog: str, imports: str, callee: str
) -> None:
    folder = (tmp_path / prog).parent
    folder.mkdir(exist_ok=True)
    if folder != tmp_path:
        (folder / "__init__.py").write_text("", encoding="utf-8")
    (folder / "bots.py").write_text(BOTS, encoding="utf-8")
    (tmp_path / prog).write_text(REVIEW.format(imports=imports, callee=callee), encoding="utf-8")
    # as Python imports it: the relative import resolved against its package, for every check
    dotted = "pkg.bots.critic" if "pkg/" in prog else "bots.critic"
    lines = [
        f"{prog}:7:13: OP206 model call ({dotted}) directly in workflow body 'review'",
        f"{prog}:12:14: OP206 model call ({dotted}) directly in resumable function 'main'",
    ]
    refused_alike(tmp_path, prog, '{"text": "x"}', lines)


def test_an_imported_agent_handed_to_a_step_or_shadowed_is_fine(tmp_path: Path) -> None:
    (tmp_path / "bots.py").write_text(BOTS, encoding="utf-8")
    (tmp_path / "prog.py").write_text(
        """import bots
from openprogram import step

from bots import critic


def ask(q: str) -> str:
    return critic(q)


def main(q: str, critic: str = "x") -> str:
    return step("ask", ask, q) + step("ask2", bots.critic, q) + critic.upper()


main.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["main"]
""",
        encoding="utf-8",
    )
    linted = lint("prog.py", cwd=tmp_path)
    assert linted.returncode == 0, linted.stdout + linted.stderr
    ran = cli("run", "prog.py:main", "--args", '{"q": "x"}', "--store", "st", cwd=tmp_path)
    assert "cannot run as a resumable function" not in ran.stderr, ran.stderr


PARTIALS = """import functools
import time
from functools import partial

from openprogram import step, workflow

stamp = functools.partial(step, "stamp")


def now() -> float:
    return time.time()


def inner(x: float) -> float:
    return x + 1


def main(x: int) -> float:
    flow = partial(workflow, "inner")
    return flow(inner, stamp(now))


def broken(x: int) -> float:
    bad = partial(step, "a/b")
    return bad(now) + partial(step, "x" + str(x))(now)


main.__agent_options__ = {"resumable": True}
broken.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["main", "broken"]
"""


def test_a_step_bound_by_functools_partial_is_a_step(tmp_path: Path) -> None:
    """``stamp(now)`` runs ``now`` in the step "stamp" (its ``time.time()`` is fine there),
    and a partial's step name is checked where the partial writes it."""
    (tmp_path / "prog.py").write_text(PARTIALS, encoding="utf-8")
    linted = lint("prog.py", cwd=tmp_path)
    assert linted.returncode == 1, linted.stdout + linted.stderr
    found = [line for line in linted.stdout.splitlines() if line.startswith("prog.py:")]
    assert found == [
        "prog.py:24:25: OP212 step name 'a/b' must not contain '/' or '#'",
        "prog.py:25:37: OP207 step name is not a literal string in resumable function 'broken': "
        "the step identity would depend on data; use a literal name (repeats are fine)",
    ]
    ran = cli("run", "prog.py:main", "--args", '{"x": 1}', "--store", "st", "--json", cwd=tmp_path)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    record = json.loads(ran.stdout)
    assert record["status"] == "completed", record
    refused = cli("run", "prog.py:broken", "--args", '{"x": 1}', "--store", "st", cwd=tmp_path)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert all(line in refused.stderr for line in found), refused.stderr


IMPORTED_NAMES = """import os
import sys
from os import environ
from sys import path

from openprogram import step


def by_name(folder: str) -> str:
    environ.pop("OPENPROGRAM_TEST_UNSET", None)
    path.append(folder)
    return folder


def by_module(folder: str) -> str:
    os.environ.pop("OPENPROGRAM_TEST_UNSET", None)
    sys.path.append(folder)
    return folder


def main(folder: str) -> str:
    return step("by-name", by_name, folder) + step("by-module", by_module, folder)


main.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["main"]
"""


def test_a_name_imported_from_a_module_is_no_global_of_the_program(tmp_path: Path) -> None:
    """``environ.pop`` after ``from os import environ`` is ``os.environ.pop``: a step
    changing process state, not a module global (OP203) of the Program."""
    (tmp_path / "prog.py").write_text(IMPORTED_NAMES, encoding="utf-8")
    linted = lint("prog.py", cwd=tmp_path)
    assert linted.returncode == 0, linted.stdout + linted.stderr
    ran = cli(
        "run", "prog.py:main", "--args", '{"folder": "f"}', "--store", "st", "--json", cwd=tmp_path
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert json.loads(ran.stdout)["status"] == "completed"


def test_a_model_call_through_functools_partial_is_a_model_call(tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(
        """import functools

from openprogram import llm, step

ask = functools.partial(llm, system="Answer in one word.")


def main(q: str) -> str:
    word = ask(q)
    return step("keep", str.upper, word)


main.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["main"]
""",
        encoding="utf-8",
    )
    line = "prog.py:9:12: OP206 model call (openprogram.llm) directly in resumable function 'main'"
    linted = lint("prog.py", cwd=tmp_path)
    assert linted.returncode == 1 and line in linted.stdout, linted.stdout + linted.stderr
    ran = cli("run", "prog.py:main", "--args", '{"q": "x"}', "--store", "st", cwd=tmp_path)
    assert ran.returncode == 2 and line in ran.stderr, ran.stdout + ran.stderr


AGENTS = """from openprogram import Agent, llm


class Critic(Agent):
    def ask(self, q: str) -> str:
        return llm("judge " + q)
"""

CRITIC = """from openprogram import step

from bots import critic


def main(text: str) -> str:
    said = critic("hello " + text)
    asked = critic.ask(text)
    return step("keep", str.upper, said + asked)


main.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["main"]
"""

#: bots.py makes ``critic`` of a class another project module defines; extra files
CLASS_ELSEWHERE = {
    "from agents import Critic": ("from agents import Critic\n\ncritic = Critic()\n", {}),
    "import agents": ("import agents\n\ncritic = agents.Critic()\n", {}),
    "re-exported": (
        "from core import Critic\n\ncritic = Critic()\n",
        {"core.py": "from agents import Critic\n"},
    ),
    "base class elsewhere": (
        "from agents import Critic\n\ncritic = Critic()\n",
        {
            "agents.py": AGENTS.replace("Agent, llm", "llm")
            .replace("from openprogram", "from base import Bot\nfrom openprogram")
            .replace("Critic(Agent)", "Critic(Bot)"),
            "base.py": "from openprogram import Agent\n\n\nclass Bot(Agent):\n    pass\n",
        },
    ),
}


@pytest.mark.parametrize(("bots", "extra"), CLASS_ELSEWHERE.values(), ids=list(CLASS_ELSEWHERE))
def test_an_agent_instance_of_a_class_of_a_third_module_is_followed(
    tmp_path: Path, bots: str, extra: dict[str, str]
) -> None:
    """``critic`` made in bots.py of a Critic class imported from agents.py (through any
    number of project modules) is an Agent instance: calling it is a model call, and its
    method ``ask`` is followed into agents.py, where it calls the model."""
    files = {"agents.py": AGENTS, "bots.py": bots, "prog.py": CRITIC, **extra}
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    ask_line = 7 if "base class elsewhere" in bots or "agents.py" in extra else 6
    lines = [
        "prog.py:7:12: OP206 model call (bots.critic) directly in resumable function 'main'",
        f"agents.py:{ask_line}:16: OP206 model call (openprogram.llm) directly in helper "
        "'Critic.ask'",
        "prog.py:8:13: note: 'main' calls 'agents.Critic.ask' here",
    ]
    refused_alike(tmp_path, "prog.py", '{"text": "x"}', lines)


def test_a_method_of_an_imported_agent_instance_is_followed(tmp_path: Path) -> None:
    """``critic.ask(q)`` runs ``Critic.ask`` of bots.py, where the class is defined: its
    model call is reported there, as for a method of an instance made in the Program."""
    (tmp_path / "bots.py").write_text(AGENTS + "\n\ncritic = Critic()\n", encoding="utf-8")
    (tmp_path / "prog.py").write_text(CRITIC, encoding="utf-8")
    lines = [
        "bots.py:6:16: OP206 model call (openprogram.llm) directly in helper 'Critic.ask'",
        "prog.py:8:13: note: 'main' calls 'bots.Critic.ask' here",
    ]
    refused_alike(tmp_path, "prog.py", '{"text": "x"}', lines)


def test_an_imported_agent_class_makes_agents_in_the_program(tmp_path: Path) -> None:
    """A class of the Program deriving from an Agent class of agents.py is an Agent class,
    and so is that class itself: calling an instance of either is a model call."""
    (tmp_path / "agents.py").write_text(AGENTS, encoding="utf-8")
    (tmp_path / "prog.py").write_text(
        """from openprogram import step

from agents import Critic


class Mine(Critic):
    pass


bot = Mine()
other = Critic()


def main(text: str) -> str:
    return step("keep", str.upper, bot(text) + other(text))


main.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["main"]
""",
        encoding="utf-8",
    )
    where = "directly in resumable function 'main'"
    lines = [
        f"prog.py:15:36: OP206 model call (bot) {where}",
        f"prog.py:15:48: OP206 model call (other) {where}",
    ]
    refused_alike(tmp_path, "prog.py", '{"text": "x"}', lines)


def test_a_class_import_cycle_is_no_agent(tmp_path: Path) -> None:
    """Modules importing the class from each other define no class: nothing is followed
    for ever, and ``critic`` is no Agent instance."""
    (tmp_path / "agents.py").write_text("from core import Critic\n", encoding="utf-8")
    (tmp_path / "core.py").write_text("from agents import Critic\n", encoding="utf-8")
    (tmp_path / "bots.py").write_text(CLASS_ELSEWHERE["re-exported"][0], encoding="utf-8")
    (tmp_path / "prog.py").write_text(CRITIC, encoding="utf-8")
    linted = lint("prog.py", cwd=tmp_path)
    assert linted.returncode == 0, linted.stdout + linted.stderr


STORE_MOD = """CACHE = []
LIMIT = 3


def fetch(x: str) -> str:
    return x
"""

SHARED = """{imports}
from openprogram import step


def remember(x: str) -> str:
    {cache}.append(x)
    return {module}fetch(x) * {module}LIMIT


def main(x: str) -> str:
    return step("remember", remember, x)


main.__agent_options__ = {{"resumable": True}}
PROGRAM_ENTRIES = ["main"]
"""

PROJECT_DATA = {
    "from store_mod import CACHE": ("from store_mod import CACHE, LIMIT, fetch", "CACHE", ""),
    "import store_mod": ("import store_mod", "store_mod.CACHE", "store_mod."),
    "from pkg import store_mod": ("from pkg import store_mod", "store_mod.CACHE", "store_mod."),
}


@pytest.mark.parametrize(("imports", "cache", "module"), PROJECT_DATA.values(), ids=PROJECT_DATA)
def test_a_step_mutating_data_of_a_project_module_is_op203(
    tmp_path: Path, imports: str, cache: str, module: str
) -> None:
    """A list ``store_mod.py`` binds is shared by every run in the process, as a global of
    the Program is: a step appending to it is reported, naming the module (``LIMIT``
    read and ``fetch`` called are fine; ``os.environ`` and ``sys.path`` stay exempt: see
    test_a_name_imported_from_a_module_is_no_global_of_the_program)."""
    folder = tmp_path / "pkg" if "pkg" in imports else tmp_path
    folder.mkdir(exist_ok=True)
    if folder != tmp_path:
        (folder / "__init__.py").write_text("", encoding="utf-8")
    (folder / "store_mod.py").write_text(STORE_MOD, encoding="utf-8")
    source = SHARED.format(imports=imports, cache=cache, module=module)
    (tmp_path / "prog.py").write_text(source, encoding="utf-8")
    dotted = "pkg.store_mod" if folder != tmp_path else "store_mod"
    line = (
        f"prog.py:6:5: OP203 step dependency 'remember' uses '{dotted}.CACHE', a global of "
        f"the project module '{dotted}' mutated in this module"
    )
    linted = lint("prog.py", cwd=tmp_path)
    assert linted.returncode == 1, linted.stdout + linted.stderr
    found = [f for f in linted.stdout.splitlines() if f.startswith("prog.py:")]
    assert len(found) == 1 and found[0].startswith(line), linted.stdout
    ran = cli("run", "prog.py:main", "--args", '{"x": "a"}', "--store", "st", cwd=tmp_path)
    assert ran.returncode == 2 and line in ran.stderr, ran.stdout + ran.stderr


def test_a_class_imported_from_a_project_module_is_no_third_party_object(
    tmp_path: Path,
) -> None:
    """``Critic`` imported from agents.py is project code, followed like the module
    itself: no OP208 for it in a step dependency or the orchestration body. A class
    helpers.py only re-exports from an installed package stays a third-party class,
    named where it comes from."""
    (tmp_path / "agents.py").write_text(AGENTS, encoding="utf-8")
    (tmp_path / "helpers.py").write_text("from libcst import Module\n", encoding="utf-8")
    (tmp_path / "prog.py").write_text(
        """from openprogram import step

from agents import Critic
from helpers import Module


def build(x: str) -> str:
    return str(Critic) + x


def connect(x: str) -> str:
    return str(Module) + x


def main(text: str) -> str:
    kind = type(Critic()).__name__
    return step("build", build, text + kind) + step("connect", connect, text)


main.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["main"]
""",
        encoding="utf-8",
    )
    line = (
        "prog.py:12:16: OP208 step dependency 'connect' references the third-party class "
        "'libcst.Module'"
    )
    linted = lint("prog.py", cwd=tmp_path)
    ran = cli("run", "prog.py:main", "--args", '{"text": "x"}', "--store", "st", cwd=tmp_path)
    for out in (linted.stdout, ran.stderr):
        found = [f for f in out.splitlines() if "OP208" in f]
        assert len(found) == 1 and found[0].startswith(line), linted.stdout + ran.stderr
    assert linted.returncode == 1 and ran.returncode == 2, linted.stdout + ran.stderr


BASE = """from openprogram import Agent, llm


class Bot(Agent):
    def ask(self, q: str) -> str:
        return llm("judge " + q)
"""

ASKING = """from openprogram import step, workflow

from {dot}bots import critic


def review(text: str) -> str:
    notes = {review}
    return step("keep", str.upper, notes)


def main(text: str) -> str:
    direct = {main}
    return workflow("review", review, direct)


main.__agent_options__ = {{"resumable": True}}
PROGRAM_ENTRIES = ["main"]
"""

#: where the modules are (and how they import each other), which body asks the critic
LAYOUTS = {
    "modules": ("", "", "main", 12),
    "modules, workflow body": ("", "", "review", 7),
    "package, relative imports": ("pkg/", ".", "main", 12),
}


@pytest.mark.parametrize(("folder", "dot", "caller", "row"), LAYOUTS.values(), ids=list(LAYOUTS))
def test_a_method_inherited_from_a_base_class_of_another_module_is_followed(
    tmp_path: Path, folder: str, dot: str, caller: str, row: int
) -> None:
    """``critic.ask(q)`` runs ``Bot.ask`` of base.py (``class Critic(Bot)`` in agents.py,
    ``critic = Critic()`` in bots.py): its model call is reported there, reached from
    the resumable function or from a workflow body (run again on resume, as a
    same-module helper called there is). In a package the relative imports (``from
    .base import Bot``) are followed as Python resolves them."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    asks = {c: 'critic.ask("judge " + text)' if c == caller else "text" for c in ("review", "main")}
    files = {
        "base.py": BASE,
        "agents.py": f"from {dot}base import Bot\n\n\nclass Critic(Bot):\n    pass\n",
        "bots.py": f"from {dot}agents import Critic\n\ncritic = Critic()\n",
        "prog.py": ASKING.format(dot=dot, **asks),
    }
    for name, text in files.items():
        (tmp_path / folder / name).write_text(text, encoding="utf-8")
    where = "workflow body" if caller == "review" else "helper"
    lines = [
        f"{folder}base.py:6:16: OP206 model call (openprogram.llm) directly in {where} 'Bot.ask'",
        f"{folder}prog.py:{row}:{13 if row == 7 else 14}: note: '{caller}' calls 'base.Bot.ask' here",
    ]
    prog = f"{folder}prog.py"
    refused_alike(tmp_path, prog, '{"text": "x"}', lines)


def test_a_helper_module_called_from_a_workflow_body_is_checked_as_one(tmp_path: Path) -> None:
    """``helpers.ask(text)`` in a workflow body runs again when the interrupted workflow
    resumes: its model call is reported in helpers.py, as for a same-module helper."""
    (tmp_path / "helpers.py").write_text(
        "from openprogram import llm\n\n\ndef ask(q: str) -> str:\n    return llm(q)\n",
        encoding="utf-8",
    )
    (tmp_path / "prog.py").write_text(
        """from openprogram import step, workflow

import helpers


def review(text: str) -> str:
    return step("keep", str.upper, helpers.ask(text))


def main(text: str) -> str:
    return workflow("review", review, text)


main.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["main"]
""",
        encoding="utf-8",
    )
    lines = [
        "helpers.py:5:12: OP206 model call (openprogram.llm) directly in workflow body 'ask'",
        "prog.py:7:36: note: 'review' calls 'helpers.ask' here",
    ]
    refused_alike(tmp_path, "prog.py", '{"text": "x"}', lines)
