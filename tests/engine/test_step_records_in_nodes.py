"""Schema v6 (SQLite): a step's record lives in its session-DAG node, ``run_steps`` is the
view of every record. Written from the user's side: Programs run and resumed through the
public API, the store read and edited with plain SQL, a store written before v6 upgraded
in the middle of a run."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from durable_programs import LINEAR, calls, write_program

from openprogram.durable import RunOutcome, resume_run, start_run
from openprogram.store import SessionStore
from openprogram.store.migrations import latest_version
from openprogram.store.runs import open_run_store


def _db(store: Path) -> sqlite3.Connection:
    return sqlite3.connect(store / "openprogram.db", isolation_level=None)


def _run_failing_at_b(folder: Path, store: Path) -> RunOutcome:
    """A run of LINEAR whose step b failed (a was completed); b no longer fails."""
    prog = write_program(folder, LINEAR)
    (folder / "fail_b").touch()
    out = start_run(f"{prog}:main", {"n": 1}, store=store)
    assert out.status == "failed"
    (folder / "fail_b").unlink()
    return out


def test_each_step_is_one_node_holding_its_record_and_run_steps_still_lists_them(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store"
    out = start_run(f"{write_program(tmp_path, LINEAR)}:main", {"n": 1}, store=store)
    assert out.status == "completed" and out.result == {"total": 3}
    with closing(_db(store)) as c:
        # a user's own query on the documented table keeps working
        rows = c.execute(
            "SELECT step_key, kind, name, status, result FROM run_steps "
            "WHERE run_id = ? ORDER BY started_at, position",
            (out.run_id,),
        ).fetchall()
        assert [r[:4] for r in rows] == [
            ("a#0", "step", "a", "completed"),
            ("b#0", "step", "b", "completed"),
            ("c#0", "step", "c", "completed"),
        ]
        assert rows[2][4] == '{"name": "c", "value": 3}'
        # ... and each of them is the step's code node: one row, not two
        held = c.execute(
            "SELECT name, status, output, step_status, step_result FROM nodes "
            "WHERE run_id = ? ORDER BY seq",
            (out.run_id,),
        ).fetchall()
        assert [(n, s, ss) for n, s, _, ss, _ in held] == [
            ("a", "completed", "completed"),
            ("b", "completed", "completed"),
            ("c", "completed", "completed"),
        ]
        assert all(output == result for _, _, output, _, result in held)
        assert c.execute(
            "SELECT COUNT(*) FROM run_steps_nodeless WHERE kind = 'step'"
        ).fetchone() == (0,)
    with SessionStore(store) as s:
        names = [n.name for n in s.list_nodes(out.run_id) if n.kind == "code"]
        assert names == ["main", "a", "b", "c"]  # the entry's node, then the steps


def test_a_failed_step_rerun_on_resume_moves_its_record_to_the_new_node(tmp_path: Path) -> None:
    store = tmp_path / "store"
    out = _run_failing_at_b(tmp_path, store)
    again = resume_run(out.run_id, store=store)
    assert again.status == "completed" and again.result == {"total": 3}
    assert calls(tmp_path) == ["a 1", "b 2", "b 2", "c 3"]  # a replayed, b re-run once
    with open_run_store(store) as runs:
        steps = runs.load_steps(out.run_id)
        assert [(s.step_key, s.status) for s in steps] == [
            ("a#0", "completed"),
            ("b#0", "completed"),
            ("c#0", "completed"),
        ]
    with closing(_db(store)) as c:
        b_nodes = c.execute(
            "SELECT status, run_id IS NOT NULL, step_key FROM nodes WHERE name = 'b' ORDER BY seq"
        ).fetchall()
    # the failed attempt stays in the DAG as it ended; the record is the new attempt's
    assert b_nodes == [("error", 0, None), ("completed", 1, "b#0")]


def test_an_uncertain_step_of_a_store_written_before_v6_is_resumed_after_the_upgrade(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store"
    out = _run_failing_at_b(tmp_path, store)
    with closing(_db(store)) as c:
        # make b uncertain (started, no result), then rewrite the store as OpenProgram
        # wrote it before v6: every record in the table run_steps, nodes without records
        c.execute(
            "UPDATE run_steps SET status = 'dispatched', result = NULL WHERE step_key = 'b#0'"
        )
        c.execute("UPDATE runs SET status = 'paused', pause_reason = 'uncertain'")
        # the run's end folded its step log into nodes (v8); v5 had neither
        assert c.execute("SELECT COUNT(*) FROM node_log").fetchone() == (0,)
        c.execute("BEGIN")
        c.execute(
            "CREATE TABLE v5_steps (run_id TEXT NOT NULL, step_key TEXT NOT NULL, "
            "scope TEXT NOT NULL, position INTEGER NOT NULL, kind TEXT NOT NULL, "
            "name TEXT NOT NULL, occurrence INTEGER NOT NULL, input_hash TEXT NOT NULL, "
            "status TEXT NOT NULL, result TEXT, started_at REAL NOT NULL, finished_at REAL, "
            "PRIMARY KEY (run_id, step_key)) WITHOUT ROWID"
        )
        c.execute("INSERT INTO v5_steps SELECT * FROM run_steps")
        c.execute("DROP VIEW run_steps")
        c.execute("DROP VIEW nodes_all")
        c.execute("DROP TABLE node_log")
        c.execute("DROP TABLE run_steps_nodeless")
        c.execute("ALTER TABLE v5_steps RENAME TO run_steps")
        c.execute("DROP INDEX nodes_run_step")
        for (column,) in c.execute(
            "SELECT name FROM pragma_table_info('nodes') WHERE name = 'run_id' OR name LIKE 'step%'"
        ).fetchall():
            c.execute(f"ALTER TABLE nodes DROP COLUMN {column}")
        c.execute("DELETE FROM schema_version WHERE version > 5")
        c.execute("COMMIT")
    paused = resume_run(out.run_id, store=store)  # upgrades the store, keeps the records
    assert paused.status == "paused" and "uncertain" in (paused.error or "")
    again = resume_run(out.run_id, store=store, rerun_uncertain=True)
    assert again.status == "completed" and again.result == {"total": 3}
    assert calls(tmp_path) == ["a 1", "b 2", "b 2", "c 3"]
    with closing(_db(store)) as c:
        assert c.execute("SELECT MAX(version) FROM schema_version").fetchone() == (
            latest_version(),
        )
        rows = c.execute(
            "SELECT step_key, status FROM run_steps ORDER BY started_at, position"
        ).fetchall()
        assert rows == [("a#0", "completed"), ("b#0", "completed"), ("c#0", "completed")]
        # a's record stays where v5 wrote it; b's moved to the node of its re-run
        assert c.execute("SELECT step_key FROM run_steps_nodeless").fetchall() == [("a#0",)]


def test_plain_sql_edits_of_run_steps_reach_the_record_where_it_lives(tmp_path: Path) -> None:
    store = tmp_path / "store"
    out = start_run(f"{write_program(tmp_path, LINEAR)}:main", {"n": 1}, store=store)
    with closing(_db(store)) as c:
        c.execute("UPDATE run_steps SET started_at = started_at - 3600 WHERE step_key = 'b#0'")
        c.execute("DELETE FROM run_steps WHERE step_key = 'c#0'")
        c.execute(
            "INSERT INTO run_steps (run_id, step_key, scope, position, kind, name, "
            "occurrence, input_hash, status, result, started_at, finished_at) VALUES "
            "(?, 'x#0', '', 9, 'step', 'x', 0, 'h', 'completed', '1', 0, 0)",
            (out.run_id,),
        )
        keys = [k for (k,) in c.execute("SELECT step_key FROM run_steps ORDER BY started_at")]
        assert keys == ["x#0", "b#0", "a#0"]
        # c's node stays in the DAG without a record; x has no node
        assert c.execute("SELECT run_id FROM nodes WHERE name = 'c'").fetchone() == (None,)
        assert c.execute("SELECT step_key FROM run_steps_nodeless").fetchall() == [("x#0",)]


def test_run_steps_refuses_a_second_record_of_one_step_key_as_a_table_would(
    tmp_path: Path,
) -> None:
    # run_steps is a view of two tables: a key held by one of them is refused in the other
    store = tmp_path / "store"
    out = start_run(f"{write_program(tmp_path, LINEAR)}:main", {"n": 1}, store=store)
    insert = (
        "INSERT INTO run_steps (run_id, step_key, scope, position, kind, name, occurrence, "
        "input_hash, status, result, started_at, finished_at) VALUES "
        "(?, ?, '', 9, 'step', 'x', 0, 'h', 'completed', '1', 0, 0)"
    )
    rekey = "UPDATE run_steps SET step_key = ? WHERE run_id = ? AND step_key = ?"
    with closing(_db(store)) as c:
        c.execute(insert, (out.run_id, "x#0"))  # a record without a node
        for key in ("a#0", "x#0"):  # the key of a node's record, of a record without one
            with pytest.raises(sqlite3.IntegrityError, match="UNIQUE constraint failed"):
                c.execute(insert, (out.run_id, key))
        # OR REPLACE of a record without a node replaces it, as on a table
        c.execute(
            insert.replace("INSERT", "INSERT OR REPLACE").replace("'1'", "'2'"), (out.run_id, "x#0")
        )
        assert c.execute("SELECT result FROM run_steps WHERE step_key = 'x#0'").fetchall() == [
            ("2",)
        ]
        for old, new in (("x#0", "a#0"), ("a#0", "x#0"), ("a#0", "b#0")):
            with pytest.raises(sqlite3.IntegrityError, match="UNIQUE constraint failed"):
                c.execute(rekey, (new, out.run_id, old))
        c.execute(rekey, ("y#0", out.run_id, "x#0"))  # to a free key: as on a table
        c.execute("UPDATE run_steps SET status = 'failed' WHERE step_key = 'a#0'")
        rows = c.execute(
            "SELECT step_key, status FROM run_steps WHERE run_id = ? ORDER BY step_key",
            (out.run_id,),
        ).fetchall()
    assert rows == [
        ("a#0", "failed"),
        ("b#0", "completed"),
        ("c#0", "completed"),
        ("y#0", "completed"),
    ]
