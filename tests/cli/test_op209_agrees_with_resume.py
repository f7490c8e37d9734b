"""``openprogram-lint --store DIR`` (OP209) warns about an edit exactly when ``openprogram
resume`` would stop on it: for the runs ``resume`` takes (paused, failed, interrupted) with
the policy ``resume`` applies (the project's ``[tool.openprogram.execution]
code_change_policy`` over the run's recorded one). It ignored failed runs, and the project
default. Real subprocesses, a SQLite store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_programs import cli, cli_json, lint

PROGRAM = """
import os

from openprogram import step
from openprogram.durable import current_run_id, pause_run

HERE = os.path.dirname(os.path.abspath(__file__))


def ask(i: int) -> int:
    if os.path.exists(os.path.join(HERE, "pause")):
        pause_run(current_run_id())  # the run stops before its next step
    return i


def last(i: int) -> int:
    if os.path.exists(os.path.join(HERE, "fail")):
        raise RuntimeError("injected failure")
    return i + 1


def main(n: int = 1) -> int:
    a = step("one", ask, n)
    return step("two", last, a)


main.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["main"]
"""

OP209 = (
    "OP209 step 'first' replaces step 'one' recorded for 'main': this edit breaks 1 unfinished run"
)


def _stopped_run(folder: Path, how: str, *extra: str) -> str:
    """A run of ``main`` stopped after step 'one' (``how``: paused or failed), then the
    Program edited: step 'one' renamed 'first'."""
    (folder / "prog.py").write_text(PROGRAM, encoding="utf-8")
    flag = folder / ("pause" if how == "paused" else "fail")
    flag.touch()
    code, out = cli_json("run", "prog.py:main", "--store", "st", *extra, cwd=folder)
    assert out["status"] == how and code == (3 if how == "paused" else 1), out
    flag.unlink()
    renamed = PROGRAM.replace('step("one"', 'step("first"')
    (folder / "prog.py").write_text(renamed, encoding="utf-8")
    return str(out["run_id"])


def _project_default(folder: Path, policy: str) -> None:
    (folder / "pyproject.toml").write_text(
        f'[project]\nname = "p"\n\n[tool.openprogram.execution]\ncode_change_policy = "{policy}"\n',
        encoding="utf-8",
    )


@pytest.mark.parametrize(
    ("how", "run_args", "default_after"),
    [
        # the run recorded keep_original, the project default now says use_latest
        ("paused", (), "use_latest"),
        ("failed", (), "use_latest"),
        # the run recorded use_latest: a failed run is resumed as a paused one is
        ("failed", ("--policy", "use_latest"), None),
    ],
)
def test_lint_warns_when_resume_stops_on_the_edit(
    tmp_path: Path, how: str, run_args: tuple[str, ...], default_after: str | None
) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\n', encoding="utf-8")
    run_id = _stopped_run(tmp_path, how, *run_args)
    if default_after:
        _project_default(tmp_path, default_after)
    linted = lint("--store", "st", "prog.py", cwd=tmp_path)
    assert linted.returncode == 1, linted.stdout + linted.stderr
    assert f"prog.py:23:9: {OP209}" in linted.stdout, linted.stdout
    code, out = cli_json("resume", run_id, "--store", "st", cwd=tmp_path)
    assert code == 3 and out["status"] == "paused", out
    assert "'first'" in out["error"] and "'one'" in out["error"], out


@pytest.mark.parametrize("how", ["paused", "failed"])
def test_no_warning_when_resume_runs_the_saved_source(tmp_path: Path, how: str) -> None:
    """keep_original (recorded, and the project default): resume runs the saved source,
    which the edit does not touch."""
    _project_default(tmp_path, "keep_original")
    run_id = _stopped_run(tmp_path, how)
    linted = lint("--store", "st", "prog.py", cwd=tmp_path)
    assert linted.returncode == 0, linted.stdout + linted.stderr
    code, out = cli_json("resume", run_id, "--store", "st", cwd=tmp_path)
    assert code == 0 and out["status"] == "completed" and out["result"] == 2, out
    listed = json.loads(cli("runs", "--json", "--store", "st", cwd=tmp_path).stdout)
    assert [r["status"] for r in listed] == ["completed"]


CLASSES = """
import os

from openprogram import Agent, step

HERE = os.path.dirname(os.path.abspath(__file__))


def ask(i: int) -> int:
    return i


def last(i: int) -> int:
    if os.path.exists(os.path.join(HERE, "fail")):
        raise RuntimeError("injected failure")
    return i + 1


class Base(Agent):
    method_options = {"report": {"resumable": True}}

    def report(self, n: int = 1) -> int:
        a = step("one", ask, n)
        b = self.hook(a)
        return step("last", last, b)

    def hook(self, a: int) -> int:
        return step("base", ask, a)


class Smart(Base):
    def hook(self, a: int) -> int:
        return step("smart", ask, a)


class Plain(Base):
    def hook(self, a: int) -> int:
        return step("smart", ask, a)


smart = Smart().report
plain = Plain().report
PROGRAM_ENTRIES = ["smart", "plain"]
"""


def _failed_run_of(folder: Path, entry: str) -> str:
    (folder / "prog.py").write_text(CLASSES, encoding="utf-8")
    (folder / "fail").touch()
    code, out = cli_json(
        "run", f"prog.py:{entry}", "--policy", "use_latest", "--store", "st", cwd=folder
    )
    assert code == 1 and out["status"] == "failed", out
    (folder / "fail").unlink()
    return str(out["run_id"])


def _edit_plain(folder: Path) -> None:
    """Plain's hook now calls step 'plain' where its runs recorded 'smart' (Smart's
    hook still does: a run of ``plain`` is broken, one of ``smart`` is not)."""
    edited = CLASSES.replace(
        'class Plain(Base):\n    def hook(self, a: int) -> int:\n        return step("smart"',
        'class Plain(Base):\n    def hook(self, a: int) -> int:\n        return step("plain"',
    )
    assert edited != CLASSES
    (folder / "prog.py").write_text(edited, encoding="utf-8")


PLAIN_OP209 = (
    "prog.py:38:16: OP209 step 'plain' replaces step 'smart' recorded for 'Base.report': "
    "this edit breaks 1 unfinished run"
)


def test_the_entry_a_run_recorded_says_which_class_it_ran_on(tmp_path: Path) -> None:
    """A run of ``plain`` is compared with Plain's steps only: that Smart still produces
    the recorded ones does not make the edit safe for it (``resume`` stops on it)."""
    run_id = _failed_run_of(tmp_path, "plain")
    _edit_plain(tmp_path)
    linted = lint("--store", "st", "prog.py", cwd=tmp_path)
    assert linted.returncode == 1, linted.stdout + linted.stderr
    assert PLAIN_OP209 in linted.stdout, linted.stdout
    code, out = cli_json("resume", run_id, "--store", "st", cwd=tmp_path)
    assert code == 3 and out["status"] == "paused", out
    assert "'plain'" in out["error"] and "'smart'" in out["error"], out


def test_a_run_of_the_unchanged_class_is_not_broken(tmp_path: Path) -> None:
    run_id = _failed_run_of(tmp_path, "smart")
    _edit_plain(tmp_path)
    linted = lint("--store", "st", "prog.py", cwd=tmp_path)
    assert linted.returncode == 0, linted.stdout + linted.stderr
    code, out = cli_json("resume", run_id, "--store", "st", cwd=tmp_path)
    assert code == 0 and out["status"] == "completed", out


def test_a_queued_run_is_checked_as_the_worker_will_run_it(tmp_path: Path) -> None:
    """A run handed to a queue executes the edited code from its recorded steps when a
    worker takes it: OP209 warns, and the worker stops on the edit."""
    run_id = _failed_run_of(tmp_path, "plain")
    code, out = cli_json("resume", run_id, "--queue", "q", "--store", "st", cwd=tmp_path)
    assert code == 0 and out["status"] == "queued", out
    _edit_plain(tmp_path)
    linted = lint("--store", "st", "prog.py", cwd=tmp_path)
    assert linted.returncode == 1, linted.stdout + linted.stderr
    assert PLAIN_OP209 in linted.stdout, linted.stdout
    worker = cli(
        *("worker", "--queue", "q", "--exit-when-idle", "--poll", "0.05", "--store", "st"),
        cwd=tmp_path,
    )
    assert worker.returncode == 0, worker.stderr
    _, [run] = cli_json("runs", "--store", "st", cwd=tmp_path)
    assert run["status"] == "paused" and "'plain'" in run["error"], run


ARGUMENT_STEPS = """
import os

from openprogram import Agent, step

HERE = os.path.dirname(os.path.abspath(__file__))


def ask(i: int) -> int:
    return i


def last(i: int, b: int = 0) -> int:
    if os.path.exists(os.path.join(HERE, "fail")):
        raise RuntimeError("injected failure")
    return i + b


class Base(Agent):
    method_options = {"report": {"resumable": True}}

    def report(self, n: int = 1) -> int:
        a = step("one", ask, n)
        return step("last", last, self.hook(a), b=self.tail(a))

    def hook(self, a: int) -> int:
        return step("hook", ask, a)

    def tail(self, a: int) -> int:
        return step("tail", ask, a)


report = Base().report
PROGRAM_ENTRIES = ["report"]
"""


def test_steps_run_by_the_arguments_of_a_step_come_first(tmp_path: Path) -> None:
    """``step("last", last, self.hook(a), b=self.tail(a))`` runs hook's step, then tail's,
    then "last": the run recorded them so, OP209 sees that order (it put "last" first and
    warned of a moved step), and ``resume`` completes the run."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\n', encoding="utf-8")
    (tmp_path / "prog.py").write_text(ARGUMENT_STEPS, encoding="utf-8")
    (tmp_path / "fail").touch()
    code, out = cli_json(
        "run", "prog.py:report", "--policy", "use_latest", "--store", "st", cwd=tmp_path
    )
    assert code == 1 and out["status"] == "failed", out
    (tmp_path / "fail").unlink()
    linted = lint("--store", "st", "prog.py", cwd=tmp_path)
    assert linted.returncode == 0, linted.stdout + linted.stderr
    code, out = cli_json("resume", str(out["run_id"]), "--store", "st", cwd=tmp_path)
    assert code == 0 and out["status"] == "completed" and out["result"] == 2, out
