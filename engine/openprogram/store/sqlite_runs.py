"""The run store on SQLite: the statements on ``runs`` / ``run_steps`` of this backend's
own (the shared ones are :class:`~openprogram.store.runs.RunSql`).

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
from dataclasses import replace
from pathlib import Path
from typing import Any

from openprogram.contract.runs import Durability, RunStatus
from openprogram.errors import StoreError
from openprogram.store.base import node_exit
from openprogram.store.ids import new_id
from openprogram.store.lease import Owner
from openprogram.store.migrations import RELEASE_STEP_COLUMNS
from openprogram.store.run_views import (
    VIEW_STEP_KINDS,
    StepContext,
    error_text,
    node_status,
    step_state,
)
from openprogram.store.runs import (
    CALL_ORDER,
    MAY_DISPATCH,
    REDISPATCH,
    GraphNodeRow,
    RunRecord,
    RunSql,
    RunStore,
    StepCall,
    StepDone,
    StepNode,
    held_by,
    lease_lost_error,
    step_insert,
)
from openprogram.store.sqlite import NODE_COLUMNS, SqliteBackend, with_duration
from openprogram.store.step_log import GUESS_HOLDS, GUESS_HOLDS_SEQ

#: Busy timeout of the read-only stores opened for tooling (editor, lint, listings).
TOOLING_BUSY_TIMEOUT_S = 2.0

#: The records that have no session-DAG node (schema v6; ``run_steps`` is the view of all).
NODELESS = "run_steps_nodeless"
_FENCE_SQL = f"SELECT 1 FROM runs WHERE id = ? AND {MAY_DISPATCH}?"
# A dispatch without a node (``RunSql.dispatch_step`` into the nodeless records), only
# while the run may record it and no node holds the key (that re-dispatch goes through
# ``_dispatch_slowly``, which releases the node's record first).
_DISPATCH_NODELESS_SQL = (
    step_insert(NODELESS)
    + "SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'dispatched', NULL, ?9, NULL FROM runs "
    f"WHERE id = ?1 AND {MAY_DISPATCH}?10 "
    "AND NOT EXISTS (SELECT 1 FROM nodes WHERE run_id = ?1 AND step_key = ?2) " + REDISPATCH
)


# A step's dispatch held by its new running ``code`` node: one row, in the step log
# (``store.step_log``). The seq is the caller's guess of the session's last one (?3, the
# node ?6 as predecessor), checked over ``nodes`` and the log; the insert is refused —
# seq NULL, which NOT NULL refuses — as well when the run may not record the step or a
# record of its key exists (nodeless or in ``nodes``; one logged by this process since
# its last fold is never dispatched here: ``StepLog.may_log``). ``_dispatch_slowly``
# then decides. (``VALUES``, not ``INSERT ... SELECT``: a select reading the table it
# inserts into goes through a temporary table, which doubled the statement's cost.)
def _insert_into_log(guard: str) -> str:
    """The insert of a step's running node into the log when ``guard`` holds and no record
    of its key exists (nodeless or in ``nodes``)."""
    return (
        f"INSERT INTO node_log ({NODE_COLUMNS}, run_id, step_key, step_scope, step_position, "
        "step_kind, step_occurrence, step_input_hash, step_status) VALUES (?1, ?2, "
        f"CASE WHEN {guard} "
        f"AND NOT EXISTS (SELECT 1 FROM {NODELESS} WHERE run_id = ?10 AND step_key = ?11) "
        "AND NOT EXISTS (SELECT 1 FROM nodes WHERE run_id = ?10 AND step_key = ?11) "
        "THEN ?3 + 1 END, 'code', ?4, ?5, ?6, ?7, NULL, 'running', ?8, ?9, ?9, ?10, ?11, "
        "?12, ?13, ?14, ?15, ?16, 'dispatched')"
    )


_DISPATCH_TO_LOG_SQL = _insert_into_log(
    f"{GUESS_HOLDS} AND EXISTS (SELECT 1 FROM runs WHERE id = ?10 AND {MAY_DISPATCH}?17)"
)
# The same in the commit that completed the previous step's row still in the log: that
# row proves the lease and the unpinned head (``store.step_log``), so only the seq and the
# key are checked (parameters ?1-?16 of ``_DISPATCH_TO_LOG_SQL``).
_CONTINUE_IN_LOG_SQL = _insert_into_log(GUESS_HOLDS_SEQ)
# The node ?1 (appended by ``append_json``) takes the dispatch of a step.
_HOLD_ON_NODE_SQL = (
    "UPDATE nodes SET run_id = ?2, step_key = ?3, step_scope = ?4, step_position = ?5, "
    "step_kind = ?6, step_occurrence = ?7, step_input_hash = ?8, step_status = 'dispatched', "
    "step_result = NULL, step_finished_at = NULL WHERE id = ?1"
)
# A node gives up the record of step ?2 of run ?1 (a re-dispatch records it anew).
_RELEASE_ON_NODE_SQL = (
    f"UPDATE nodes SET {RELEASE_STEP_COLUMNS} WHERE run_id = ?1 AND step_key = ?2"
)
_RELEASE_NODELESS_SQL = f"DELETE FROM {NODELESS} WHERE run_id = ?1 AND step_key = ?2"
# A returned step, one row: its node's exit and its result (``completed``), only while
# this execution (?5) holds the lease — a process that lost it never overwrites what the
# new owner recorded, and closes the node as an error (``LeaseLost``) instead.
_HOLDER = f"(step_key = ?6 AND run_id = ?4 AND {held_by('?4', '?5')})"
#: The node's exit (?1 the time, ?2 the output, ?3 the duration's JSON: the row
#: ``SqliteBackend.finish_node`` writes) and the step's result columns with their values:
#: the two halves of a returned step's update.
_NODE_EXIT = node_exit("?1", "?2", "'completed'", with_duration("?3"))
_STEP_RESULT = (("step_status", "'completed'"), ("step_result", "?2"), ("step_finished_at", "?1"))
_COMPLETE_ON_NODE_SQL = (
    "UPDATE nodes SET "
    + node_exit(
        "?1",
        f"CASE WHEN {_HOLDER} THEN ?2 ELSE json_object('error', {lease_lost_error('?4')}) END",
        f"CASE WHEN {_HOLDER} THEN 'completed' ELSE 'error' END",
        f"CASE WHEN {_HOLDER} THEN {with_duration('?3')} ELSE json_set(metadata, "
        "'$.\"duration_s\"', json(?3), '$.\"error_type\"', 'LeaseLost') END",
    )
    + ", "
    + ", ".join(f"{c} = CASE WHEN {_HOLDER} THEN {v} ELSE {c} END" for c, v in _STEP_RESULT)
    + " WHERE id = ?7"
)


# The same row while it is in the step log (``lid`` ?4, taken from ``StepLog``): a row
# still in the log proves that the lease it was inserted under holds (``store.step_log``),
# so the result is written without the check.
def _complete_in_log(node_exit_sets: str) -> str:
    return (
        f"UPDATE node_log SET {node_exit_sets}, "
        + ", ".join(f"{c} = {v}" for c, v in _STEP_RESULT)
        + " WHERE lid = ?4 AND id = ?5"
    )


_COMPLETE_IN_LOG_SQL = _complete_in_log(_NODE_EXIT)
# The same when the node's metadata was ``{}`` at its insert: ?3 is its new metadata (the
# text ``json_set`` writes). Its row still in the log means nobody wrote it since: every
# other write folds the log first.
_COMPLETE_IN_LOG_NEW_META_SQL = _complete_in_log(node_exit("?1", "?2", "'completed'", "?3"))
# Only the result, where SQLite has no JSON functions (the node's exit is then written by
# ``finish_node``, which merges the metadata in Python).
_COMPLETE_ON_NODE_PLAIN_SQL = (
    "UPDATE nodes SET step_status = 'completed', step_result = ?2, step_finished_at = ?1 "
    f"WHERE id = ?7 AND {_HOLDER}"
)
# A nodeless step's result (``RunSql.complete_step``), fenced the same way.
_COMPLETE_NODELESS_SQL = (
    f"UPDATE {NODELESS} SET status = 'completed', result = ?1, finished_at = ?2 "
    f"WHERE run_id = ?3 AND step_key = ?4 AND {held_by('?3', '?5')}"
)
# The outcome of a step held by a node (``complete_step`` / ``fail_step``), only while the
# execution whose token is ?6 holds the run.
_OUTCOME_ON_NODE_SQL = (
    "UPDATE nodes SET step_status = ?1, step_result = ?2, step_finished_at = ?3 "
    f"WHERE run_id = ?4 AND step_key = ?5 AND {held_by('?4', '?6')}"
)


# -- the editor's views, built in SQL ------------------------------------------------------
# A 10,000-step run: SQLite writes each row's JSON object (C, no Python object per field);
# the objects are the ones ``store.run_views`` builds for the other backends.

VIEW_KINDS = "(" + ", ".join(f"'{kind}'" for kind in VIEW_STEP_KINDS) + ")"
# Each row's state and error come from ``run_views`` (``op_state``/``op_error``), as the
# other backends' do: one derivation (``OFFSET 0`` keeps each row's call to one).
_STEP_VIEW_SQL = f"""
SELECT json_object(
    'key', step_key, 'scope', scope, 'kind', kind, 'name', name, 'occurrence', occurrence,
    'label', name || ' #' || occurrence, 'state', state,
    'durationMs', CASE
        WHEN finished_at IS NOT NULL THEN max(0.0, finished_at - started_at) * 1000.0
        WHEN state = 'running' THEN max(0.0, :now - started_at) * 1000.0 END,
    'result', CASE WHEN state = 'completed' THEN op_short(result) ELSE '' END,
    'error', CASE WHEN state = 'failed' THEN op_error(result) ELSE '' END)
FROM (
    SELECT *, op_state(status, name, occurrence, result) AS state
    FROM run_steps WHERE run_id = :run_id AND kind IN {VIEW_KINDS}
    ORDER BY {CALL_ORDER} LIMIT -1 OFFSET 0)
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
    'id', id, 'seq', seq, 'kind', kind, 'name', name, 'status', op_node_status(status),
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
    FROM nodes_all WHERE session_id = :session_id AND (:node_id IS NULL OR id = :node_id)
    ORDER BY seq LIMIT -1 OFFSET 0)
"""


_GRAPH_NODE_SQL = _graph_node_sql(guarded=False)
_GRAPH_NODE_SQL_GUARDED = _graph_node_sql(guarded=True)


def _nodeless_params(run_id: str, token: str, call: StepCall, now: float) -> tuple[Any, ...]:
    """The parameters of ``_DISPATCH_NODELESS_SQL`` for ``call``."""
    return (
        run_id, call.key, call.scope, call.position, call.kind, call.name,
        call.occurrence, call.input_hash, now, token,
    )  # fmt: skip


class SqliteRunStore(RunStore):
    """Runs of one SQLite store root (thread-safe: each thread has its own connection)."""

    sql = RunSql.for_dialect(
        placeholder="?", null_safe_equal="IS", step_table=NODELESS, nodes_read="nodes_all"
    )

    backend: SqliteBackend

    def __init__(self, store: Any, durability: Durability) -> None:
        if not isinstance(store.backend, SqliteBackend):  # pragma: no cover - wiring error
            raise StoreError(f"{store.location}: not an SQLite store")
        super().__init__(store, durability)
        self._checkpointer = self.backend.checkpointer

    @property
    def source(self) -> Path:
        return self.store.root_path

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
        from openprogram.store.sqlite import holds_no_store

        if holds_no_store(path):  # an empty file: no runs, and it stays as it is
            return None
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
        with self.backend.transaction() as conn:  # folds the step log first
            try:
                return conn.execute(sql, params).rowcount
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
        cur = backend.step_cursor()  # one cursor per thread: no new object per statement
        conn = cur.connection
        execute = cur.execute
        now = time.time()
        dispatched = False
        appended = None
        try:
            execute("BEGIN IMMEDIATE")
            try:
                in_log = None  # the node completed in the step log by this transaction
                if done is not None:
                    if done.node_id is None:
                        execute(_COMPLETE_NODELESS_SQL, (done.text, now, run_id, done.key, token))
                    elif self._complete_on_node(cur, run_id, token, done, now):
                        in_log = done.node_id
                if call is not None:
                    if backend.step_log.due():
                        backend.step_log.fold(conn)
                        in_log = None
                    dispatched, appended = self._dispatch(
                        cur, run_id, token, call, node, now, in_log
                    )
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

    def _complete_on_node(
        self, cur: sqlite3.Cursor, run_id: str, token: str, done: StepDone, now: float
    ) -> bool:
        """Write the returned step ``done``'s result and node exit; whether its row was in
        the step log (``store.step_log``: proof of the lease and the unpinned head)."""
        backend = self.backend
        conn = cur.connection
        node_id = done.node_id
        assert node_id is not None
        backend.forget_open_node(node_id)
        d = done.duration
        finite = d.__class__ is float and d - d == 0
        d_json = repr(d) if finite else json.dumps(d)
        logged = backend.step_log.take_lid(node_id)
        params = (now, done.text, d_json, run_id, token, done.key, node_id)
        try:
            if logged is not None:
                lid, plain = logged
                if plain and finite:
                    sql, meta = _COMPLETE_IN_LOG_NEW_META_SQL, f'{{"duration_s":{d_json}}}'
                else:
                    sql, meta = _COMPLETE_IN_LOG_SQL, d_json
                if cur.execute(sql, (now, done.text, meta, lid, node_id)).rowcount:
                    return True
            if conn.execute(_COMPLETE_ON_NODE_SQL, params).rowcount == 0:
                backend.step_log.fold(conn)  # logged by another thread: in nodes now
                conn.execute(_COMPLETE_ON_NODE_SQL, params)
        except sqlite3.OperationalError as exc:
            if "json" not in str(exc).lower():
                raise
            backend.step_log.fold(conn)
            conn.execute(_COMPLETE_ON_NODE_PLAIN_SQL, params)
            backend.finish_node(conn, node_id, done.text, done.duration, now)
        return False

    def _dispatch(
        self,
        cur: sqlite3.Cursor,
        run_id: str,
        token: str,
        call: StepCall,
        node: StepNode | None,
        now: float,
        in_log: str | None = None,
    ) -> tuple[bool, tuple[str, int] | None]:
        """Record ``call`` dispatched (held by a new running node for ``node``), if the
        run may record it: one statement unless the key was recorded before or the
        session's last node is not the one this thread appended last. ``in_log``: the node
        this transaction completed in the step log; when it is the session's last node this
        thread appended (the predecessor), the lease and head checks are proven
        (``store.step_log``) and only the seq and the key are checked."""
        backend = self.backend
        conn = cur.connection
        step_log = backend.step_log
        if node is None:
            if step_log.may_log(run_id, call.key):
                params = _nodeless_params(run_id, token, call, now)
                if cur.execute(_DISPATCH_NODELESS_SQL, params).rowcount == 1:
                    return True, None
            return self._dispatch_slowly(conn, run_id, token, call, None, now)
        guess = backend.last_appended(node.session_id)
        if guess is not None and step_log.may_log(run_id, call.key):
            nid = new_id()
            params = (
                nid, node.session_id, guess[0], node.name, node.caller_id, guess[1],
                node.input_json, node.meta_json, now, run_id, call.key, call.scope,
                call.position, call.kind, call.occurrence, call.input_hash,
            )  # fmt: skip
            try:
                if in_log is not None and in_log == guess[1]:
                    cur.execute(_CONTINUE_IN_LOG_SQL, params)
                else:
                    cur.execute(_DISPATCH_TO_LOG_SQL, (*params, token))
                if cur.rowcount == 1:
                    seq = guess[0] + 1
                    backend.note_appended(node.session_id, seq, nid)
                    step_log.logged(
                        nid, cur.lastrowid or 0, run_id, call.key, node.meta_json == "{}"
                    )
                    return True, (nid, seq)
            except sqlite3.IntegrityError:
                pass  # another writer appended, or the key is recorded: decided below
        return self._dispatch_slowly(conn, run_id, token, call, node, now)

    def _dispatch_slowly(
        self,
        conn: sqlite3.Connection,
        run_id: str,
        token: str,
        call: StepCall,
        node: StepNode | None,
        now: float,
    ) -> tuple[bool, tuple[str, int] | None]:
        """The general dispatch: checks the lease, releases an earlier record of the key
        (a re-run records it anew), appends the node the general way (the step log folded
        first, so every statement below sees every node)."""
        self.backend.step_log.fold(conn)
        if conn.execute(_FENCE_SQL, (run_id, token)).fetchone() is None:
            return False, None
        conn.execute(_RELEASE_ON_NODE_SQL, (run_id, call.key))
        if node is None:
            conn.execute(_DISPATCH_NODELESS_SQL, _nodeless_params(run_id, token, call, now))
            return True, None
        conn.execute(_RELEASE_NODELESS_SQL, (run_id, call.key))
        appended = self.backend.append_json(
            node.session_id, "code", node.name, node.caller_id, node.input_json, None,
            "running", node.meta_json, now,
        )  # fmt: skip
        conn.execute(
            _HOLD_ON_NODE_SQL,
            (
                appended[0], run_id, call.key, call.scope, call.position, call.kind,
                call.occurrence, call.input_hash,
            ),
        )  # fmt: skip
        return True, appended

    # -- step records written outside a step's commit ----------------------------------
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
        """Record (commit) that a workflow/parallel/branch/step was called (a nodeless
        record; a node holding the key gives it up in the same transaction)."""
        with self.backend.transaction() as conn:
            try:
                conn.execute(_RELEASE_ON_NODE_SQL, (run_id, step_key))
                conn.execute(
                    self.sql.dispatch_step,
                    (run_id, step_key, scope, position, kind, name, occurrence, input_hash,
                     time.time()),
                )  # fmt: skip
            except sqlite3.Error as exc:
                raise self.backend._error(exc) from None

    def complete_step(self, run_id: str, step_key: str, result_json: str, *, token: str) -> None:
        params = ("completed", result_json, time.time(), run_id, step_key, token)
        if self._changed(_OUTCOME_ON_NODE_SQL, params) == 0:
            super().complete_step(run_id, step_key, result_json, token=token)

    def fail_step(self, run_id: str, step_key: str, error: str, *, token: str) -> None:
        params = ("failed", json.dumps(error), time.time(), run_id, step_key, token)
        if self._changed(_OUTCOME_ON_NODE_SQL, params) == 0:
            super().fail_step(run_id, step_key, error, token=token)

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
                    "SELECT id, status FROM runs WHERE queue = ? AND (status = 'queued' OR "
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
        run = self.get_run(row[0])
        return run and replace(run, taken_over=row[1] == RunStatus.RUNNING)

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
        context: StepContext,
        *,
        now: float,
        shorten: Callable[[str | None], str],
    ) -> list[str]:
        def state(status: str, name: str, occurrence: int, result: str | None) -> str:
            return step_state(status, name, int(occurrence), result, context)

        conn = self.backend.connection()  # each row's state and error: ``run_views``'
        conn.create_function("op_short", 1, shorten, deterministic=True)
        conn.create_function("op_state", 4, state, deterministic=True)
        conn.create_function("op_error", 1, lambda r: shorten(error_text(r)), deterministic=True)
        params = {"run_id": run_id, "now": now}
        try:
            rows = conn.execute(_STEP_VIEW_SQL, params).fetchall()
        except sqlite3.Error as exc:
            raise self.backend._error(exc) from None
        return [r[0] for r in rows]

    def graph_node_objects(
        self,
        session_id: str,
        *,
        limit: int,
        node_id: str | None = None,
        run_status: str | None = None,
    ) -> list[GraphNodeRow]:
        def status(stored: str) -> str:
            return node_status(stored, run_status)

        params = {"session_id": session_id, "node_id": node_id, "limit": max(1, int(limit))}
        conn = self.backend.connection()  # each node's shown status: ``run_views``'
        conn.create_function("op_node_status", 1, status, deterministic=True)
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
            "FROM nodes_all WHERE session_id = ? AND kind = 'llm'",
            (session_id,),
        ).fetchone()
        return int(row[0]), (int(row[1]), int(row[2]))
