"""The SQLite step log, from the user's side: a step's commit writes its node to the log
and every ``FOLD_AFTER`` steps the rows move into ``nodes``. Runs longer than a fold,
read by another process while they run, run in parallel branches, and killed with rows
in the log, show every step once, in order, and resume from what was committed."""

from __future__ import annotations

import itertools
import json
import sqlite3
import subprocess
import time
from contextlib import closing
from pathlib import Path

from resume_programs import cli, cli_json, kill, lines, start

from openprogram.store.step_log import FOLD_AFTER

PROGRAM = """
import os
import time
from pathlib import Path

from openprogram import parallel, step

HERE = Path(__file__).parent


def tick(i: int, hold: int) -> int:
    with open(HERE / "effects.log", "a") as f:
        f.write(f"{i}\\n")
    if i == hold and (HERE / "hold").exists():
        (HERE / f"held-{os.getpid()}").touch()
        while (HERE / "hold").exists():
            time.sleep(0.01)
    return i


def chain(n: int, hold: int = -1) -> int:
    total = 0
    for i in range(n):
        total += step("tick", tick, i, hold)
    return total


def lane(name: str, count: int) -> int:
    return sum(step(f"{name}-step", tick, i, -1) for i in range(count))


def branches(count: int) -> dict:
    return parallel({"left": (lane, ("left", count), {}), "right": (lane, ("right", count), {})})


chain.__agent_options__ = {"resumable": True}
branches.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["chain", "branches"]
"""

N = 2 * FOLD_AFTER + 188  # folds twice, then holds past the second fold
HOLD = 2 * FOLD_AFTER + 88


def _folder(tmp_path: Path) -> Path:
    (tmp_path / "prog.py").write_text(PROGRAM)
    return tmp_path


def _run_id(folder: Path) -> str:
    code, runs = cli_json("runs", "--store", "st", cwd=folder)
    assert code == 0 and len(runs) == 1, runs
    return str(runs[0]["run_id"])


def _held(folder: Path, *procs: subprocess.Popen[str]) -> None:
    """Wait until each of ``procs`` holds in its step ``hold``."""
    deadline = time.monotonic() + 120
    while len(list(folder.glob("held-*"))) < len(procs):
        for proc in procs:
            assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run never reached the held step"
        time.sleep(0.01)


def _nodes(folder: Path, run_id: str) -> list[dict[str, object]]:
    proc = cli("show", run_id, "--format", "json", "--store", "st", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    return list(json.loads(proc.stdout)["nodes"])


def _timed(nodes: list[dict[str, object]]) -> bool:
    """Every completed step's node has its step's measured duration in its metadata (the
    node's exit, written with the step's result)."""
    metadata = [n["metadata"] for n in nodes if n["status"] == "completed"]
    durations = [m.get("duration_s") if isinstance(m, dict) else None for m in metadata]
    return bool(durations) and all(isinstance(d, float) and d > 0 for d in durations)


def _db(folder: Path) -> sqlite3.Connection:
    return sqlite3.connect(folder / "st" / "openprogram.db", timeout=30)


def _assert_one_dag(folder: Path) -> None:
    """Every node once, in one gapless seq order; nothing left in the log."""
    with closing(_db(folder)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert db.execute("SELECT COUNT(*) FROM node_log").fetchone() == (0,)
        count, seqs, low, high = db.execute(
            "SELECT COUNT(*), COUNT(DISTINCT seq), MIN(seq), MAX(seq) FROM nodes"
        ).fetchone()
    assert count == seqs == high - low + 1


def test_another_process_reads_every_step_of_a_run_past_two_folds_while_it_runs(
    tmp_path: Path,
) -> None:
    folder = _folder(tmp_path)
    (folder / "hold").touch()
    args = json.dumps({"n": N, "hold": HOLD})
    proc = start("run", "prog.py:chain", "--args", args, "--store", "st", "--json", cwd=folder)
    _held(folder, proc)
    run_id = _run_id(folder)
    with closing(_db(folder)) as db:  # the run really has rows in both tables now
        (logged,) = db.execute("SELECT COUNT(*) FROM node_log").fetchone()
        (folded,) = db.execute("SELECT COUNT(*) FROM nodes").fetchone()
    assert logged >= 1 and folded >= 2 * FOLD_AFTER, (logged, folded)
    nodes = _nodes(folder, run_id)
    assert [n["name"] for n in nodes] == ["chain"] + ["tick"] * (HOLD + 1)
    assert [n["status"] for n in nodes] == ["running"] + ["completed"] * HOLD + ["running"]
    assert [n["output"] for n in nodes[1:-1]] == list(range(HOLD))
    seqs = [n["seq"] for n in nodes]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    # each step's node follows the one before it and is called by the entry
    assert all(b["predecessor_id"] == a["id"] for a, b in itertools.pairwise(nodes))
    assert {n["caller_id"] for n in nodes[1:]} == {nodes[0]["id"]}
    (folder / "hold").unlink()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert json.loads(out)["result"] == sum(range(N))
    nodes = _nodes(folder, run_id)
    assert len(nodes) == N + 1 and {n["status"] for n in nodes} == {"completed"}
    assert _timed(nodes[1:])
    assert lines(folder, "effects.log") == [str(i) for i in range(N)]
    _assert_one_dag(folder)


def test_parallel_branches_past_a_fold_record_each_step_once(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    count = FOLD_AFTER + 50  # each branch alone crosses a fold
    code, out = cli_json(
        "run", "prog.py:branches", "--args", json.dumps({"count": count}), "--store", "st",
        cwd=folder,
    )  # fmt: skip
    assert code == 0, out
    assert out["result"] == {"left": sum(range(count)), "right": sum(range(count))}
    nodes = _nodes(folder, _run_id(folder))
    for name in ("left", "right"):
        steps = [n for n in nodes if n["name"] == f"{name}-step"]
        assert [n["output"] for n in steps] == list(range(count))
        assert {n["status"] for n in steps} == {"completed"}
        assert _timed(steps)
    with closing(_db(folder)) as db:
        keys = db.execute(
            "SELECT COUNT(*), COUNT(DISTINCT step_key) FROM run_steps WHERE kind = 'step'"
        ).fetchone()
    assert keys == (2 * count, 2 * count)
    _assert_one_dag(folder)


def test_a_run_killed_with_steps_in_the_log_resumes_from_them(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    (folder / "hold").touch()
    args = json.dumps({"n": N, "hold": HOLD})
    proc = start("run", "prog.py:chain", "--args", args, "--store", "st", cwd=folder)
    _held(folder, proc)
    kill(proc)  # SIGKILL inside step HOLD: the steps since the last fold are in the log
    run_id = _run_id(folder)
    with closing(_db(folder)) as db:
        (logged,) = db.execute("SELECT COUNT(*) FROM node_log").fetchone()
    assert logged == HOLD + 1 - 2 * FOLD_AFTER, logged
    code, runs = cli_json("runs", "--store", "st", cwd=folder)
    assert runs[0]["interrupted"] and runs[0]["interrupted_step"] == "tick", runs
    (folder / "hold").unlink()
    code, out = cli_json("resume", run_id, "--store", "st", cwd=folder)
    assert code == 3 and out["paused_step"] == "tick", out  # uncertain: never re-run silently
    code, out = cli_json("resume", run_id, "--rerun-uncertain", "--store", "st", cwd=folder)
    assert code == 0 and out["result"] == sum(range(N)), out
    effects = lines(folder, "effects.log")
    assert effects == [str(i) for i in range(HOLD + 1)] + [str(i) for i in range(HOLD, N)]
    nodes = _nodes(folder, run_id)
    ticks = [n for n in nodes if n["name"] == "tick"]
    # the killed attempt of step HOLD stays in the DAG, closed as interrupted
    assert [n["status"] for n in ticks].count("error") == 1
    assert [n["output"] for n in ticks if n["status"] == "completed"] == list(range(N))
    _assert_one_dag(folder)


def test_two_runs_in_one_store_at_once_each_record_every_step_once(tmp_path: Path) -> None:
    """Two processes commit steps to one SQLite file at the same time: their log rows
    interleave, and each process's folds move the other's rows (its bookkeeping is then
    stale, and it must find its nodes in ``nodes``)."""
    folder = _folder(tmp_path)
    (folder / "hold").touch()
    n = 2 * FOLD_AFTER + 100
    args = json.dumps({"n": n, "hold": 0})  # both wait in step 0, then go on together
    procs = [
        start("run", "prog.py:chain", "--args", args, "--store", "st", "--json", cwd=folder)
        for _ in range(2)
    ]
    _held(folder, *procs)
    (folder / "hold").unlink()
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
        assert json.loads(out)["result"] == sum(range(n))
    code, runs = cli_json("runs", "--store", "st", cwd=folder)
    assert code == 0 and len(runs) == 2
    spans = []
    for run in runs:
        nodes = _nodes(folder, str(run["run_id"]))
        spans.append((nodes[2]["created_at"], nodes[-1]["created_at"]))
        ticks = [n for n in nodes if n["name"] == "tick"]
        assert [t["output"] for t in ticks] == list(range(n))
        assert {t["status"] for t in ticks} == {"completed"}
        assert _timed(ticks)
        seqs = [node["seq"] for node in nodes]
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    assert max(a for a, _ in spans) < min(b for _, b in spans), spans  # they overlapped
    assert sorted(lines(folder, "effects.log"), key=int) == sorted(
        [str(i) for i in range(n)] * 2, key=int
    )
    with closing(_db(folder)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert db.execute("SELECT COUNT(*) FROM node_log").fetchone() == (0,)
        assert db.execute(
            "SELECT COUNT(*), COUNT(DISTINCT run_id || step_key) FROM nodes WHERE run_id IS NOT NULL"
        ).fetchone() == (2 * n, 2 * n)


def test_raw_sql_through_run_steps_reaches_steps_still_in_the_log(tmp_path: Path) -> None:
    """An operator's own INSERT / UPDATE / DELETE through the view ``run_steps`` works as on
    a table also for the steps a killed process left in the log."""
    folder = _folder(tmp_path)
    (folder / "hold").touch()
    n, hold = 40, 30  # fewer than FOLD_AFTER: every step's node is still in the log
    args = json.dumps({"n": n, "hold": hold})
    proc = start("run", "prog.py:chain", "--args", args, "--store", "st", cwd=folder)
    _held(folder, proc)
    kill(proc)
    (folder / "hold").unlink()
    run_id = _run_id(folder)
    with closing(_db(folder)) as db:
        assert db.execute("SELECT COUNT(*) FROM node_log").fetchone() == (hold + 1,)
        keys = [
            k
            for (k,) in db.execute(
                "SELECT step_key FROM run_steps WHERE run_id = ? AND kind = 'step' "
                "ORDER BY started_at",
                (run_id,),
            )
        ]
        assert len(keys) == hold + 1
        with db:  # edit a completed step's result
            db.execute(
                "UPDATE run_steps SET result = '500' WHERE run_id = ? AND step_key = ?",
                (run_id, keys[5]),
            )
        assert db.execute(
            "SELECT result FROM run_steps WHERE run_id = ? AND step_key = ?", (run_id, keys[5])
        ).fetchone() == ("500",)
        # a second record of a key is refused, as the table's primary key refuses it
        try:
            with db:
                db.execute(
                    "INSERT INTO run_steps (run_id, step_key, scope, position, kind, name, "
                    "occurrence, input_hash, status, result, started_at, finished_at) "
                    "VALUES (?, ?, '', 6, 'step', 'tick', 0, 'x', 'completed', '6', 0, 0)",
                    (run_id, keys[6]),
                )
        except sqlite3.IntegrityError as e:
            assert "UNIQUE constraint failed: run_steps.run_id, run_steps.step_key" in str(e)
        else:
            raise AssertionError("a second record of one step key was accepted")
        with db:  # forget the interrupted step: the next resume runs it again
            db.execute(
                "DELETE FROM run_steps WHERE run_id = ? AND step_key = ?", (run_id, keys[hold])
            )
        assert db.execute(
            "SELECT COUNT(*) FROM run_steps WHERE run_id = ? AND kind = 'step'", (run_id,)
        ).fetchone() == (hold,)
    code, out = cli_json("resume", run_id, "--store", "st", cwd=folder)
    assert code == 0 and out["result"] == sum(range(n)) - 5 + 500, out
    assert lines(folder, "effects.log") == [str(i) for i in range(hold + 1)] + [
        str(i) for i in range(hold, n)
    ]
    _assert_one_dag(folder)
