"""Runs killed with SIGKILL, then resumed: uncertain steps, auto-resume, parallel branches,
and a 200-step chain killed at random points."""

from __future__ import annotations

import os
import random
import sqlite3
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from resume_programs import (
    cli_json,
    kill,
    lines,
    only_run_id,
    start,
    wait_for_line,
    write_program,
)


@pytest.fixture()
def work(tmp_path: Path) -> Path:
    write_program(tmp_path)
    return tmp_path


def _runs(work: Path) -> dict[str, dict[str, object]]:
    _code, runs = cli_json("runs", "--store", "st", cwd=work)
    return {r["run_id"]: r for r in runs}


def test_step_killed_midway_is_uncertain_until_rerun(work: Path) -> None:
    (work / "block_slow").touch()
    proc = start("run", "prog.py:main", "--store", "st", "--json", cwd=work)
    wait_for_line(work, "slow 2", proc)
    kill(proc)
    rid = only_run_id(work)
    assert _runs(work)[rid]["status"] == "running"
    (work / "block_slow").unlink()
    for _ in range(2):  # never re-run silently
        code, out = cli_json("resume", rid, "--store", "st", cwd=work)
        assert code == 3
        assert out["status"] == "paused" and out["paused_step"] == "slow"
        assert "rerun-uncertain" in out["error"]
    assert lines(work) == ["a 1", "slow 2"]
    code, out = cli_json("resume", rid, "--rerun-uncertain", "--store", "st", cwd=work)
    assert code == 0 and out["result"] == {"total": 3}
    assert lines(work) == ["a 1", "slow 2", "slow 2", "c 3"]


def test_resume_all_interrupted(work: Path) -> None:
    # R1: killed between steps (inside a workflow body) -> resumed automatically
    (work / "block_gate").touch()
    proc = start("run", "prog.py:waiting", "--store", "st", cwd=work)
    wait_for_line(work, "wait gate", proc)
    kill(proc)
    r1 = only_run_id(work)
    # R2: killed inside a step -> uncertain, never auto-resumed
    (work / "block_slow").touch()
    proc = start("run", "prog.py:main", "--args", '{"n": 10}', "--store", "st", cwd=work)
    wait_for_line(work, "slow 11", proc)
    kill(proc)
    r2 = only_run_id(work)
    # R3: interrupted more than two hours ago -> not resumed
    proc = start("run", "prog.py:waiting", "--args", '{"n": 50}', "--store", "st", cwd=work)
    wait_for_line(work, "a 50", proc)
    wait_for_line(work, "wait gate", proc)
    kill(proc)
    r3 = only_run_id(work)
    with sqlite3.connect(work / "st" / "openprogram.db") as db:
        db.execute("UPDATE runs SET updated_at = updated_at - 10800 WHERE id = ?", (r3,))
        db.execute(
            "UPDATE run_steps SET started_at = started_at - 10800, "
            "finished_at = finished_at - 10800 WHERE run_id = ?",
            (r3,),
        )
    # R5: completed -> untouched
    (work / "block_slow").unlink()
    code, r5 = cli_json("run", "prog.py:main", "--args", '{"n": 100}', "--store", "st", cwd=work)
    assert code == 0
    (work / "block_gate").unlink()
    before = len(lines(work))
    code, out = cli_json("resume", "--all-interrupted", "--store", "st", cwd=work)
    by_id = {o["run_id"]: o for o in out["runs"]}
    assert set(by_id) == {r1, r2, r3}
    assert by_id[r1]["status"] == "completed" and by_id[r1]["result"] == {"total": 2}
    assert by_id[r2]["status"] == "paused" and by_id[r2]["paused_step"] == "slow"
    assert by_id[r3]["status"] == "paused"
    assert code == 3
    # only R1 did work: its workflow re-entered and step c ran; nothing else ran
    assert lines(work)[before:] == ["wait gate", "c 2"]
    runs = _runs(work)
    assert runs[r5["run_id"]]["status"] == "completed"
    assert runs[r2]["pause_reason"] == "uncertain"
    code, out = cli_json("resume", "--all-interrupted", "--store", "st", cwd=work)
    assert code == 0 and out == {"runs": []}


def test_parallel_branches_killed_resume_each_from_own_progress(work: Path) -> None:
    (work / "block_right").touch()
    proc = start("run", "prog.py:branches", "--store", "st", cwd=work)
    # left finishes all three items; right blocks inside its first item
    deadline = time.monotonic() + 60
    while not {"left 2", "right 0"} <= set(lines(work)):
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)
    time.sleep(0.2)  # let the left branch save its last step
    kill(proc)
    rid = only_run_id(work)
    (work / "block_right").unlink()
    code, out = cli_json("resume", rid, "--store", "st", cwd=work)
    assert code == 3 and out["paused_step"] == "item"  # right's item 0 is uncertain
    code, out = cli_json("resume", rid, "--rerun-uncertain", "--store", "st", cwd=work)
    assert code == 0 and out["result"] == {"left": 3, "right": 3}
    counts = Counter(lines(work))
    assert counts["left 0"] == counts["left 1"] == counts["left 2"] == 1
    assert counts["right 0"] == 2 and counts["right 1"] == counts["right 2"] == 1


def _run_state(folder: Path) -> tuple[str, str, str | None, int | None] | None:
    with sqlite3.connect(folder / "st" / "openprogram.db") as db:
        row = db.execute("SELECT id, status, pause_reason, paused_occurrence FROM runs").fetchone()
    return row  # type: ignore[no-any-return]


def _crash_trial(folder: Path, seed: int) -> tuple[set[int], Counter[str]]:
    """Run the 200-step chain, SIGKILL it at random points, resume until completed.

    Returns the step indexes reported uncertain and the side-effect counts.
    """
    rng = random.Random(seed)
    write_program(folder)
    uncertain: set[int] = set()
    proc = start("run", "prog.py:chain", "--store", "st", cwd=folder)
    for attempt in range(80):
        if attempt < 8:
            time.sleep(rng.uniform(0.15, 0.7))
            if proc.poll() is None:
                kill(proc)
        proc.communicate()
        state = _run_state(folder) if (folder / "st" / "openprogram.db").exists() else None
        if state is None:  # killed before the run was recorded: start again
            proc = start("run", "prog.py:chain", "--store", "st", cwd=folder)
            continue
        rid, status, reason, occurrence = state
        if status == "completed":
            break
        extra: list[str] = []
        if status == "paused":
            assert reason == "uncertain", state
            assert occurrence is not None
            uncertain.add(occurrence)
            extra = ["--rerun-uncertain"]
        proc = start("resume", rid, "--store", "st", *extra, cwd=folder)
    else:  # pragma: no cover - safety net
        raise AssertionError(f"run did not complete: {_run_state(folder)}")
    return uncertain, Counter(lines(folder, "effects.log"))


@pytest.mark.slow
def test_200_step_chain_killed_at_random_points(tmp_path: Path) -> None:
    trials = int(os.environ.get("OPENPROGRAM_CRASH_TRIALS", "4"))
    folders = [tmp_path / f"t{i}" for i in range(trials)]
    for f in folders:
        f.mkdir()
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(_crash_trial, folders, range(trials)))
    for folder, (uncertain, effects) in zip(folders, results, strict=False):
        with sqlite3.connect(folder / "st" / "openprogram.db") as db:
            rows = db.execute("SELECT status, result FROM runs").fetchall()
        assert rows == [("completed", str(sum(range(200))))]
        assert set(effects) == {str(i) for i in range(200)}
        for i in range(200):
            if i in uncertain:
                assert 1 <= effects[str(i)] <= 2
            else:  # a completed step's side effect happened exactly once
                assert effects[str(i)] == 1, (folder, i, uncertain)
