"""The run store on SQLite: every statement on ``runs`` / ``run_steps`` for this backend.

It uses the session store's per-thread connections (:class:`SqliteBackend`), so a step's
records and its session-DAG node share one ``BEGIN IMMEDIATE`` transaction
(:meth:`SqliteRunStore.write_step`). Durability: ``process``/``eager`` keep WAL with
``synchronous=NORMAL`` (a commit survives a killed process); ``power`` sets
``synchronous=FULL`` (one fsync per commit: it survives power loss too).
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Callable
from typing import Any

from openprogram.contract.runs import Durability, RunStatus
from openprogram.errors import StoreError
from openprogram.store.lease import Owner
from openprogram.store.runs import (
    CALL_ORDER,
    REPLAY_COLUMNS,
    RUN_COLUMNS,
    STEP_COLUMNS,
    GraphNodeRow,
    RunRecord,
    RunStore,
    StepCall,
    StepDone,
    StepNode,
    StepRecord,
    run_from_row,
)
from openprogram.store.sqlite import SqliteBackend

#: Busy timeout of the read-only stores opened for tooling (editor, lint, listings).
TOOLING_BUSY_TIMEOUT_S = 2.0

_INSERT_RUN_SQL = (
    f"INSERT INTO runs ({RUN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
    "NULL, NULL, NULL, NULL, NULL, 0, ?, ?, ?, ?, ?, ?, ?, 0, ?)"
)
_DISPATCH_SQL = (
    "INSERT INTO run_steps (run_id, step_key, scope, position, kind, name, occurrence, "
    "input_hash, status, result, started_at, finished_at) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'dispatched', NULL, ?9, NULL) "
    "ON CONFLICT(run_id, step_key) DO UPDATE SET status = 'dispatched', result = NULL, "
    "started_at = excluded.started_at, finished_at = NULL"
)
# The same write, only while this execution (?10) holds the lease of a running run that
# is asked neither to pause nor to cancel.
_DISPATCH_CHECKED_SQL = (
    "INSERT INTO run_steps (run_id, step_key, scope, position, kind, name, occurrence, "
    "input_hash, status, result, started_at, finished_at) "
    "SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'dispatched', NULL, ?9, NULL FROM runs "
    "WHERE id = ?1 AND status = 'running' AND pause_requested = 0 "
    "AND cancel_requested = 0 AND owner_token = ?10 "
    "ON CONFLICT(run_id, step_key) DO UPDATE SET status = 'dispatched', result = NULL, "
    "started_at = excluded.started_at, finished_at = NULL"
)
_COMPLETE_SQL = (
    "UPDATE run_steps SET status = 'completed', result = ?, finished_at = ? "
    "WHERE run_id = ? AND step_key = ?"
)
# The same write by the execution holding the lease ?5 only (a process that lost the
# run's lease never overwrites what the new owner recorded).
_COMPLETE_FENCED_SQL = (
    "UPDATE run_steps SET status = 'completed', result = ?1, finished_at = ?2 "
    "WHERE run_id = ?3 AND step_key = ?4 AND (SELECT owner_token FROM runs WHERE id = ?3) = ?5"
)
_FAIL_SQL = (
    "UPDATE run_steps SET status = 'failed', result = ?, finished_at = ? "
    "WHERE run_id = ? AND step_key = ?"
)


# -- the editor's views, built in SQL ------------------------------------------------------
# A 10,000-step run: SQLite writes each row's JSON object (C, no Python object per field);
# the objects are the ones ``store.run_views`` builds for the other backends.

_STEP_VIEW_SQL = f"""
SELECT json_object(
    'key', step_key, 'scope', scope, 'kind', kind, 'name', name, 'occurrence', occurrence,
    'label', name || ' #' || occurrence, 'state', state,
    'durationMs', CASE
        WHEN finished_at IS NOT NULL THEN max(0.0, finished_at - started_at) * 1000.0
        WHEN state = 'running' THEN max(0.0, :now - started_at) * 1000.0 END,
    'result', CASE WHEN state = 'completed' THEN op_short(result) ELSE '' END,
    'error', CASE WHEN state = 'failed' THEN op_short(result) ELSE '' END)
FROM (
    SELECT *, CASE
        WHEN status IN ('completed', 'failed') THEN status
        WHEN :live THEN 'running'
        WHEN name = :paused_name AND occurrence = :paused_occurrence THEN 'paused'
        ELSE 'uncertain' END AS state
    FROM run_steps WHERE run_id = :run_id ORDER BY {CALL_ORDER})
"""


def _json_at(column: str, key: str, *, guarded: bool) -> str:
    """``column``'s value at ``$.key``, NULL without it. The key's text is looked for first, so
    most rows are parsed once or not at all; ``guarded`` checks ``json_valid`` too (a
    malformed column then reads as NULL instead of failing the query)."""
    test = f"instr({column}, '\"{key.rpartition('.')[2]}\"') > 0"
    if guarded:
        test += f" AND json_valid({column})"
    return f"CASE WHEN {test} THEN json_extract({column}, '$.{key}') END"


def _preview(column: str) -> str:
    """The stored JSON text cut to ``:limit`` characters ('' for none or ``null``)."""
    return (
        f"CASE WHEN {column} IS NULL OR {column} = 'null' THEN ''"
        f" WHEN length({column}) <= :limit THEN {column}"
        f" ELSE substr({column}, 1, :limit - 1) || '…' END"
    )


def _graph_node_sql(guarded: bool) -> str:
    """The nodes query; the inner select extracts each value once (``OFFSET 0`` keeps SQLite
    from copying its expressions into the outer one), the outer checks the JSON types."""
    return f"""
SELECT id, kind, name, created_at,
    CASE WHEN typeof(tokens_in) = 'integer' THEN tokens_in END AS tokens_in,
    CASE WHEN typeof(tokens_out) = 'integer' THEN tokens_out END AS tokens_out,
    json_object(
    'id', id, 'seq', seq, 'kind', kind, 'name', name, 'status', status,
    'caller', caller_id, 'pred', predecessor_id,
    'durationMs', CASE WHEN typeof(duration) IN ('integer', 'real') THEN duration * 1000.0 END,
    'model', CASE WHEN typeof(model) = 'text' AND model <> '' THEN
        CASE WHEN typeof(provider) = 'text' AND provider <> ''
        THEN provider || ':' || model ELSE model END END,
    'usage', CASE
        WHEN typeof(tokens_in) = 'integer' AND typeof(tokens_out) = 'integer'
            THEN json_object('input_tokens', tokens_in, 'output_tokens', tokens_out)
        WHEN typeof(tokens_in) = 'integer' THEN json_object('input_tokens', tokens_in)
        WHEN typeof(tokens_out) = 'integer' THEN json_object('output_tokens', tokens_out) END,
    'error', CASE WHEN typeof(error) = 'text' THEN error END,
    'input', {_preview("input")}, 'output', {_preview("output")})
FROM (
    SELECT id, seq, kind, name, status, caller_id, predecessor_id, input, output, created_at,
        {_json_at("metadata", "duration_s", guarded=guarded)} AS duration,
        {_json_at("metadata", "error_type", guarded=guarded)} AS error,
        {_json_at("metadata", "usage.input_tokens", guarded=guarded)} AS tokens_in,
        {_json_at("metadata", "usage.output_tokens", guarded=guarded)} AS tokens_out,
        CASE WHEN kind = 'llm' THEN {_json_at("input", "model", guarded=guarded)} END AS model,
        CASE WHEN kind = 'llm' THEN {_json_at("input", "provider", guarded=guarded)} END
            AS provider
    FROM nodes WHERE session_id = :session_id AND (:node_id IS NULL OR id = :node_id)
    ORDER BY seq LIMIT -1 OFFSET 0)
"""


_GRAPH_NODE_SQL = _graph_node_sql(guarded=False)
_GRAPH_NODE_SQL_GUARDED = _graph_node_sql(guarded=True)


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
        self._checkpointer = backend.checkpointer

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
        from openprogram.store import SessionStore, resolve_root, store_db_path
        from openprogram.store.session_store import _sqlite_backend

        path = store_db_path(root)
        if not path.is_file() and not resolve_root(root).is_file():
            return None  # no store yet: no runs (a store path that is a file is an error)
        if not path.is_file():  # a store path that is a file: its one-line error
            SessionStore(root, create=False, read_only=True).close()
        # read-only with a short busy timeout (tooling never waits long on a writer); an
        # older schema is migrated only when the store is writable
        backend = _sqlite_backend(path, True, TOOLING_BUSY_TIMEOUT_S)
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

    def write_step(
        self,
        run_id: str,
        token: str,
        done: StepDone | None,
        call: StepCall | None,
        node: StepNode | None = None,
    ) -> tuple[bool, tuple[str, int] | None]:
        backend = self.backend
        conn = backend.connection()
        execute = conn.execute
        now = time.time()
        dispatched = False
        appended = None
        try:
            execute("BEGIN IMMEDIATE")
            try:
                if done is not None:
                    execute(_COMPLETE_FENCED_SQL, (done.text, now, run_id, done.key, token))
                    if done.node_id is not None:
                        backend.finish_node(conn, done.node_id, done.text, done.duration, now)
                if call is not None:
                    dispatched = (
                        execute(
                            _DISPATCH_CHECKED_SQL,
                            (
                                run_id, call.key, call.scope, call.position, call.kind,
                                call.name, call.occurrence, call.input_hash, now, token,
                            ),
                        ).rowcount
                        == 1
                    )  # fmt: skip
                    if dispatched and node is not None:
                        appended = backend.append_json(
                            node.session_id, "code", node.name, node.caller_id,
                            node.input_json, None, "running", node.meta_json, now,
                        )  # fmt: skip
                execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise backend._error(exc) from None
        if self._checkpointer is not None:
            self._checkpointer.committed()
        return dispatched, appended

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
        owner: Owner | None,
        lease_s: float = 0.0,
        queue: str | None = None,
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
                RunStatus.QUEUED if owner is None else RunStatus.RUNNING,
                policy,
                model,
                json.dumps(source_snapshot) if source_snapshot is not None else None,
                session_id,
                None if owner is None else owner.pid,
                None if owner is None else owner.host,
                now,
                now,
                None if owner is None else owner.token,
                None if owner is None else owner.proc,
                None if owner is None else now + lease_s,
                queue,
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

    def claim_run(
        self,
        run_id: str,
        *,
        expected_status: str,
        expected_token: str | None,
        owner: Owner,
        lease_s: float,
    ) -> bool:
        now = time.time()
        cur = self._exec(
            "UPDATE runs SET status = 'running', owner_token = ?, owner_pid = ?, "
            "owner_host = ?, owner_proc = ?, lease_expires_at = ?, pause_requested = 0, "
            "cancel_requested = 0, updated_at = ? "
            "WHERE id = ? AND status = ? AND owner_token IS ?",
            (
                owner.token,
                owner.pid,
                owner.host,
                owner.proc,
                now + lease_s,
                now,
                run_id,
                expected_status,
                expected_token,
            ),
        )
        return cur.rowcount == 1

    def claim_next(
        self, queue: str, owner: Owner, lease_s: float, *, limit: int | None = None
    ) -> RunRecord | None:
        now = time.time()
        with self.backend.transaction() as conn:  # BEGIN IMMEDIATE: one claimer at a time
            try:
                if limit is not None:
                    (busy,) = conn.execute(
                        "SELECT COUNT(*) FROM runs WHERE queue = ? AND status = 'running' "
                        "AND lease_expires_at > ?",
                        (queue, now),
                    ).fetchone()
                    if busy >= limit:
                        return None
                row = conn.execute(
                    "SELECT id FROM runs WHERE queue = ? AND (status = 'queued' OR "
                    "(status = 'running' AND (lease_expires_at IS NULL "
                    "OR lease_expires_at < ?))) ORDER BY created_at LIMIT 1",
                    (queue, now),
                ).fetchone()
                if row is None:
                    return None
                conn.execute(
                    "UPDATE runs SET status = 'running', owner_token = ?, owner_pid = ?, "
                    "owner_host = ?, owner_proc = ?, lease_expires_at = ?, updated_at = ? "
                    "WHERE id = ?",
                    (owner.token, owner.pid, owner.host, owner.proc, now + lease_s, now, row[0]),
                )
            except sqlite3.Error as exc:
                raise self.backend._error(exc) from None
        return self.get_run(row[0])

    def count_unfinished(self, queue: str) -> int:
        row = self._exec(
            "SELECT COUNT(*) FROM runs WHERE queue = ? AND status IN ('queued', 'running')",
            (queue,),
        ).fetchone()
        return int(row[0])

    def renew_lease(self, run_id: str, token: str, lease_s: float) -> bool:
        cur = self._exec(
            "UPDATE runs SET lease_expires_at = ? WHERE id = ? AND owner_token = ? "
            "AND status = 'running'",
            (time.time() + lease_s, run_id, token),
        )
        return cur.rowcount == 1

    def release_run(self, run_id: str, token: str, *, requeue: bool) -> bool:
        cur = self._exec(
            "UPDATE runs SET status = CASE WHEN ? THEN 'queued' ELSE status END, "
            "lease_expires_at = 0, updated_at = ? "
            "WHERE id = ? AND owner_token = ? AND status = 'running'",
            (int(requeue), time.time(), run_id, token),
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
        token: str | None = None,
    ) -> str:
        cur = self._exec(
            "UPDATE runs SET status = ?, result = ?, error = ?, paused_step = ?, "
            "paused_occurrence = ?, pause_reason = ?, pause_requested = 0, "
            "cancel_requested = 0, lease_expires_at = NULL, updated_at = ? "
            "WHERE id = ? AND status = 'running' AND owner_token IS ?",
            (
                status,
                json.dumps(result) if status == "completed" else None,
                error,
                paused_step,
                paused_occurrence,
                pause_reason,
                time.time(),
                run_id,
                token,
            ),
        )
        if cur.rowcount == 1:
            return status
        run = self.get_run(run_id)
        return run.status if run else status

    def cancel_run(
        self, run_id: str, *, expected_status: str, expected_token: str | None, error: str
    ) -> bool:
        cur = self._exec(
            "UPDATE runs SET status = 'cancelled', error = ?, pause_requested = 0, "
            "cancel_requested = 0, lease_expires_at = NULL, updated_at = ? "
            "WHERE id = ? AND status = ? AND owner_token IS ?",
            (error, time.time(), run_id, expected_status, expected_token),
        )
        return cur.rowcount == 1

    def request_cancel(self, run_id: str) -> None:
        self._exec("UPDATE runs SET cancel_requested = 1 WHERE id = ?", (run_id,))

    def set_paused(
        self,
        run_id: str,
        reason: str,
        message: str,
        *,
        step: str | None = None,
        occurrence: int | None = None,
        only_if_running: bool = False,
        token: str | None = None,
    ) -> bool:
        sql = (
            "UPDATE runs SET status = 'paused', pause_reason = ?, error = ?, "
            "paused_step = COALESCE(?, paused_step), "
            "paused_occurrence = COALESCE(?, paused_occurrence), updated_at = ? WHERE id = ?"
        )
        params: tuple[Any, ...] = (reason, message, step, occurrence, time.time(), run_id)
        if only_if_running:
            sql += " AND status = 'running' AND owner_token IS ?"
            params += (token,)
        cur = self._exec(sql, params)
        return cur.rowcount == 1

    def request_pause(self, run_id: str) -> None:
        self._exec("UPDATE runs SET pause_requested = 1 WHERE id = ?", (run_id,))

    def control_state(self, run_id: str) -> tuple[str, bool, bool, str | None]:
        row = self._exec(
            "SELECT status, pause_requested, cancel_requested, owner_token FROM runs WHERE id = ?",
            (run_id,),
        ).fetchone()
        if row is None:
            return RunStatus.CANCELLED, False, False, None
        return row[0], bool(row[1]), bool(row[2]), row[3]

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

    def replay_steps(self, run_id: str) -> list[StepRecord]:
        rows = self._exec(
            f"SELECT {REPLAY_COLUMNS} FROM run_steps WHERE run_id = ?", (run_id,)
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

    # -- approvals -----------------------------------------------------------------
    def request_approval(self, run_id: str, key: str, tool: str, arguments_json: str) -> None:
        self._exec(
            "INSERT INTO run_steps (run_id, step_key, scope, position, kind, name, occurrence, "
            "input_hash, status, result, started_at, finished_at) VALUES "
            "(?, ?, 'approvals', 0, 'approval', ?, 0, ?, 'requested', ?, ?, NULL) "
            "ON CONFLICT(run_id, step_key) DO NOTHING",
            (run_id, key, tool, key, arguments_json, time.time()),
        )

    def approval_status(self, run_id: str, key: str) -> str | None:
        row = self._exec(
            "SELECT status FROM run_steps WHERE run_id = ? AND step_key = ? AND kind = 'approval'",
            (run_id, key),
        ).fetchone()
        return str(row[0]) if row else None

    def pending_approval(self, run_id: str) -> tuple[str, str, str] | None:
        row = self._exec(
            "SELECT step_key, name, result FROM run_steps WHERE run_id = ? AND "
            "kind = 'approval' AND status = 'requested' ORDER BY started_at LIMIT 1",
            (run_id,),
        ).fetchone()
        return (str(row[0]), str(row[1]), str(row[2])) if row else None

    def decide_approval(self, run_id: str, key: str, decision: str) -> bool:
        cur = self._exec(
            "UPDATE run_steps SET status = ?, finished_at = ? WHERE run_id = ? AND "
            "step_key = ? AND kind = 'approval' AND status = 'requested'",
            (decision, time.time(), run_id, key),
        )
        return cur.rowcount == 1

    # -- session-DAG reads -----------------------------------------------------------
    # -- the editor's views (SQL twins of ``run_views``) ---------------------------------
    def step_starts(self, run_id: str) -> list[tuple[str, int, float]]:
        rows = self._exec(
            f"SELECT name, occurrence, started_at FROM run_steps WHERE run_id = ? "
            f"ORDER BY {CALL_ORDER}",
            (run_id,),
        ).fetchall()
        return [(str(r[0]), int(r[1]), float(r[2] or 0.0)) for r in rows]

    def step_view_objects(
        self,
        run_id: str,
        *,
        live: bool,
        paused_at: tuple[str, int] | None,
        now: float,
        shorten: Callable[[str | None], str],
    ) -> list[str]:
        name, occurrence = paused_at if paused_at is not None else (None, None)
        conn = self.backend.connection()
        conn.create_function("op_short", 1, shorten, deterministic=True)
        params = {
            "run_id": run_id,
            "live": int(live),
            "paused_name": name,
            "paused_occurrence": occurrence,
            "now": now,
        }
        try:
            rows = conn.execute(_STEP_VIEW_SQL, params).fetchall()
        except sqlite3.Error as exc:
            raise self.backend._error(exc) from None
        return [r[0] for r in rows]

    def graph_node_objects(
        self, session_id: str, *, limit: int, node_id: str | None = None
    ) -> list[GraphNodeRow]:
        params = {"session_id": session_id, "node_id": node_id, "limit": max(1, int(limit))}
        conn = self.backend.connection()
        try:
            rows = conn.execute(_GRAPH_NODE_SQL, params).fetchall()
        except sqlite3.Error:  # a malformed JSON column: check each value
            try:
                rows = conn.execute(_GRAPH_NODE_SQL_GUARDED, params).fetchall()
            except sqlite3.Error as exc:
                raise self.backend._error(exc) from None
        return [GraphNodeRow._make(r) for r in rows]

    def session_node_rows(self, session_id: str) -> list[tuple[Any, ...]]:
        return self._exec(
            "SELECT id, seq, kind, name, caller_id, predecessor_id, input, output, status, "
            "metadata, created_at FROM nodes WHERE session_id = ? ORDER BY seq",
            (session_id,),
        ).fetchall()

    def llm_usage(self, session_id: str) -> tuple[int, tuple[int, int]]:
        row = self._exec(
            "SELECT COUNT(*), "
            "COALESCE(SUM(json_extract(metadata, '$.usage.input_tokens')), 0), "
            "COALESCE(SUM(json_extract(metadata, '$.usage.output_tokens')), 0) "
            "FROM nodes WHERE session_id = ? AND kind = 'llm'",
            (session_id,),
        ).fetchone()
        return int(row[0]), (int(row[1]), int(row[2]))
