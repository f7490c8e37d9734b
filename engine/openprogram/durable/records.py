"""Reading and writing run and step records (tables documented in ``durable.schema``).

``RunDB`` opens the store (which applies the migrations, including the durable tables)
and keeps its own ``sqlite3`` connection for the hot path: one small autocommit
transaction when a step is called and one when it completes.

Durability modes: ``"process"`` (default; WAL with ``synchronous=NORMAL``: every saved
step survives a killed process) and ``"power"`` (``synchronous=FULL``: every commit is
fsynced, so saved steps also survive power loss / an OS crash).
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import threading
import time
from dataclasses import dataclass
from typing import Any

from openprogram.errors import StoreError

RUN_STATES = ("running", "paused", "completed", "failed", "cancelled")
DURABILITY_MODES = ("process", "power")


@dataclass(frozen=True)
class RunRecord:
    """One row of ``runs``."""

    id: str
    entry: str
    program_path: str | None
    function_qualname: str
    args: dict[str, Any]
    status: str
    policy: str
    model: str | None
    source_snapshot: dict[str, Any] | None
    session_id: str | None
    result: Any
    error: str | None
    paused_step: str | None
    paused_occurrence: int | None
    pause_reason: str | None
    pause_requested: bool
    owner_pid: int | None
    owner_host: str | None
    created_at: float
    updated_at: float

    def to_json(self) -> dict[str, Any]:
        """Summary used by ``openprogram runs --json``."""
        return {
            "run_id": self.id,
            "entry": self.entry,
            "function": self.function_qualname,
            "status": self.status,
            "policy": self.policy,
            "paused_step": self.paused_step,
            "pause_reason": self.pause_reason,
            "error": self.error,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }


@dataclass(frozen=True)
class StepRecord:
    """One row of ``run_steps``."""

    step_key: str
    scope: str
    position: int
    kind: str
    name: str
    occurrence: int
    input_hash: str
    status: str
    result: str | None


_RUN_COLUMNS = (
    "id, entry, program_path, function_qualname, args, status, policy, model, "
    "source_snapshot, session_id, result, error, paused_step, paused_occurrence, "
    "pause_reason, pause_requested, owner_pid, owner_host, created_at, updated_at"
)


def _run_from_row(row: tuple[Any, ...]) -> RunRecord:
    return RunRecord(
        id=row[0],
        entry=row[1],
        program_path=row[2],
        function_qualname=row[3],
        args=json.loads(row[4] or "{}"),
        status=row[5],
        policy=row[6],
        model=row[7],
        source_snapshot=json.loads(row[8]) if row[8] else None,
        session_id=row[9],
        result=json.loads(row[10]) if row[10] is not None else None,
        error=row[11],
        paused_step=row[12],
        paused_occurrence=row[13],
        pause_reason=row[14],
        pause_requested=bool(row[15]),
        owner_pid=row[16],
        owner_host=row[17],
        created_at=row[18],
        updated_at=row[19],
    )


class RunDB:
    """Run/step records of one store root (thread-safe; one connection with a lock)."""

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        *,
        durability: str | None = None,
        create: bool = True,
    ) -> None:
        from openprogram.store import SessionStore, resolve_root, store_db_path

        mode = durability or os.environ.get("OPENPROGRAM_DURABILITY") or "process"
        if mode not in DURABILITY_MODES:
            raise StoreError(
                f"unknown durability mode {mode!r}: use one of {', '.join(DURABILITY_MODES)}"
            )
        self.durability = mode
        self.root = resolve_root(root)
        self.store = SessionStore(root_path=str(self.root), create=create)  # migrates
        self.db_path = store_db_path(self.root)
        self._lock = threading.RLock()
        try:
            self.conn = sqlite3.connect(
                str(self.db_path), isolation_level=None, check_same_thread=False, timeout=30.0
            )
            self.conn.execute("PRAGMA journal_mode=WAL")
            sync = "FULL" if mode == "power" else "NORMAL"
            self.conn.execute(f"PRAGMA synchronous={sync}")
            self.conn.execute("PRAGMA busy_timeout=30000")
            have = {
                r[0]
                for r in self.conn.execute(
                    "SELECT name FROM sqlite_master WHERE type='table' AND name IN "
                    "('runs','run_steps')"
                )
            }
        except sqlite3.Error as exc:
            self.store.close()
            raise StoreError(f"{self.db_path}: cannot open run records: {exc}") from exc
        if have != {"runs", "run_steps"}:
            self.close()
            raise StoreError(
                f"{self.db_path}: the store has no run tables (its migrations lack the "
                "'durable runs and steps' entry)"
            )

    # -- lifecycle -----------------------------------------------------------------
    def close(self) -> None:
        with self._lock:
            try:
                self.conn.close()
            except Exception:  # pragma: no cover - closing twice
                pass
        self.store.close()

    def __enter__(self) -> RunDB:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _exec(self, sql: str, params: tuple[Any, ...] = ()) -> sqlite3.Cursor:
        with self._lock:
            try:
                return self.conn.execute(sql, params)
            except sqlite3.Error as exc:
                raise StoreError(f"{self.db_path}: {exc}") from exc

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
            f"INSERT INTO runs ({_RUN_COLUMNS}) VALUES "
            "(?, ?, ?, ?, ?, 'running', ?, ?, ?, ?, NULL, NULL, NULL, NULL, NULL, 0, ?, ?, ?, ?)",
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
        row = self._exec(f"SELECT {_RUN_COLUMNS} FROM runs WHERE id = ?", (run_id,)).fetchone()
        return _run_from_row(row) if row else None

    def list_runs(self, status: str | None = None) -> list[RunRecord]:
        if status is None:
            rows = self._exec(f"SELECT {_RUN_COLUMNS} FROM runs ORDER BY created_at").fetchall()
        else:
            rows = self._exec(
                f"SELECT {_RUN_COLUMNS} FROM runs WHERE status = ? ORDER BY created_at",
                (status,),
            ).fetchall()
        return [_run_from_row(r) for r in rows]

    def claim_run(self, run_id: str, expected_status: str) -> bool:
        """Mark a run ``running`` in this process if it is still ``expected_status``."""
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
        """Record the final state of this execution; returns the state actually stored.

        A run cancelled meanwhile (by another process) stays ``cancelled``.
        """
        with self._lock:
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

    def set_pause_reason(self, run_id: str, reason: str, message: str) -> None:
        self._exec(
            "UPDATE runs SET status = 'paused', pause_reason = ?, error = ?, updated_at = ? "
            "WHERE id = ?",
            (reason, message, time.time(), run_id),
        )

    def request_pause(self, run_id: str) -> None:
        self._exec("UPDATE runs SET pause_requested = 1 WHERE id = ?", (run_id,))

    def control_state(self, run_id: str) -> tuple[str, bool]:
        """(status, pause_requested) — read between steps for cancel/pause."""
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
        """Latest of the run's update time and its steps' timestamps (heartbeat)."""
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
            "SELECT step_key, scope, position, kind, name, occurrence, input_hash, status, "
            "result FROM run_steps WHERE run_id = ? ORDER BY scope, position",
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
        """Record (commit) that a step was called, before its function runs."""
        self._exec(
            "INSERT INTO run_steps (run_id, step_key, scope, position, kind, name, occurrence, "
            "input_hash, status, result, started_at, finished_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'dispatched', NULL, ?, NULL) "
            "ON CONFLICT(run_id, step_key) DO UPDATE SET status = 'dispatched', result = NULL, "
            "started_at = excluded.started_at, finished_at = NULL",
            (run_id, step_key, scope, position, kind, name, occurrence, input_hash, time.time()),
        )

    def complete_step(self, run_id: str, step_key: str, result_json: str) -> None:
        self._exec(
            "UPDATE run_steps SET status = 'completed', result = ?, finished_at = ? "
            "WHERE run_id = ? AND step_key = ?",
            (result_json, time.time(), run_id, step_key),
        )

    def fail_step(self, run_id: str, step_key: str, error: str) -> None:
        self._exec(
            "UPDATE run_steps SET status = 'failed', result = ?, finished_at = ? "
            "WHERE run_id = ? AND step_key = ?",
            (json.dumps(error), time.time(), run_id, step_key),
        )

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
