"""Inside a run, the default store is the run's own: a Program that pauses or cancels
itself (``pause_run(current_run_id())``) finds its run wherever it was started
(``--store DIR``, a PostgreSQL URL, ``start_run(store=...)``), not in
``$OPENPROGRAM_STORE`` / ``./.openprogram``, which it used to look in and fail."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_programs import calls, cli, cli_json, env

PROGRAM = """
import os

from openprogram import step
from openprogram.durable import current_run_id, pause_run as request_pause
import openprogram.durable as durable

HERE = os.path.dirname(os.path.abspath(__file__))


def note(name: str) -> str:
    with open(os.path.join(HERE, "calls.log"), "a", encoding="utf-8") as f:
        f.write(name + "\\n")
    return name


def pause_myself() -> str:
    return request_pause(current_run_id()).value


def cancel_myself() -> str:
    return durable.cancel_run(durable.current_run_id()).value


def review(n: int = 1) -> dict:
    step("a", note, "a")
    asked = step("ask", pause_myself)
    step("c", note, "c")
    return {"asked": asked}


def give_up(n: int = 1) -> dict:
    step("a", note, "a")
    step("stop", cancel_myself)
    step("c", note, "c")
    return {"n": n}


def plain_review(n: int = 1) -> dict:
    step("a", note, "a")
    asked = step("ask", pause_myself)
    step("c", note, "c")
    return {"asked": asked}


review.__agent_options__ = {"resumable": True}
give_up.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["review", "give_up", "plain_review"]
"""


@pytest.fixture()
def work(tmp_path: Path) -> Path:
    (tmp_path / "prog.py").write_text(PROGRAM, encoding="utf-8")
    return tmp_path


def test_a_program_pauses_its_own_run_in_the_store_it_was_started_with(work: Path, st: str) -> None:
    code, out = cli_json("run", "prog.py:review", "--store", st, cwd=work)
    assert code == 3, out
    assert out["status"] == "paused" and out["paused_step"] == "c", out
    assert calls(work) == ["a"]  # paused before step c, at the request made in step ask
    assert not (work / ".openprogram").exists()  # the default store was never looked in
    rid = out["run_id"]
    code, shown = cli_json("runs", "--status", "paused", "--store", st, cwd=work)
    assert [r["run_id"] for r in shown] == [rid]

    code, done = cli_json("resume", rid, "--store", st, cwd=work)
    assert code == 0 and done["result"] == {"asked": "requested"}, done
    assert calls(work) == ["a", "c"]  # step ask replayed: no second pause


def test_a_program_cancels_its_own_run_in_the_store_it_was_started_with(
    work: Path, st: str
) -> None:
    proc = cli("run", "prog.py:give_up", "--store", st, cwd=work)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "cancelled" in proc.stderr and "no store" not in proc.stderr, proc.stderr
    assert calls(work) == ["a"]
    _, shown = cli_json("runs", "--status", "cancelled", "--store", st, cwd=work)
    assert len(shown) == 1
    assert not (work / ".openprogram").exists()


def test_start_run_with_a_store_from_python(work: Path, st: str) -> None:
    """The public API as a script calls it, with ``$OPENPROGRAM_STORE`` set elsewhere:
    the run's store wins inside the run."""
    script = work / "drive.py"
    script.write_text(
        "import json, sys\n"
        "from openprogram.durable import start_run\n"
        "outcome = start_run('prog.py:review', {}, store=sys.argv[1])\n"
        "print(json.dumps({'status': outcome.status, 'step': outcome.paused_step}))\n",
        encoding="utf-8",
    )
    environment = env()
    environment["OPENPROGRAM_STORE"] = str(work / "configured")
    proc = subprocess.run(
        [sys.executable, str(script), st],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=work,
        env=environment,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"status": "paused", "step": "c"}
    assert not (work / "configured").exists()


def test_a_run_on_a_worker_pauses_itself(work: Path, st: str) -> None:
    code, queued = cli_json("submit", "prog.py:review", "--store", st, cwd=work)
    assert code == 0, queued
    proc = cli("worker", "--exit-when-idle", "--poll", "0.05", "--store", st, cwd=work)
    assert proc.returncode == 0, proc.stderr
    code, shown = cli_json("runs", "--status", "paused", "--store", st, cwd=work)
    assert [(r["run_id"], r["paused_step"]) for r in shown] == [(queued["run_id"], "c")]
    assert calls(work) == ["a"]


def test_a_run_that_cannot_pause_fails_saying_so(work: Path, st: str) -> None:
    """``pause_run(current_run_id())`` in a run whose entry is not resumable failed the
    run with ``RunNotFound: no run None in ...``: such a run cannot pause, and
    ``current_run_id()`` is ``None`` in it. It fails the run with ``PauseUnavailable``,
    which says so and how to declare the entry resumable (as a ``requires_approval`` tool
    in such a run does), before step c runs."""
    code, out = cli_json("run", "prog.py:plain_review", "--store", st, cwd=work)
    assert code == 1 and out["status"] == "failed", out
    error = out["error"]
    assert error.startswith("PauseUnavailable: pause_run(current_run_id()): this run cannot "), (
        error
    )
    assert "its entry is not declared resumable" in error, error
    assert "Declare the entry resumable (@resumable, method_options" in error, error
    assert "no run None" not in error, error
    assert calls(work) == ["a"]


def test_pause_run_of_no_run_outside_a_run_says_so(work: Path) -> None:
    from openprogram.durable import PauseUnavailable, current_run_id, pause_run

    with pytest.raises(PauseUnavailable, match=r"no run to pause \(current_run_id\(\) is None"):
        pause_run(current_run_id(), store=str(work / "st"))
    assert not (work / "st").exists()
