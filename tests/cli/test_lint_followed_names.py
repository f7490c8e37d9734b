"""Names a Program binds elsewhere are seen for what they are, by ``openprogram-lint`` and
the pre-run check of ``openprogram run`` alike: an Agent instance a first-party module
makes (``from bots import critic``), a step or workflow bound by ``functools.partial``,
and names imported from a module (``from os import environ``), which are not globals of
the Program."""

from __future__ import annotations

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

IMPORTED_AGENT = {
    "from bots import critic": ("prog.py", "from bots import critic", "critic"),
    "import bots": ("prog.py", "import bots", "bots.critic"),
    "from .bots import critic": ("app/prog.py", "from .bots import critic", "critic"),
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
    lines = [
        f"{prog}:7:13: OP206 model call (bots.critic) directly in workflow body 'review'",
        f"{prog}:12:14: OP206 model call (bots.critic) directly in resumable function 'main'",
    ]
    linted = lint(prog, cwd=tmp_path)
    assert linted.returncode == 1, linted.stdout + linted.stderr
    ran = cli("run", f"{prog}:main", "--args", '{"text": "x"}', "--store", "st", cwd=tmp_path)
    assert ran.returncode == 2, ran.stdout + ran.stderr
    for line in lines:
        assert line in linted.stdout, linted.stdout
        assert line in ran.stderr, ran.stderr
    assert cli("runs", "--json", "--store", "st", cwd=tmp_path).stdout.strip() == "[]"


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
