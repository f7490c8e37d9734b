"""Reading and writing run and step records (tables documented in ``durable.schema``).

``RunDB`` opens the store (which applies the migrations, including the durable tables)
and uses the store's per-thread connections, so step records and session-DAG nodes can
share transactions: per step, one commit before its function runs holds the previous
step's result and node output, this step's identity and its running node (see
:func:`openprogram.durable.steps._run_step`).

Durability modes:

* ``"process"`` (default): WAL with ``synchronous=NORMAL``. Every commit survives a killed
  process; after an OS crash or power loss the last commits may be lost.
* ``"power"``: ``synchronous=FULL`` — every commit is fsynced, i.e. one fsync per step,
  before its function runs. After power loss no step is ever re-run silently and no
  saved result is lost; a step whose result was not yet committed is reported uncertain,
  like one killed mid-way.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
from dataclasses import dataclass
from typing import Any

from openprogram.errors import StoreError

RUN_STATES = ("running", "paused", "completed", "failed", "cancelled")
# process (default): WAL + synchronous=NORMAL, one commit per step: a step's result is
#   committed together with the next step's identity (or when its scope/run ends), so a
#   process killed in the gap between a step's return and the next step reports that
#   step uncertain instead of resuming past it. Nothing committed is ever lost.
# eager: as process, but a step's result is committed as soon as it returns (two
#   commits per step; a kill between steps resumes past the finished step).
# power: process with synchronous=FULL (one fsync per step): survives power loss too.
DURABILITY_MODES = ("process", "eager", "power")


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


class RunDB:
    """Run/step records of one store root (thread-safe: each thread uses its own connection
    of the store, so step records and session-DAG nodes can share one transaction)."""

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        *,
        durability: str | None = None,
        create: bool = True,
        read_only: bool = False,
    ) -> None:
        from openprogram.store import SessionStore, resolve_root, store_db_path
        from openprogram.store.sqlite import SqliteBackend

        mode = durability or os.environ.get("OPENPROGRAM_DURABILITY") or "process"
        if mode not in DURABILITY_MODES:
            raise StoreError(
                f"unknown durability mode {mode!r}: use one of {', '.join(DURABILITY_MODES)}"
            )
        self.durability = mode
        self.power = mode == "power"
        self.defer_results = mode in ("process", "power")
        self.root = resolve_root(root)
        # migrates unless read_only
        self.store = SessionStore(root_path=str(self.root), create=create, read_only=read_only)
        self.db_path = store_db_path(self.root)
        backend = self.store.backend
        if not isinstance(backend, SqliteBackend):  # pragma: no cover - only SQLite today
            self.store.close()
            raise StoreError(f"{self.store.location}: durable runs need the SQLite store")
        self.backend = backend
        try:
            if self.power:
                backend.set_synchronous("FULL")
            have = {
                r[0]
                for r in self.conn.execute(
                    "SELECT name FROM sqlite_master WHERE type='table' AND name IN "
                    "('runs','run_steps')"
                )
            }
        except (sqlite3.Error, StoreError) as exc:
            self.store.close()
            raise StoreError(f"{self.db_path}: cannot open run records: {exc}") from None
        if have != {"runs", "run_steps"}:
            self.close()
            raise StoreError(
                f"{self.db_path}: the store has no run tables (its migrations lack the "
                "'durable runs and steps' entry)"
            )

    @property
    def conn(self) -> sqlite3.Connection:
        """This thread's connection to the store (autocommit unless a transaction is open)."""
        return self.backend.connection()

    def owns(self, writer: Any) -> bool:
        """Whether ``writer`` (a ``SessionNodeWriter``) writes through this store's backend,
        i.e. on the same per-thread connections as the run records."""
        return getattr(writer, "_backend", None) is self.backend

    # -- lifecycle -----------------------------------------------------------------
    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> RunDB:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _exec(self, sql: str, params: tuple[Any, ...] = ()) -> sqlite3.Cursor:
        try:
            return self.backend.connection().execute(sql, params)
        except sqlite3.Error as exc:
            raise StoreError(f"{self.db_path}: {exc}") from None

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

    def try_dispatch_step(
        self,
        conn: sqlite3.Connection,
        run_id: str,
        step_key: str,
        scope: str,
        position: int,
        kind: str,
        name: str,
        occurrence: int,
        input_hash: str,
    ) -> bool:
        """Like :meth:`dispatch_step` on ``conn`` (which may be in a transaction), unless
        the run was cancelled or a pause was requested: then nothing is written and this
        returns ``False`` (one statement does both the check and the write)."""
        try:
            cur = conn.execute(
                _DISPATCH_CHECKED_SQL,
                (
                    run_id,
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
        except sqlite3.Error as exc:
            raise StoreError(f"{self.db_path}: {exc}") from None
        return cur.rowcount == 1

    def complete_step_on(
        self, conn: sqlite3.Connection, run_id: str, step_key: str, result_json: str
    ) -> None:
        """:meth:`complete_step` on ``conn`` (which may be in a transaction)."""
        try:
            conn.execute(_COMPLETE_SQL, (result_json, time.time(), run_id, step_key))
        except sqlite3.Error as exc:
            raise StoreError(f"{self.db_path}: {exc}") from None

    def complete_step(self, run_id: str, step_key: str, result_json: str) -> None:
        self._exec(_COMPLETE_SQL, (result_json, time.time(), run_id, step_key))

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

    # -- approvals of requires_approval tools (rows of kind 'approval', scope 'approvals';
    #    see durable.approvals). Status: 'requested' | 'approved' | 'denied'.
    def request_approval(self, run_id: str, key: str, tool: str, arguments_json: str) -> None:
        """Record that the run waits for approval of one tool call (idempotent)."""
        self._exec(
            "INSERT INTO run_steps (run_id, step_key, scope, position, kind, name, occurrence, "
            "input_hash, status, result, started_at, finished_at) VALUES "
            "(?, ?, 'approvals', 0, 'approval', ?, 0, ?, 'requested', ?, ?, NULL) "
            "ON CONFLICT(run_id, step_key) DO NOTHING",
            (run_id, key, tool, key, arguments_json, time.time()),
        )

    def approval_status(self, run_id: str, key: str) -> str | None:
        """``requested`` | ``approved`` | ``denied`` of one tool call, or None."""
        row = self._exec(
            "SELECT status FROM run_steps WHERE run_id = ? AND step_key = ? AND kind = 'approval'",
            (run_id, key),
        ).fetchone()
        return str(row[0]) if row else None

    def pending_approval(self, run_id: str) -> tuple[str, str, str] | None:
        """``(key, tool, arguments_json)`` of the run's oldest undecided request."""
        row = self._exec(
            "SELECT step_key, name, result FROM run_steps WHERE run_id = ? AND "
            "kind = 'approval' AND status = 'requested' ORDER BY started_at LIMIT 1",
            (run_id,),
        ).fetchone()
        return (str(row[0]), str(row[1]), str(row[2])) if row else None

    def decide_approval(self, run_id: str, key: str, decision: str) -> None:
        """Record the user's ``approved`` / ``denied`` decision of a requested call."""
        self._exec(
            "UPDATE run_steps SET status = ?, finished_at = ? WHERE run_id = ? AND "
            "step_key = ? AND kind = 'approval' AND status = 'requested'",
            (decision, time.time(), run_id, key),
        )
