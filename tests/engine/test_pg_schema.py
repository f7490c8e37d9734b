"""The PostgreSQL schema's migrations on a real server: a store created before schema v2
migrates with its runs intact, and deleting a run deletes its step records (a trigger
since v2, which dropped the per-step foreign-key lock)."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from openprogram.durable import start_run
from openprogram.errors import StoreError
from openprogram.store import SessionNodeWriter, SessionStore
from openprogram.store.base import UNSET
from openprogram.store.pg_migrations import PG_MIGRATIONS, migrate
from openprogram.store.postgres_runs import PostgresRunStore
from openprogram.store.runs import read_run_store

PROGRAM = """
from openprogram import step


def double(x: int) -> int:
    return 2 * x


def main(n: int) -> int:
    return sum(step("double", double, i) for i in range(n))


main.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["main"]
"""


def _steps(dsn: str, run_id: str) -> list[tuple[str, str]]:
    runs = read_run_store(dsn)
    assert runs is not None
    with runs:
        return sorted((s.step_key, s.status) for s in runs.load_steps(run_id))


def test_a_v1_store_migrates_and_deleting_a_run_deletes_its_steps(
    pg_dsn: str, tmp_path: Path
) -> None:
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        migrate(conn, PG_MIGRATIONS[:1], pg_dsn)  # a store made by the first release
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM, encoding="utf-8")
    kept = start_run(f"{prog}:main", {"n": 2}, store=pg_dsn)  # opening it migrates
    gone = start_run(f"{prog}:main", {"n": 3}, store=pg_dsn)
    assert (kept.status, kept.result, gone.status, gone.result) == (
        "completed", 2, "completed", 6,
    )  # fmt: skip
    assert _steps(pg_dsn, gone.run_id) == [
        ("double#0", "completed"), ("double#1", "completed"), ("double#2", "completed"),
    ]  # fmt: skip
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        versions = [v for (v,) in conn.execute("SELECT version FROM schema_version")]
        assert sorted(versions) == [m.version for m in PG_MIGRATIONS]
        conn.execute("DELETE FROM runs WHERE id = %s", (gone.run_id,))
    assert _steps(pg_dsn, gone.run_id) == []
    assert _steps(pg_dsn, kept.run_id) == [("double#0", "completed"), ("double#1", "completed")]


def test_a_v2_store_migrates_to_v3_without_the_node_key_check(pg_dsn: str, tmp_path: Path) -> None:
    """v3 drops ``nodes``' foreign key (its check ran at the end of every step), moves the
    append to one UPDATE (``sessions.prior_head``) and indexes run-id prefixes; a session
    written under v2 keeps its nodes and its next node follows its last one."""
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        migrate(conn, PG_MIGRATIONS[:2], pg_dsn)
        conn.execute(
            "INSERT INTO sessions (id, last_id, last_seq, last_seq_count, created_at, "
            "updated_at) VALUES ('old', 'n1', 1, 1, 1.0, 1.0)"
        )
        conn.execute(
            "INSERT INTO nodes (id, session_id, seq, kind, name, status, created_at, "
            "updated_at) VALUES ('n1', 'old', 1, 'code', 'first', 'completed', 1.0, 1.0)"
        )
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM, encoding="utf-8")
    done = start_run(f"{prog}:main", {"n": 4}, store=pg_dsn)  # opening it migrates
    assert (done.status, done.result) == ("completed", 12)
    with SessionStore(pg_dsn) as store:
        second = SessionNodeWriter(store, "old").append("code", "second")
        assert (second.seq, second.predecessor_id) == (2, "n1")
        assert [n.name for n in store.list_nodes("old")] == ["first", "second"]
        # The session a node is appended to exists by construction, not by the dropped
        # key: an append to a missing session writes nothing and says so.
        with pytest.raises(StoreError, match="'nope' does not exist"):
            store.backend.append_node(
                "nope", "code", "n", node_id=None, input=None, output=None,
                status="running", caller_id=None, metadata={}, predecessor_id=UNSET,
                move_head=True, now=1.0,
            )  # fmt: skip
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        fkeys = conn.execute(
            "SELECT conname FROM pg_constraint WHERE conrelid = 'nodes'::regclass AND contype = 'f'"
        ).fetchall()
        assert fkeys == []
        assert conn.execute("SELECT count(*) FROM nodes WHERE session_id = 'nope'").fetchone() == (
            0,
        )
        conn.execute("SET enable_seqscan = off")  # a tiny table: ask whether it can
        prefix = done.run_id[:6]
        plan = "\n".join(
            r[0]
            for r in conn.execute(
                "EXPLAIN " + PostgresRunStore.sql.runs_by_id_prefix,
                (prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1), 5),
            )
        )
        assert "runs_id_code_points" in plan, plan


def _updates(dsn: str) -> dict[str, tuple[int, int]]:
    """(updates, HOT updates) of ``nodes`` and ``run_steps``, once every backend that
    wrote them has exited (a backend reports its counts when it ends)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        for _ in range(200):  # the closed store's server processes end meanwhile
            others = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid()"
            ).fetchone()
            if others == (0,):
                break
            conn.execute("SELECT pg_sleep(0.05)")
        conn.execute("SELECT pg_stat_clear_snapshot()")
        rows = conn.execute(
            "SELECT relname, n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables "
            "WHERE relname IN ('nodes', 'run_steps')"
        ).fetchall()
    return {name: (upd, hot) for name, upd, hot in rows}


def test_a_v4_store_migrates_to_v5_and_every_step_update_stays_hot(
    pg_dsn: str, tmp_path: Path
) -> None:
    """v5 leaves room on each page of ``nodes`` and ``run_steps`` (fillfactor 90): a
    step's update of its node and of its dispatch record — always the row inserted one
    step before — finds room on that row's page, so no update adds index entries (packed
    full, the last row of each page could not be updated in place)."""
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        migrate(conn, PG_MIGRATIONS[:4], pg_dsn)
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM, encoding="utf-8")
    done = start_run(f"{prog}:main", {"n": 400}, store=pg_dsn)  # opening it migrates
    assert (done.status, done.result) == ("completed", 400 * 399)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        options = dict(
            conn.execute(
                "SELECT relname, reloptions FROM pg_class WHERE relname IN ('nodes', 'run_steps')"
            ).fetchall()
        )
        assert options == {"nodes": ["fillfactor=90"], "run_steps": ["fillfactor=90"]}
        versions = [v for (v,) in conn.execute("SELECT version FROM schema_version")]
        assert sorted(versions) == [m.version for m in PG_MIGRATIONS]
    counts = _updates(pg_dsn)
    assert counts["nodes"][0] >= 400 and counts["run_steps"][0] >= 400, counts
    assert all(hot == upd for upd, hot in counts.values()), counts


def test_runs_of_a_program_file_have_their_index(pg_dsn: str, tmp_path: Path) -> None:
    """v6: ``runs`` is indexed by Program file, as on SQLite; with many runs the Runs
    view's read of one entry's newest finished runs searches it."""
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM, encoding="utf-8")
    start_run(f"{prog}:main", {"n": 1}, store=pg_dsn)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO runs (id, entry, program_path, function_qualname, status, created_at, "
            "updated_at) SELECT 'r' || i, 'main', '/p' || (i % 500), 'main', 'completed', i, i "
            "FROM generate_series(1, 20000) AS i"
        )
        conn.execute("ANALYZE runs")
        sql = PostgresRunStore.sql
        plan = "\n".join(
            row[0]
            for row in conn.execute(
                "EXPLAIN " + sql.newest_finished_runs_of_entry, ("/p7", "main", 200)
            )
        )
    assert "runs_program" in plan, plan


def test_runs_cancelled_before_v6_keep_no_pause(pg_dsn: str) -> None:
    """v6 clears the pause a run cancelled while paused kept under an older version."""
    SessionStore(pg_dsn).close()  # the schema
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        for rid, status in (("gone", "cancelled"), ("held", "paused")):
            conn.execute(
                "INSERT INTO runs (id, entry, function_qualname, status, paused_step, "
                "paused_occurrence, pause_reason, created_at, updated_at) "
                "VALUES (%s, 'p.py:f', 'f', %s, 'ship', 0, 'awaiting_approval', 0, 0)",
                (rid, status),
            )
        conn.execute("DELETE FROM schema_version WHERE version = 6")  # as v5 left it
    SessionStore(pg_dsn).close()  # opening migrates
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT id, paused_step, paused_occurrence, pause_reason FROM runs ORDER BY id"
        ).fetchall()
    assert rows == [("gone", None, None, None), ("held", "ship", 0, "awaiting_approval")]
