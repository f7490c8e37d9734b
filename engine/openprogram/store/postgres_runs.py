"""The run store on PostgreSQL: the statements on ``runs`` / ``run_steps`` of this
backend's own (the shared ones are :class:`~openprogram.store.runs.RunSql`).

Same semantics as :mod:`openprogram.store.sqlite_runs`; a step's records and its DAG node
commit in one statement — one round trip, one commit (:meth:`PostgresRunStore.write_step`).
Durability: ``process``/``eager`` commit with ``synchronous_commit=off`` (a commit survives
a killed process, as SQLite's WAL+NORMAL does; a server crash may lose the last few
hundred milliseconds), ``power`` with ``synchronous_commit=on`` (every commit is flushed
to the server's WAL before it returns). Workers claim queued runs with
``FOR UPDATE SKIP LOCKED`` (:meth:`PostgresRunStore.claim_next`).
"""

from __future__ import annotations

import threading
import time
from contextlib import AbstractContextManager
from dataclasses import replace
from typing import Any

from openprogram.contract.runs import Durability, RunStatus
from openprogram.errors import StoreError
from openprogram.store.base import node_exit
from openprogram.store.ids import new_id
from openprogram.store.lease import Owner
from openprogram.store.pg_hot import HotStatement
from openprogram.store.postgres import APPEND_CTES, STEP_APPEND_INSERT, PostgresBackend
from openprogram.store.runs import (
    MAY_DISPATCH,
    REDISPATCH,
    RUN_COLUMNS,
    STEP_INSERT,
    RunRecord,
    RunSql,
    RunStore,
    StepCall,
    StepDone,
    StepNode,
    lease_lost_error,
    run_from_row,
)

# A returned step's node exit (in ``_STEP_SQL``, whose ``run`` says whether this execution
# holds the lease): ``completed`` with its output and duration; closed as an error
# (``LeaseLost``) instead when the execution lost the lease, as its step's result is not
# written then.
_HELD = "(SELECT held FROM run)"
FINISH_SQL = (
    "UPDATE nodes SET "
    + node_exit(
        "%(now)s",
        f"CASE WHEN {_HELD} THEN %(result)s "
        f"ELSE jsonb_build_object('error', {lease_lost_error('%(run)s')})::text END",
        f"CASE WHEN {_HELD} THEN 'completed' ELSE 'error' END",
        # the common case, metadata '{}', without parsing it (the same text either way)
        f"CASE WHEN NOT {_HELD} THEN (metadata::jsonb || jsonb_build_object('duration_s', "
        "%(duration)s::float8, 'error_type', 'LeaseLost'))::text "
        "WHEN metadata = '{}' THEN "
        "'{\"duration_s\": ' || to_jsonb(%(duration)s::float8)::text || '}' "
        "ELSE (metadata::jsonb || jsonb_build_object('duration_s', %(duration)s::float8))::text "
        "END",
    )
    + " WHERE id = %(done_node)s"
)

# A step's records in one statement, so one round trip and one commit (autocommit: no
# BEGIN/COMMIT messages): ``run`` — the run's row, read once: whether the execution asking
# holds its lease ``token`` and whether it may dispatch (a running run asked neither to
# pause nor to cancel); ``done`` — the previous step's result, written only by the
# holder, and ``fin`` its node's exit (an error when not: ``FINISH_SQL``); ``call`` —
# this step's dispatch, only when it may; then its running node, appended only when ``call`` wrote a row. Returns (dispatch rows
# written, node seq). ``{redispatch}``: empty in ``_STEP`` — a plain insert, the common
# case of a key never recorded — and ``REDISPATCH`` in ``_STEP_AGAIN``, which runs when the
# plain insert hit the key's record (a re-run of an uncertain or failed step), or at once
# for a step the run knows it recorded before (``StepCall.again``: no failed insert, no
# error line in the server's log). The plain insert costs the server less: no speculative
# insertion, its pre-check and its confirm record (6-13 µs of a step's 180-240,
# statement-level, interleaved).
_STEP_SQL = """
WITH run AS (
    SELECT owner_token = %(token)s AS held, {may}%(token)s AS may
    FROM runs WHERE id = %(run)s
), done AS (
    UPDATE run_steps SET status = 'completed', result = %(result)s, finished_at = %(now)s
    WHERE run_id = %(run)s AND step_key = %(done_key)s AND (SELECT held FROM run)
), fin AS ({finish}
), call AS (
    {insert}
    SELECT %(run)s, %(key)s, %(scope)s, %(pos)s, %(step_kind)s, %(name)s, %(occ)s, %(hash)s,
        'dispatched', NULL, %(now)s, NULL FROM run
    WHERE %(has_call)s AND run.may
    {redispatch}
    RETURNING 1
), {append}, node AS ({node})
SELECT (SELECT count(*) FROM call), (SELECT seq FROM node)
"""
_STEP_PARTS = {
    "finish": FINISH_SQL,
    "insert": STEP_INSERT,
    "may": MAY_DISPATCH,
    "append": APPEND_CTES.format(where="AND EXISTS (SELECT FROM call)"),
    "node": STEP_APPEND_INSERT,
}
# What a step's node always is: a running ``code`` node that becomes the session's head
# and follows the head before it (the general append binds these per node).
_STEP_NODE: dict[str, str | bool | None] = {
    "move": True, "kind": "code", "pred_default": True, "pred": None, "output": None,
    "status": "running",
}  # fmt: skip
_STEP = HotStatement(
    "openprogram_step",
    _STEP_SQL.format(redispatch="", **_STEP_PARTS),
    (int, int),
    _STEP_NODE,
)
_STEP_AGAIN = HotStatement(
    "openprogram_step_again",
    _STEP_SQL.format(redispatch=REDISPATCH, **_STEP_PARTS),
    (int, int),
    _STEP_NODE,
)
# The order ``write_step`` passes the step's parameters in: the statements' own (checked
# here, at import, so a change of the statement's text cannot pass them misplaced).
_STEP_KEYS = (
    "token", "run", "result", "now", "done_key", "duration", "done_node", "key", "scope",
    "pos", "step_kind", "name", "occ", "hash", "has_call", "nid", "sid", "caller", "input",
    "meta",
)  # fmt: skip
#: ``key`` to ``has_call`` of a write without a call.
_NO_CALL = (None, None, None, None, None, None, None, False)
if _STEP.keys != _STEP_KEYS or _STEP_AGAIN.keys != _STEP_KEYS:  # pragma: no cover
    raise ImportError(f"the step statement's parameters are {_STEP.keys}, not {_STEP_KEYS}")


#: The channel on which a queued run's queue is announced to idle workers (``NOTIFY``).
QUEUE_CHANNEL = "openprogram_queued"


class PostgresRunStore(RunStore):
    """Runs of one PostgreSQL database."""

    sql = RunSql.for_dialect(
        placeholder="%s", null_safe_equal="IS NOT DISTINCT FROM", code_point_order='"C"'
    )

    backend: PostgresBackend

    def __init__(self, store: Any, durability: Durability) -> None:
        if not isinstance(store.backend, PostgresBackend):  # pragma: no cover - wiring error
            raise StoreError(f"{store.location}: not a PostgreSQL store")
        super().__init__(store, durability)

    @classmethod
    def open(cls, url: str, *, durability: Durability) -> PostgresRunStore:
        from openprogram.store import SessionStore

        backend = PostgresBackend(url, synchronous_commit=durability is Durability.POWER)
        return cls(SessionStore(backend=backend), durability)

    @classmethod
    def open_readonly(cls, url: str, *, wait_s: float | None = None) -> PostgresRunStore | None:
        """For tooling: no migration; ``None`` when the database has no run tables.
        ``wait_s``: see :class:`PostgresBackend`; its connections probe a server cut off
        by the network (``postgres.KEEPALIVES``)."""
        from openprogram.store import SessionStore

        backend = PostgresBackend(
            url, max_size=2, migrate_schema=False, wait_s=wait_s, keepalives=True
        )
        try:
            found = backend.execute("SELECT to_regclass('runs'), to_regclass('run_steps')")
            if not found or None in found[0]:
                backend.close()
                return None
        except BaseException:
            backend.close()
            raise
        return cls(SessionStore(backend=backend), Durability.PROCESS)

    def pinned(self) -> AbstractContextManager[None]:
        return self.backend.pinned()

    def _q(self, sql: str, params: Any = ()) -> Any:
        return self.backend.execute(sql, params)

    def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        rows: list[Any] = self.backend.execute(sql, params)
        return rows

    def _row(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        rows = self.backend.execute(sql, params)
        return rows[0] if rows else None

    def _changed(self, sql: str, params: tuple[Any, ...] = ()) -> int:
        count: int = self.backend.execute(sql, params)
        return count

    def write_step(
        self,
        run_id: str,
        token: str,
        done: StepDone | None,
        call: StepCall | None,
        node: StepNode | None = None,
    ) -> tuple[bool, tuple[str, int] | None]:
        now = time.time()
        nid = new_id() if node is not None else None
        # in _STEP_KEYS order: a tuple, not a mapping to build and read at every step
        if done is None:
            done_key = result = done_node = None
            duration = 0.0
        else:
            done_key, result, done_node, duration = done.key, done.text, done.node_id, done.duration
        called = _NO_CALL if call is None else (
            call.key, call.scope, call.position, call.kind, call.name, call.occurrence,
            call.input_hash, True,
        )  # fmt: skip
        noded = (nid, None, None, None, "{}") if node is None else (
            nid, node.session_id, node.caller_id, node.input_json, node.meta_json,
        )  # fmt: skip
        rows = self.backend.execute_hot(
            _STEP_AGAIN if call is not None and call.again else _STEP,
            (token, run_id, result, now, done_key, duration, done_node, *called, *noded),
            again=_STEP_AGAIN,
        )
        dispatched, seq = rows[0]
        if not dispatched or node is None:
            return bool(dispatched), None
        if seq is None:
            raise StoreError(
                f"session {node.session_id!r} of run {run_id} does not exist in "
                f"{self.location}; its step '{node.name}' was recorded without its node"
            )
        assert nid is not None
        return True, (nid, seq)

    @property
    def source(self) -> str:
        return self.backend.url

    # -- runs ----------------------------------------------------------------------
    def announce_queued(self, run_id: str) -> None:
        # the queue read where it is sent: one statement, no row to bring back
        self._q(
            "SELECT pg_notify(%s, queue) FROM runs WHERE id = %s AND queue IS NOT NULL",
            (QUEUE_CHANNEL, run_id),
        )

    def watch_queue(
        self, queue: str, wake: threading.Event, stop: threading.Event
    ) -> threading.Thread | None:
        return self.backend.listen(QUEUE_CHANNEL, queue, wake, stop)

    def claim_next(
        self, queue: str, owner: Owner, lease_s: float, *, limit: int | None = None
    ) -> RunRecord | None:
        """Claim the oldest run of ``queue`` that is queued or whose lease expired
        (``FOR UPDATE SKIP LOCKED``: concurrent workers never wait for or take the same
        run). ``limit``: the queue's concurrency limit (live leases counted)."""
        now = time.time()
        with self.backend.transaction():
            if limit is not None:
                self._q("SELECT pg_advisory_xact_lock(hashtext(%s))", ("queue:" + queue,))
                (busy,) = self._q(
                    "SELECT COUNT(*) FROM runs WHERE queue = %s AND status = 'running' "
                    "AND lease_expires_at > %s",
                    (queue, now),
                )[0]
                if busy >= limit:
                    return None
            rows = self._q(
                "SELECT id, status FROM runs WHERE queue = %s AND (status = 'queued' OR "
                "(status = 'running' AND (lease_expires_at IS NULL OR lease_expires_at < %s))) "
                "ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED",
                (queue, now),
            )
            if not rows:
                return None
            taken_over = rows[0][1] == RunStatus.RUNNING
            rows = self._q(
                "UPDATE runs SET status = 'running', owner_token = %s, owner_pid = %s, "
                "owner_host = %s, owner_proc = %s, lease_expires_at = %s, updated_at = %s "
                f"WHERE id = %s RETURNING {RUN_COLUMNS}",
                (owner.token, owner.pid, owner.host, owner.proc, now + lease_s, now, rows[0][0]),
            )
        return replace(run_from_row(rows[0]), taken_over=taken_over)

    def last_activity(self, run_id: str) -> float:
        rows = self._q(
            "SELECT GREATEST(r.updated_at, COALESCE((SELECT MAX(COALESCE(finished_at, "
            "started_at)) FROM run_steps WHERE run_id = r.id), 0)) FROM runs r WHERE r.id = %s",
            (run_id,),
        )
        return float(rows[0][0]) if rows else 0.0

    # -- steps ---------------------------------------------------------------------
    # -- approvals -----------------------------------------------------------------
    # -- session-DAG reads -----------------------------------------------------------
    def llm_usage(self, session_id: str) -> tuple[int, tuple[int, int]]:
        rows = self._q(
            "SELECT COUNT(*), COALESCE(SUM(CASE WHEN i ~ '^[0-9]{1,18}$' THEN i::bigint END), 0), "
            "COALESCE(SUM(CASE WHEN o ~ '^[0-9]{1,18}$' THEN o::bigint END), 0) FROM ("
            "SELECT metadata::jsonb #>> '{usage,input_tokens}' AS i, "
            "metadata::jsonb #>> '{usage,output_tokens}' AS o "
            "FROM nodes WHERE session_id = %s AND kind = 'llm') AS usage",
            (session_id,),
        )
        row = rows[0]
        return int(row[0]), (int(row[1]), int(row[2]))
