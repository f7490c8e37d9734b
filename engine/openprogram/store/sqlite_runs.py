"""The run store on SQLite: every statement on ``runs`` / ``run_steps`` for this backend.

It uses the session store's per-thread connections (:class:`SqliteBackend`), so a step's
records and its session-DAG node share one ``BEGIN IMMEDIATE`` transaction
(:meth:`SqliteRunStore.step_write`). Durability: ``process``/``eager`` keep WAL with
``synchronous=NORMAL`` (a commit survives a killed process); ``power`` sets
``synchronous=FULL`` (one fsync per commit: it survives power loss too).
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from openprogram.contract.runs import Durability
from openprogram.errors import StoreError
from openprogram.store.base import UNSET
from openprogram.store.runs import (
    RUN_COLUMNS,
    STEP_COLUMNS,
    RunRecord,
    RunStore,
    StepRecord,
    StepWrite,
    run_from_row,
)
from openprogram.store.sqlite import SqliteBackend

_INSERT_RUN_SQL = (
    f"INSERT INTO runs ({RUN_COLUMNS}) VALUES "
    "(?, ?, ?, ?, ?, 'running', ?, ?, ?, ?, NULL, NULL, NULL, NULL, NULL, 0, ?, ?, ?, ?)"
)
_DISPATCH_SQL = (
    "INSERT INTO run_steps (run_id, step_key, scope, position, kind, name, occurrence, "
    "input_hash, status, result, started_at, finished_at) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'dispatched', NULL, ?9, NULL) "
    "ON CONFLICT(run_id, step_key) DO UPDATE SET status = 'dispatched', result = NULL, "
    "started_at = excluded.started_at, finished_at = NULL"
)
# The same write, only while the run is neither cancelled nor asked to pause.
_DISPATCH_CHECKED_SQL = (
    "INSERT INTO run_steps (run_id, step_key, scope, position, kind, name, occurrence, "
    "input_hash, status, result, started_at, finished_at) "
    "SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'dispatched', NULL, ?9, NULL FROM runs "
    "WHERE id = ?1 AND status != 'cancelled' AND pause_requested = 0 "
    "ON CONFLICT(run_id, step_key) DO UPDATE SET status = 'dispatched', result = NULL, "
    "started_at = excluded.started_at, finished_at = NULL"
)
_COMPLETE_SQL = (
    "UPDATE run_steps SET status = 'completed', result = ?, finished_at = ? "
    "WHERE run_id = ? AND step_key = ?"
)
_FAIL_SQL = (
    "UPDATE run_steps SET status = 'failed', result = ?, finished_at = ? "
    "WHERE run_id = ? AND step_key = ?"
)


class _SqliteStepWrite(StepWrite):
    __slots__ = ("_backend", "_conn", "_run_id", "_runs")

    def __init__(self, runs: SqliteRunStore, conn: sqlite3.Connection, run_id: str) -> None:
        self._runs = runs
        self._backend = runs.backend
        self._conn = conn
        self._run_id = run_id

    def complete_step(self, step_key: str, result_json: str) -> None:
        self._conn.execute(_COMPLETE_SQL, (result_json, time.time(), self._run_id, step_key))

    def finish_node(self, node_id: str, output_json: str, duration_s: float) -> None:
        self._backend.finish_node(self._conn, node_id, output_json, duration_s, time.time())

    def dispatch_step(
        self,
        step_key: str,
        scope: str,
        position: int,
        kind: str,
        name: str,
        occurrence: int,
        input_hash: str,
        *,
        checked: bool,
    ) -> bool:
        cur = self._conn.execute(
            _DISPATCH_CHECKED_SQL if checked else _DISPATCH_SQL,
            (
                self._run_id,
                step_key,
                scope,
                position,
                kind,
                name,
                occurrence,
                input_hash,
                time.time(),
            ),
        )
        return cur.rowcount == 1

    def append_node(self, session_id: str, name: str, **fields: Any) -> Any:
        return self._backend.append_node(
            session_id,
            "code",
            name,
            node_id=None,
            output=None,
            status="running",
            metadata={},
            predecessor_id=UNSET,
            move_head=True,
            now=time.time(),
            **fields,
        )


class SqliteRunStore(RunStore):
    """Runs of one SQLite store root (thread-safe: each thread has its own connection)."""

    def __init__(self, store: Any, durability: Durability) -> None:
        backend = store.backend
        if not isinstance(backend, SqliteBackend):  # pragma: no cover - wiring error
            raise StoreError(f"{store.location}: not an SQLite store")
        self.store = store
        self.backend: SqliteBackend = backend
        self.location = backend.location
        self.durability = durability

    # -- opening -------------------------------------------------------------------
    @classmethod
    def open(
        cls, root: str | os.PathLike[str] | None, *, durability: Durability, create: bool
    ) -> SqliteRunStore:
        from openprogram.store import SessionStore

        store = SessionStore(root_path=root, create=create)  # migrates
        try:
            runs = cls(store, durability)
            if durability is Durability.POWER:
                runs.backend.set_synchronous("FULL")
            if not runs.backend.has_tables("runs", "run_steps"):
                raise StoreError(f"{runs.location}: the store has no run tables")
        except BaseException:
            store.close()
            raise
        return runs

    @classmethod
    def open_readonly(cls, root: str | os.PathLike[str] | None) -> SqliteRunStore | None:
        from openprogram.store import SessionStore, store_db_path

        path = store_db_path(root)
        if not path.is_file():
            return None
        backend = SqliteBackend(path, readonly=True, busy_timeout_s=2.0)
        try:
            if not backend.has_tables("runs", "run_steps"):
                backend.close()
                return None
        except BaseException:
            backend.close()
            raise
        return cls(SessionStore(path.parent, backend=backend), Durability.PROCESS)

    # -- plumbing ------------------------------------------------------------------
    def owns(self, writer: Any) -> bool:
        return getattr(writer, "_backend", None) is self.backend

    def _exec(self, sql: str, params: tuple[Any, ...] = ()) -> sqlite3.Cursor:
        try:
            return self.backend.connection().execute(sql, params)
        except sqlite3.Error as exc:
            raise self.backend._error(exc) from None

    @contextmanager
    def step_write(self, run_id: str) -> Iterator[StepWrite]:
        backend = self.backend
        conn = backend.connection()
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise backend._error(exc) from None
        try:
            yield _SqliteStepWrite(self, conn, run_id)
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise backend._error(exc) from None
            raise

    # -- runs ----------------------------------------------------------------------
    def insert_run(
        self,
        *,
        run_id: str,
        entry: str,
        program_path: str | None,
        function_qualname: str,
        args: dict[str, Any],
        policy: str,
        model: str | None,
        source_snapshot: dict[str, Any] | None,
        session_id: str | None,
    ) -> None:
        now = time.time()
        self._exec(
            _INSERT_RUN_SQL,
            (
                run_id,
                entry,
                program_path,
                function_qualname,
                json.dumps(args),
                policy,
                model,
                json.dumps(source_snapshot) if source_snapshot is not None else None,
                session_id,
                os.getpid(),
                socket.gethostname(),
                now,
                now,
            ),
        )

    def get_run(self, run_id: str) -> RunRecord | None:
        row = self._exec(f"SELECT {RUN_COLUMNS} FROM runs WHERE id = ?", (run_id,)).fetchone()
        return run_from_row(row) if row else None

    def list_runs(self, status: str | None = None) -> list[RunRecord]:
        if status is None:
            rows = self._exec(f"SELECT {RUN_COLUMNS} FROM runs ORDER BY created_at").fetchall()
        else:
            rows = self._exec(
                f"SELECT {RUN_COLUMNS} FROM runs WHERE status = ? ORDER BY created_at",
                (status,),
            ).fetchall()
        return [run_from_row(r) for r in rows]

    def claim_run(self, run_id: str, expected_status: str) -> bool:
        cur = self._exec(
            "UPDATE runs SET status = 'running', owner_pid = ?, owner_host = ?, "
            "pause_requested = 0, updated_at = ? WHERE id = ? AND status = ?",
            (os.getpid(), socket.gethostname(), time.time(), run_id, expected_status),
        )
        return cur.rowcount == 1

    def finish_run(
        self,
        run_id: str,
        status: str,
        *,
        result: Any = None,
        error: str | None = None,
        paused_step: str | None = None,
        paused_occurrence: int | None = None,
        pause_reason: str | None = None,
    ) -> str:
        cur = self._exec(
            "UPDATE runs SET status = ?, result = ?, error = ?, paused_step = ?, "
            "paused_occurrence = ?, pause_reason = ?, pause_requested = 0, updated_at = ? "
            "WHERE id = ? AND status = 'running'",
            (
                status,
                json.dumps(result) if status == "completed" else None,
                error,
                paused_step,
                paused_occurrence,
                pause_reason,
                time.time(),
                run_id,
            ),
        )
        if cur.rowcount == 1:
            return status
        run = self.get_run(run_id)
        return run.status if run else status

    def set_status(self, run_id: str, status: str, *, error: str | None = None) -> None:
        self._exec(
            "UPDATE runs SET status = ?, error = COALESCE(?, error), pause_requested = 0, "
            "updated_at = ? WHERE id = ?",
            (status, error, time.time(), run_id),
        )

    def set_paused(
        self,
        run_id: str,
        reason: str,
        message: str,
        *,
        step: str | None = None,
        occurrence: int | None = None,
        only_if_running: bool = False,
    ) -> bool:
        sql = (
            "UPDATE runs SET status = 'paused', pause_reason = ?, error = ?, "
            "paused_step = COALESCE(?, paused_step), "
            "paused_occurrence = COALESCE(?, paused_occurrence), updated_at = ? WHERE id = ?"
        )
        if only_if_running:
            sql += " AND status = 'running'"
        cur = self._exec(sql, (reason, message, step, occurrence, time.time(), run_id))
        return cur.rowcount == 1

    def request_pause(self, run_id: str) -> None:
        self._exec("UPDATE runs SET pause_requested = 1 WHERE id = ?", (run_id,))

    def control_state(self, run_id: str) -> tuple[str, bool]:
        row = self._exec(
            "SELECT status, pause_requested FROM runs WHERE id = ?", (run_id,)
        ).fetchone()
        if row is None:
            return "cancelled", False
        return row[0], bool(row[1])

    def update_snapshot(self, run_id: str, snapshot: dict[str, Any]) -> None:
        self._exec(
            "UPDATE runs SET source_snapshot = ? WHERE id = ?", (json.dumps(snapshot), run_id)
        )

    def last_activity(self, run_id: str) -> float:
        row = self._exec(
            "SELECT MAX(COALESCE(finished_at, started_at)) FROM run_steps WHERE run_id = ?",
            (run_id,),
        ).fetchone()
        run = self.get_run(run_id)
        base = run.updated_at if run else 0.0
        return max(base, row[0] or 0.0) if row else base

    # -- steps ---------------------------------------------------------------------
    def load_steps(self, run_id: str) -> list[StepRecord]:
        rows = self._exec(
            f"SELECT {STEP_COLUMNS} FROM run_steps WHERE run_id = ? ORDER BY scope, position",
            (run_id,),
        ).fetchall()
        return [StepRecord(*r) for r in rows]

    def top_level_steps(self, run_id: str) -> list[StepRecord]:
        rows = self._exec(
            f"SELECT {STEP_COLUMNS} FROM run_steps WHERE run_id = ? AND scope = '' "
            "ORDER BY position",
            (run_id,),
        ).fetchall()
        return [StepRecord(*r) for r in rows]

    def dispatch_step(
        self,
        run_id: str,
        *,
        step_key: str,
        scope: str,
        position: int,
        kind: str,
        name: str,
        occurrence: int,
        input_hash: str,
    ) -> None:
        self._exec(
            _DISPATCH_SQL,
            (run_id, step_key, scope, position, kind, name, occurrence, input_hash, time.time()),
        )

    def complete_step(self, run_id: str, step_key: str, result_json: str) -> None:
        self._exec(_COMPLETE_SQL, (result_json, time.time(), run_id, step_key))

    def fail_step(self, run_id: str, step_key: str, error: str) -> None:
        self._exec(_FAIL_SQL, (json.dumps(error), time.time(), run_id, step_key))

    def count_steps(self, run_id: str, status: str | None = None) -> int:
        if status is None:
            row = self._exec(
                "SELECT COUNT(*) FROM run_steps WHERE run_id = ? AND kind = 'step'", (run_id,)
            ).fetchone()
        else:
            row = self._exec(
                "SELECT COUNT(*) FROM run_steps WHERE run_id = ? AND kind = 'step' AND status = ?",
                (run_id, status),
            ).fetchone()
        return int(row[0])
