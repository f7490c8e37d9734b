"""``openprogram run``/``submit``/``resume`` read the configuration of the Program's own
project (the nearest pyproject.toml above the Program with a [tool.openprogram] table),
not the working directory's, and refuse a bad model string before anything runs (exit 2,
nothing recorded). Real CLI in subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from cli_programs import OPENPROGRAM, env

ASKS = """\
from openprogram import llm, step


def ask(q: str) -> str:
    return llm(q)


def main(q: str = "hello") -> str:
    return step("ask", ask, q)


main.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["main"]
"""


def run(
    *args: str, cwd: Path, extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [OPENPROGRAM, *args], capture_output=True, text=True, timeout=120, cwd=cwd,
        env={**env(), **(extra or {})},
    )  # fmt: skip


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """repo/pyproject.toml (a model that refuses every call), repo/sub/pyproject.toml (an
    echoing model), the Program in repo/sub."""
    (tmp_path / "pyproject.toml").write_text('[tool.openprogram]\nmodel = "scripted:block"\n')
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "pyproject.toml").write_text('[tool.openprogram]\nmodel = "scripted:echo"\n')
    (sub / "prog.py").write_text(ASKS)
    return tmp_path


def runs(repo: Path) -> list[object]:
    if not (repo / "st").exists():
        return []
    return json.loads(run("runs", "--json", "--store", "st", cwd=repo).stdout)


def test_run_uses_the_programs_project_model_not_the_working_directorys(repo: Path) -> None:
    proc = run("run", "--json", "--store", "st", "sub/prog.py:main", cwd=repo)
    out = json.loads(proc.stdout)
    assert out["status"] == "completed", proc.stdout + proc.stderr
    assert "hello" in json.dumps(out["result"])


@pytest.mark.parametrize(
    ("where", "bad"),
    [("pyproject", "opneai:gpt-4.1-mini"), ("pyproject", "gpt-4.1-mini"), ("env", "nope:x")],
)
@pytest.mark.parametrize("command", ["run", "submit"])
def test_a_bad_model_string_is_refused_at_start(
    repo: Path, where: str, bad: str, command: str
) -> None:
    extra: dict[str, str] = {}
    if where == "env":
        extra["OPENPROGRAM_MODEL"] = bad
        named = "OPENPROGRAM_MODEL"
    else:
        (repo / "sub" / "pyproject.toml").write_text(f'[tool.openprogram]\nmodel = "{bad}"\n')
        named = str(repo / "sub" / "pyproject.toml")
    proc = run(command, "--store", "st", "sub/prog.py:main", cwd=repo, extra=extra)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    line = proc.stderr.strip()
    assert line.startswith("openprogram: error: ") and named in line and repr(bad) in line
    assert "\n" not in line and runs(repo) == []  # one line, nothing recorded


def test_resume_refuses_a_bad_model_configured_since(repo: Path) -> None:
    (repo / "sub" / "gate").touch()
    prog = repo / "sub" / "prog.py"
    prog.write_text(
        "import os\n\nfrom openprogram.durable import current_run_id, pause_run\n"
        + ASKS.replace(
            "    return llm(q)",
            "    if os.path.exists(os.path.join(os.path.dirname(__file__), 'gate')):\n"
            "        pause_run(current_run_id())\n    return llm(q)",
        ).replace('return step("ask", ask, q)', 'return step("again", ask, step("ask", ask, q))')
    )
    proc = run("run", "--json", "--store", "st", "sub/prog.py:main", cwd=repo)
    paused = json.loads(proc.stdout)
    assert paused["status"] == "paused", proc.stdout + proc.stderr
    os.remove(repo / "sub" / "gate")
    (repo / "sub" / "pyproject.toml").write_text('[tool.openprogram]\nmodel = "openai"\n')
    proc = run("resume", paused["run_id"], "--store", "st", cwd=repo)
    assert proc.returncode == 2 and "'openai'" in proc.stderr, proc.stderr
    [record] = runs(repo)
    assert isinstance(record, dict) and record["status"] == "paused"


def test_lint_warm_run_sees_a_nested_config_added_since(tmp_path: Path) -> None:
    """The cached replay of an unchanged run is not served once a nested pyproject.toml
    with [tool.openprogram] changes which configuration applies to a file."""
    from cli_programs import LINT

    (tmp_path / "pyproject.toml").write_text("[tool.openprogram.lint]\n")
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "bad.py").write_text(
        "import random\n\nfrom openprogram import step\n\n\n"
        "def pick(x: int) -> int:\n    return x\n\n\n"
        "def main() -> int:\n    n = random.randint(1, 9)\n    return step('pick', pick, n)\n\n\n"
        "main.__agent_options__ = {'resumable': True}\nPROGRAM_ENTRIES = ['main']\n"
    )

    def lint() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [LINT, "."], capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env()
        )

    assert "OP205" in lint().stdout and "OP205" in lint().stdout  # cold, then replayed
    (sub / "pyproject.toml").write_text('[tool.openprogram.lint]\nignore = ["OP205"]\n')
    proc = lint()
    assert proc.returncode == 0 and "OP205" not in proc.stdout, proc.stdout
