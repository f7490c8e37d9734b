"""What ``openprogram runs`` and ``show`` tell a user about a run that did not complete,
in real subprocesses on a real SQLite store: the state, the step it stopped in, and why.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_programs import OPENPROGRAM, calls, cli, env, write_program


@pytest.fixture()
def work(tmp_path: Path) -> Path:
    write_program(tmp_path)
    return tmp_path


def only_run(work: Path) -> dict[str, object]:
    proc = cli("runs", "--json", "--store", "st", cwd=work)
    assert proc.returncode == 0, proc.stderr
    [run] = json.loads(proc.stdout)
    return dict(run)


@pytest.fixture()
def blocked_in_slow(work: Path) -> Iterator[subprocess.Popen[str]]:
    """``openprogram run prog.py:main`` executing its step 'slow' (blocked there)."""
    (work / "block_slow").touch()
    proc = subprocess.Popen(
        [OPENPROGRAM, "run", "prog.py:main", "--store", "st"],
        cwd=work,
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        while "slow 2" not in calls(work):
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def test_a_run_whose_process_was_killed_is_shown_interrupted_at_its_step(
    work: Path, blocked_in_slow: subprocess.Popen[str]
) -> None:
    """A killed ``openprogram run`` left its run ``running``: ``runs`` and ``show`` said
    "running" (nothing executes it; the editor's Runs view says "interrupted") and named
    no step."""
    blocked_in_slow.send_signal(signal.SIGKILL)
    blocked_in_slow.wait(timeout=60)
    run = only_run(work)
    assert run["status"] == "running"  # the stored state (what --status filters on)
    assert run["interrupted"] is True and run["interrupted_step"] == "slow"
    table = cli("runs", "--store", "st", cwd=work).stdout.splitlines()
    assert table[1].split()[:2] == [str(run["run_id"]), "interrupted"]
    assert table[1].split()[3] == "slow"
    shown = cli("show", str(run["run_id"]), "--store", "st", cwd=work)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[0].endswith("; run interrupted at step 'slow'")


def test_a_run_that_executes_is_shown_running(
    work: Path, blocked_in_slow: subprocess.Popen[str]
) -> None:
    run = only_run(work)
    assert run["status"] == "running" and run["interrupted"] is False
    assert run["interrupted_step"] is None
    table = cli("runs", "--store", "st", cwd=work).stdout.splitlines()
    assert table[1].split()[1] == "running"
    shown = cli("show", str(run["run_id"]), "--store", "st", cwd=work)
    assert shown.stdout.splitlines()[0].endswith("; run running")
