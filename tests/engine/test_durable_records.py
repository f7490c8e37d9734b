"""When step records are committed (identity before the function runs, result before the
next step starts), cancel checked at dispatch, durability modes, and the v3 migration."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from durable_programs import calls, write_program

from openprogram.durable import start_run
from openprogram.store import SessionStore
from openprogram.store.migrations import MIGRATIONS, latest_version
from openprogram.store.runs import open_run_store
from openprogram.store.sqlite import SqliteBackend

PROBE = """
import sqlite3
from contextlib import closing


def probe(db: str) -> dict:
    with closing(sqlite3.connect(db)) as c:
        steps = dict(c.execute("SELECT step_key, status FROM run_steps").fetchall())
        nodes = [
            list(r)
            # nodes_all: the nodes and the step log, where a step's commit writes its node
            for r in c.execute(
                "SELECT name, status FROM nodes_all WHERE kind = 'code' ORDER BY seq"
            )
        ]
    return {"steps": steps, "nodes": nodes}


def main(db: str) -> dict:
    first = step("probe", probe, db)
    second = step("probe", probe, db)
    return {"first": first, "second": second}
"""

STOP = """
from openprogram.durable import cancel_run, current_run_id


def stop(root: str) -> int:
    cancel_run(current_run_id(), store=root)
    return 1


def main(root: str) -> dict:
    step("a", act, "a", 1)
    step("stop", stop, root)
    step("c", act, "c", 3)
    return {}
"""


def test_identity_is_saved_before_the_step_runs_and_result_before_the_next(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store"
    path = write_program(tmp_path, PROBE)
    db = str(store / "openprogram.db")
    out = start_run(f"{path}:main", {"db": db}, store=store)
    assert out.status == "completed", out
    first, second = out.result["first"], out.result["second"]
    assert first["steps"] == {"probe#0": "dispatched"}
    assert first["nodes"] == [["main", "running"], ["probe", "running"]]
    assert second["steps"] == {"probe#0": "completed", "probe#1": "dispatched"}
    assert second["nodes"] == [["main", "running"], ["probe", "completed"], ["probe", "running"]]
    with closing(sqlite3.connect(db)) as c:  # and the last one before the run's end
        assert c.execute("SELECT status FROM run_steps WHERE step_key = 'probe#1'").fetchone() == (
            "completed",
        )
        statuses = [r[0] for r in c.execute("SELECT status FROM nodes ORDER BY seq")]
    assert statuses == ["completed"] * 3


def test_cancel_is_seen_at_the_next_dispatch_and_saved_results_stay(tmp_path: Path) -> None:
    store = tmp_path / "store"
    path = write_program(tmp_path, STOP)
    out = start_run(f"{path}:main", {"root": str(store)}, store=store)
    assert out.status == "cancelled"
    assert calls(tmp_path) == ["a 1"]
    with closing(sqlite3.connect(store / "openprogram.db")) as c:
        rows = c.execute("SELECT step_key, status FROM run_steps ORDER BY step_key").fetchall()
    assert rows == [("a#0", "completed"), ("stop#0", "completed")]


@pytest.mark.parametrize(("mode", "level"), [("process", 1), ("power", 2)])
def test_durability_modes_set_synchronous(tmp_path: Path, mode: str, level: int) -> None:
    with open_run_store(tmp_path, durability=mode) as db:
        conn = db.backend.connection()  # type: ignore[attr-defined]
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == level
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_power_mode_run_records_everything(tmp_path: Path) -> None:
    store = tmp_path / "store"
    path = write_program(tmp_path, PROBE)
    out = start_run(
        f"{path}:main", {"db": str(store / "openprogram.db")}, store=store, durability="power"
    )
    assert out.status == "completed"
    assert out.result["second"]["steps"] == {"probe#0": "completed", "probe#1": "dispatched"}
    with SessionStore(store) as s:
        assert [n.status for n in s.list_nodes(out.run_id)] == ["completed"] * 3


def test_v2_store_is_upgraded_keeping_its_runs(tmp_path: Path) -> None:
    old = SqliteBackend(tmp_path / "openprogram.db", migrations=MIGRATIONS[:2])
    conn = old.connection()
    conn.execute(
        "INSERT INTO runs (id, entry, function_qualname, status, created_at, updated_at) "
        "VALUES ('r1', 'p.py:main', 'main', 'paused', 0, 0)"
    )
    conn.execute(
        "INSERT INTO run_steps (run_id, step_key, scope, position, kind, name, occurrence, "
        "input_hash, status, result, started_at) "
        "VALUES ('r1', 'a#0', '', 0, 'step', 'a', 0, 'h', 'completed', '1', 0)"
    )
    assert conn.execute(
        "SELECT COUNT(*) FROM sqlite_master WHERE name = 'run_steps_order'"
    ).fetchone() == (1,)
    old.close()
    with open_run_store(tmp_path) as db:
        conn = db.backend.connection()  # type: ignore[attr-defined]
        assert db.backend.schema_version() == latest_version()  # type: ignore[attr-defined]
        assert conn.execute(
            "SELECT COUNT(*) FROM sqlite_master WHERE name = 'run_steps_order'"
        ).fetchone() == (0,)
        (table_sql,) = conn.execute(
            "SELECT sql FROM sqlite_master WHERE name = 'run_steps_nodeless'"
        ).fetchone()
        assert "WITHOUT ROWID" in table_sql  # v4: one B-tree written per step
        # v6: run_steps is the view of the nodeless records and those held by nodes
        (rec,) = db.load_steps("r1")
        assert (rec.step_key, rec.status, rec.result) == ("a#0", "completed", "1")


KILLED_BETWEEN_STEPS = """
import signal
import threading


def arm(delay: float) -> dict:
    threading.Timer(delay, os.kill, (os.getpid(), signal.SIGKILL)).start()
    return {"armed": delay}


def spin(rounds: int) -> int:
    total = 0
    for i in range(rounds):
        total += i % 7
    return total


def main() -> dict:
    step("arm", arm, 0.2)
    spin(10**9)  # pure orchestration work: the kill lands here, between two steps
    step("b", act, "b", 2)
    return {}
"""


@pytest.mark.parametrize(
    ("mode", "arm_status"), [("eager", "completed"), ("process", "dispatched")]
)
def test_kill_between_steps_keeps_the_result_only_when_eager(
    tmp_path: Path, mode: str, arm_status: str
) -> None:
    import os
    import subprocess
    import sys

    store = tmp_path / "store"
    path = write_program(tmp_path, KILLED_BETWEEN_STEPS)
    env = {**os.environ, "OPENPROGRAM_DURABILITY": mode}
    out = subprocess.run(
        [sys.executable, "-m", "openprogram.cli", "run", f"{path}:main", "--store", str(store)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == -9, out.stderr  # really killed by SIGKILL
    with closing(sqlite3.connect(store / "openprogram.db")) as c:
        rows = dict(c.execute("SELECT step_key, status FROM run_steps").fetchall())
    # eager mode saved the result when the step returned: a resume goes on from "b";
    # the default commits it with the next identity, so "arm" is left uncertain.
    assert rows == {"arm#0": arm_status}
