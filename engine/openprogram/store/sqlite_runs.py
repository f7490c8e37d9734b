"""The run store on SQLite: the statements on ``runs`` / ``run_steps`` of this backend's
own (the shared ones are :class:`~openprogram.store.runs.RunSql`).

It uses the session store's per-thread connections (:class:`SqliteBackend`), so a step's
records and its session-DAG node share one ``BEGIN IMMEDIATE`` transaction
(:meth:`SqliteRunStore.write_step`). Durability: ``process``/``eager`` keep WAL with
``synchronous=NORMAL`` (a commit survives a killed process); ``power`` sets
``synchronous=FULL`` (one fsync per commit: it survives power loss too).
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from typing import Any

from openprogram.contract.runs import Durability
from openprogram.errors import StoreError
from openprogram.store.lease import Owner
from openprogram.store.runs import (
    CALL_ORDER,
    REDISPATCH,
    STEP_INSERT,
    GraphNodeRow,
    RunRecord,
    RunSql,
    RunStore,
    StepCall,
    StepDone,
    StepNode,
)
from openprogram.store.sqlite import SqliteBackend

#: Busy timeout of the read-only stores opened for tooling (editor, lint, listings).
TOOLING_BUSY_TIMEOUT_S = 2.0

# A step's dispatch (``RunSql.dispatch_step``), only while this execution (?10) holds the
# lease of a running run that is asked neither to pause nor to cancel.
_DISPATCH_CHECKED_SQL = (
    STEP_INSERT + "SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'dispatched', NULL, ?9, NULL FROM runs "
    "WHERE id = ?1 AND status = 'running' AND pause_requested = 0 "
    "AND cancel_requested = 0 AND owner_token = ?10 " + REDISPATCH
)
# A step's result (``RunSql.complete_step``) written by the execution holding the lease ?5
# only (a process that lost the run's lease never overwrites what the new owner recorded).
_COMPLETE_FENCED_SQL = (
    "UPDATE run_steps SET status = 'completed', result = ?1, finished_at = ?2 "
    "WHERE run_id = ?3 AND step_key = ?4 AND (SELECT owner_token FROM runs WHERE id = ?3) = ?5"
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

    sql = RunSql.for_dialect(placeholder="?", null_safe_equal="IS")

    backend: SqliteBackend

    def __init__(self, store: Any, durability: Durability) -> None:
        if not isinstance(store.backend, SqliteBackend):  # pragma: no cover - wiring error
            raise StoreError(f"{store.location}: not an SQLite store")
        super().__init__(store, durability)
        self._checkpointer = self.backend.checkpointer

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
    def _exec(self, sql: str, params: tuple[Any, ...] = ()) -> sqlite3.Cursor:
        try:
            return self.backend.connection().execute(sql, params)
        except sqlite3.Error as exc:
            raise self.backend._error(exc) from None

    def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        try:
            return self.backend.connection().execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise self.backend._error(exc) from None

    def _row(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        try:
            return self.backend.connection().execute(sql, params).fetchone()
        except sqlite3.Error as exc:
            raise self.backend._error(exc) from None

    def _changed(self, sql: str, params: tuple[Any, ...] = ()) -> int:
        return self._exec(sql, params).rowcount

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

    def last_activity(self, run_id: str) -> float:
        row = self._exec(
            "SELECT MAX(COALESCE(finished_at, started_at)) FROM run_steps WHERE run_id = ?",
            (run_id,),
        ).fetchone()
        run = self.get_run(run_id)
        base = run.updated_at if run else 0.0
        return max(base, row[0] or 0.0) if row else base

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

    def llm_usage(self, session_id: str) -> tuple[int, tuple[int, int]]:
        row = self._exec(
            "SELECT COUNT(*), "
            "COALESCE(SUM(json_extract(metadata, '$.usage.input_tokens')), 0), "
            "COALESCE(SUM(json_extract(metadata, '$.usage.output_tokens')), 0) "
            "FROM nodes WHERE session_id = ? AND kind = 'llm'",
            (session_id,),
        ).fetchone()
        return int(row[0]), (int(row[1]), int(row[2]))
