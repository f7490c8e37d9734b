"""Runs killed with SIGKILL, then resumed: uncertain steps, auto-resume, parallel branches,
and a 600-step chain killed at random points."""

from __future__ import annotations

import json
import os
import random
import sqlite3
import subprocess
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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

from openprogram.store.step_log import FOLD_AFTER


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


# Past two folds of the step log (a step's commit writes its node to the log; every
# ``FOLD_AFTER`` steps the rows move into ``nodes``): kills land before, between and after
# folds, with rows of the killed process left in the log for the next owner.
CHAIN_STEPS = 2 * FOLD_AFTER + 88
CHAIN_TOTAL = sum(range(CHAIN_STEPS))


@dataclass
class Trial:
    """What one crash trial saw: steps reported uncertain, kills by kind, effect counts."""

    uncertain: Counter[int] = field(default_factory=Counter)  # step -> times re-run
    inside: int = 0  # killed while a step was dispatched without a saved result
    between: int = 0  # killed with every started step saved (as the run finished)
    effects: Counter[str] = field(default_factory=Counter)
    final: dict[str, object] = field(default_factory=dict)


def _query(folder: Path, store: str, sql: str, params: tuple[object, ...] = ()) -> list[Any]:
    """Rows of ``sql`` on the trial's store (``st`` in ``folder``, or a PostgreSQL URL);
    ``[]`` when a SQLite store does not exist yet."""
    if store.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(store, autocommit=True) as pg:
            return pg.execute(sql.replace("?", "%s"), params).fetchall()
    db = folder / store / "openprogram.db"
    if not db.exists():
        return []
    with closing(sqlite3.connect(db, timeout=30)) as conn:
        return conn.execute(sql, params).fetchall()


def _db_state(folder: Path, store: str = "st") -> tuple[str, str, str | None, int | None] | None:
    """``(run id, run status, last step status, its occurrence)`` or ``None`` (no run)."""
    runs = _query(folder, store, "SELECT id, status FROM runs")
    if not runs:
        return None
    run = runs[0]
    last = _query(
        folder,
        store,
        "SELECT status, occurrence FROM run_steps WHERE run_id = ? AND kind = 'step' "
        "ORDER BY position DESC LIMIT 1",
        (run[0],),
    )
    return run[0], run[1], last[0][0] if last else None, last[0][1] if last else None


def _pause_of(folder: Path, store: str = "st") -> tuple[str | None, int | None]:
    row = _query(folder, store, "SELECT pause_reason, paused_occurrence FROM runs")[0]
    return row[0], row[1]


def _effect_count(folder: Path) -> int:
    log = folder / "effects.log"
    return log.read_bytes().count(b"\n") if log.exists() else 0


def _kill_when(proc: subprocess.Popen[str], folder: Path, target: int) -> bool:
    """SIGKILL ``proc`` once ``target`` step effects were logged and it logged at least
    one itself (so it owns the run); False if it ended first."""
    target = max(target, _effect_count(folder) + 1)
    deadline = time.monotonic() + 120
    while _effect_count(folder) < target:
        if proc.poll() is not None:
            return False
        assert time.monotonic() < deadline, f"no progress to {target} effects"
        time.sleep(0.001)
    kill(proc)
    return True


def _crash_trial(folder: Path, seed: int, store: str = "st") -> Trial:
    """Run the 200-step chain and SIGKILL it 1-3 times at seeded random points; after each
    kill, resume as a user would. A step's result is committed with the next step's
    identity, so a kill inside a step's function or between two steps leaves that step
    uncertain: it must be reported (never re-run silently), then is re-run explicitly."""
    rng = random.Random(seed)
    write_program(folder)
    trial = Trial()
    targets = sorted(rng.sample(range(3, CHAIN_STEPS - 3), rng.randint(1, 3)))
    args = json.dumps({"n": CHAIN_STEPS})
    proc = start("run", "prog.py:chain", "--args", args, "--store", store, "--json", cwd=folder)
    for target in targets:
        if not _kill_when(proc, folder, target):
            break
        state = _db_state(folder, store)
        assert state is not None, "the run was not recorded before its first step"
        rid, status, last_status, last_occ = state
        if status == "completed":
            break
        assert status == "running", state
        if last_status == "dispatched":  # never re-run silently
            trial.inside += 1
            code, out = cli_json("resume", rid, "--store", store, cwd=folder)
            assert code == 3 and out["status"] == "paused", out
            assert out["paused_step"] == "s" and "rerun-uncertain" in out["error"], out
            assert _pause_of(folder, store) == ("uncertain", last_occ)
            assert last_occ is not None
            trial.uncertain[last_occ] += 1
            extra = ["--rerun-uncertain"]
        else:  # every started step saved (killed as the run was finishing)
            trial.between += 1
            extra = []
        proc = start("resume", rid, "--store", store, "--json", *extra, cwd=folder)
    stdout, stderr = proc.communicate(timeout=120)
    if proc.returncode != 0:  # the last kill came after the run had completed
        state = _db_state(folder, store)
        assert state is not None and state[1] == "completed", (state, stderr)
        code, runs = cli_json("runs", "--store", store, cwd=folder)
        trial.final = {"status": runs[0]["status"]}
    else:
        trial.final = json.loads(stdout)
    trial.effects = Counter(lines(folder, "effects.log"))
    return trial


@pytest.mark.slow
def test_600_step_chain_killed_at_random_points(tmp_path: Path) -> None:
    trials = int(os.environ.get("OPENPROGRAM_CRASH_TRIALS", "20"))
    folders = [tmp_path / f"t{i}" for i in range(trials)]
    for f in folders:
        f.mkdir()
    with ThreadPoolExecutor(max_workers=3) as pool:
        results = list(pool.map(_crash_trial, folders, range(trials)))
    _check_trials(folders, results)
    for folder in folders:
        with closing(sqlite3.connect(folder / "st" / "openprogram.db")) as db:
            rows = db.execute("SELECT status, result FROM runs").fetchall()
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            # every node once, in one gapless seq order; the log folded at the run's end
            assert db.execute("SELECT COUNT(*) FROM node_log").fetchone() == (0,)
            count, seqs, low, high = db.execute(
                "SELECT COUNT(*), COUNT(DISTINCT seq), MIN(seq), MAX(seq) FROM nodes"
            ).fetchone()
            assert count == seqs == high - low + 1, folder
        assert rows == [("completed", str(CHAIN_TOTAL))], folder


def _check_trials(folders: list[Path], results: list[Trial]) -> None:
    """Every trial completed; a completed step's effect happened exactly once, an
    uncertain one's at most once per explicit re-run; some kill left a step uncertain."""
    for folder, trial in zip(folders, results, strict=True):
        assert trial.final.get("status") == "completed", trial.final
        assert set(trial.effects) == {str(i) for i in range(CHAIN_STEPS)}
        for i in range(CHAIN_STEPS):
            if i in trial.uncertain:  # each kill may or may not have let its effect happen
                assert 1 <= trial.effects[str(i)] <= 1 + trial.uncertain[i], (folder, i)
            else:  # a completed step's side effect happened exactly once
                assert trial.effects[str(i)] == 1, (folder, i, trial.uncertain)
    assert sum(t.inside for t in results) >= 1, "no kill left a step uncertain"


@pytest.mark.slow
def test_the_chain_on_postgresql_killed_at_random_points(tmp_path: Path, pg_cluster: Any) -> None:
    """The same trials on PostgreSQL (one database each), through the same CLI: a kill -9
    inside a step or between two, resumed as a user would."""
    trials = int(os.environ.get("OPENPROGRAM_CRASH_TRIALS_PG", "8"))
    folders = [tmp_path / f"t{i}" for i in range(trials)]
    stores = [pg_cluster.create_database() for _ in folders]
    for f in folders:
        f.mkdir()
    with ThreadPoolExecutor(max_workers=3) as pool:
        results = list(pool.map(_crash_trial, folders, range(100, 100 + trials), stores))
    _check_trials(folders, results)
    for folder, store in zip(folders, stores, strict=True):
        assert _query(folder, store, "SELECT status, result FROM runs") == [
            ("completed", str(CHAIN_TOTAL))
        ]
        # every node once, in one gapless seq order; every step record once, completed
        count, seqs, low, high = _query(
            folder, store, "SELECT COUNT(*), COUNT(DISTINCT seq), MIN(seq), MAX(seq) FROM nodes"
        )[0]
        assert count == seqs == high - low + 1, folder
        assert _query(folder, store, "SELECT status, count(*) FROM run_steps GROUP BY status") == [
            ("completed", CHAIN_STEPS)
        ], folder
