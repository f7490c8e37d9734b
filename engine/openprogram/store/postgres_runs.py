"""The run store on PostgreSQL: every statement on ``runs`` / ``run_steps`` for this backend.

Same semantics as :mod:`openprogram.store.sqlite_runs`; a step's records and its DAG node
commit in one statement — one round trip, one commit (:meth:`PostgresRunStore.write_step`).
Durability: ``process``/``eager`` commit with ``synchronous_commit=off`` (a commit survives
a killed process, as SQLite's WAL+NORMAL does; a server crash may lose the last few
hundred milliseconds), ``power`` with ``synchronous_commit=on`` (every commit is flushed
to the server's WAL before it returns). Workers claim queued runs with
``FOR UPDATE SKIP LOCKED`` (:meth:`PostgresRunStore.claim_next`).
"""

from __future__ import annotations

import json
import time
from contextlib import AbstractContextManager
from typing import Any

from openprogram.contract.runs import Durability, RunStatus
from openprogram.errors import StoreError
from openprogram.store.ids import new_id
from openprogram.store.lease import Owner
from openprogram.store.postgres import (
    APPEND_CTES,
    APPEND_INSERT,
    FINISH_SQL,
    PostgresBackend,
)
from openprogram.store.runs import (
    REPLAY_COLUMNS,
    RUN_COLUMNS,
    STEP_COLUMNS,
    RunRecord,
    RunStore,
    StepCall,
    StepDone,
    StepNode,
    StepRecord,
    run_from_row,
)

_DISPATCH_SQL = (
    "INSERT INTO run_steps (run_id, step_key, scope, position, kind, name, occurrence, "
    "input_hash, status, result, started_at, finished_at) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, 'dispatched', NULL, %s, NULL) "
    "ON CONFLICT (run_id, step_key) DO UPDATE SET status = 'dispatched', result = NULL, "
    "started_at = excluded.started_at, finished_at = NULL"
)
_COMPLETE_SQL = (
    "UPDATE run_steps SET status = 'completed', result = %s, finished_at = %s "
    "WHERE run_id = %s AND step_key = %s"
)
# A step's records in one statement, so one round trip and one commit (autocommit: no
# BEGIN/COMMIT messages): ``done`` — the previous step's result, written only by the
# execution holding the lease ``token``, and ``fin`` its node's exit; ``call`` — this
# step's dispatch, only while that execution holds the lease of a running run asked
# neither to pause nor to cancel; then its running node, appended only when ``call``
# wrote a row. Returns (dispatch rows written, node seq, node predecessor).
_STEP_SQL = f"""
WITH done AS (
    UPDATE run_steps SET status = 'completed', result = %(result)s, finished_at = %(now)s
    WHERE run_id = %(run)s AND step_key = %(done_key)s
    AND (SELECT owner_token FROM runs WHERE id = %(run)s) = %(token)s
), fin AS ({FINISH_SQL}
), call AS (
    INSERT INTO run_steps (run_id, step_key, scope, position, kind, name, occurrence,
        input_hash, status, result, started_at, finished_at)
    SELECT %(run)s, %(key)s, %(scope)s, %(pos)s, %(step_kind)s, %(name)s, %(occ)s, %(hash)s,
        'dispatched', NULL, %(now)s, NULL FROM runs
    WHERE %(has_call)s AND id = %(run)s AND status = 'running' AND pause_requested = 0
        AND cancel_requested = 0 AND owner_token = %(token)s
    ON CONFLICT (run_id, step_key) DO UPDATE SET status = 'dispatched', result = NULL,
        started_at = excluded.started_at, finished_at = NULL
    RETURNING 1
), {APPEND_CTES.format(where="AND EXISTS (SELECT FROM call)")}, node AS ({APPEND_INSERT})
SELECT (SELECT count(*) FROM call), (SELECT seq FROM node), (SELECT predecessor_id FROM node)
"""
_RUN_PLACEHOLDERS = ", ".join(["%s"] * 25)


class PostgresRunStore(RunStore):
    """Runs of one PostgreSQL database."""

    def __init__(self, store: Any, durability: Durability) -> None:
        backend = store.backend
        if not isinstance(backend, PostgresBackend):  # pragma: no cover - wiring error
            raise StoreError(f"{store.location}: not a PostgreSQL store")
        self.store = store
        self.backend: PostgresBackend = backend
        self.location = backend.location
        self.durability = durability

    @classmethod
    def open(cls, url: str, *, durability: Durability) -> PostgresRunStore:
        from openprogram.store import SessionStore

        backend = PostgresBackend(url, synchronous_commit=durability is Durability.POWER)
        return cls(SessionStore(backend=backend), durability)

    @classmethod
    def open_readonly(cls, url: str) -> PostgresRunStore | None:
        """For tooling: no migration; ``None`` when the database has no run tables."""
        from openprogram.store import SessionStore

        backend = PostgresBackend(url, max_size=2, migrate_schema=False)
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

    def owns(self, writer: Any) -> bool:
        return getattr(writer, "_backend", None) is self.backend

    def _q(self, sql: str, params: Any = ()) -> Any:
        return self.backend.execute(sql, params)

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
        rows = self._q(
            _STEP_SQL,
            {
                "run": run_id, "token": token, "now": now,
                "done_key": None if done is None else done.key,
                "result": None if done is None else done.text,
                "done_node": None if done is None else done.node_id,
                "duration": 0.0 if done is None else done.duration,
                "has_call": call is not None,
                "key": None if call is None else call.key,
                "scope": None if call is None else call.scope,
                "pos": None if call is None else call.position,
                "step_kind": None if call is None else call.kind,
                "name": None if call is None else call.name,
                "occ": None if call is None else call.occurrence,
                "hash": None if call is None else call.input_hash,
                "sid": None if node is None else node.session_id,
                "nid": nid, "move": True, "kind": "code",
                "caller": None if node is None else node.caller_id,
                "pred_default": True, "pred": None,
                "input": None if node is None else node.input_json,
                "output": None, "status": "running",
                "meta": "{}" if node is None else node.meta_json,
            },
        )  # fmt: skip
        dispatched, seq, _ = rows[0]
        if not dispatched or node is None:
            return bool(dispatched), None
        if seq is None:
            raise StoreError(
                f"session {node.session_id!r} of run {run_id} does not exist in "
                f"{self.location}; its step '{node.name}' was recorded without its node"
            )
        assert nid is not None
        return True, (nid, seq)

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
        self._q(
            f"INSERT INTO runs ({RUN_COLUMNS}) VALUES ({_RUN_PLACEHOLDERS})",
            (
                run_id, entry, program_path, function_qualname, json.dumps(args),
                str(RunStatus.QUEUED if owner is None else RunStatus.RUNNING), str(policy),
                model, json.dumps(source_snapshot) if source_snapshot is not None else None,
                session_id, None, None, None, None, None, 0,
                None if owner is None else owner.pid, None if owner is None else owner.host,
                now, now, None if owner is None else owner.token,
                None if owner is None else owner.proc,
                None if owner is None else now + lease_s, 0, queue,
            ),
        )  # fmt: skip

    def get_run(self, run_id: str) -> RunRecord | None:
        rows = self._q(f"SELECT {RUN_COLUMNS} FROM runs WHERE id = %s", (run_id,))
        return run_from_row(rows[0]) if rows else None

    def list_runs(self, status: str | None = None) -> list[RunRecord]:
        if status is None:
            rows = self._q(f"SELECT {RUN_COLUMNS} FROM runs ORDER BY created_at")
        else:
            rows = self._q(
                f"SELECT {RUN_COLUMNS} FROM runs WHERE status = %s ORDER BY created_at",
                (str(status),),
            )
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
        count = self._q(
            "UPDATE runs SET status = 'running', owner_token = %s, owner_pid = %s, "
            "owner_host = %s, owner_proc = %s, lease_expires_at = %s, pause_requested = 0, "
            "cancel_requested = 0, updated_at = %s "
            "WHERE id = %s AND status = %s AND owner_token IS NOT DISTINCT FROM %s",
            (
                owner.token, owner.pid, owner.host, owner.proc, now + lease_s, now, run_id,
                str(expected_status), expected_token,
            ),
        )  # fmt: skip
        return bool(count == 1)

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
                "SELECT id FROM runs WHERE queue = %s AND (status = 'queued' OR "
                "(status = 'running' AND (lease_expires_at IS NULL OR lease_expires_at < %s))) "
                "ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED",
                (queue, now),
            )
            if not rows:
                return None
            rows = self._q(
                "UPDATE runs SET status = 'running', owner_token = %s, owner_pid = %s, "
                "owner_host = %s, owner_proc = %s, lease_expires_at = %s, updated_at = %s "
                f"WHERE id = %s RETURNING {RUN_COLUMNS}",
                (owner.token, owner.pid, owner.host, owner.proc, now + lease_s, now, rows[0][0]),
            )
        return run_from_row(rows[0])

    def count_unfinished(self, queue: str) -> int:
        rows = self._q(
            "SELECT COUNT(*) FROM runs WHERE queue = %s AND status IN ('queued', 'running')",
            (queue,),
        )
        return int(rows[0][0])

    def renew_lease(self, run_id: str, token: str, lease_s: float) -> bool:
        count = self._q(
            "UPDATE runs SET lease_expires_at = %s WHERE id = %s AND owner_token = %s "
            "AND status = 'running'",
            (time.time() + lease_s, run_id, token),
        )
        return bool(count == 1)

    def release_run(self, run_id: str, token: str, *, requeue: bool) -> bool:
        count = self._q(
            "UPDATE runs SET status = CASE WHEN %s THEN 'queued' ELSE status END, "
            "lease_expires_at = 0, updated_at = %s "
            "WHERE id = %s AND owner_token = %s AND status = 'running'",
            (requeue, time.time(), run_id, token),
        )
        return bool(count == 1)

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
        count = self._q(
            "UPDATE runs SET status = %s, result = %s, error = %s, paused_step = %s, "
            "paused_occurrence = %s, pause_reason = %s, pause_requested = 0, "
            "cancel_requested = 0, lease_expires_at = NULL, updated_at = %s "
            "WHERE id = %s AND status = 'running' AND owner_token IS NOT DISTINCT FROM %s",
            (
                str(status), json.dumps(result) if status == "completed" else None, error,
                paused_step, paused_occurrence,
                None if pause_reason is None else str(pause_reason), time.time(), run_id, token,
            ),
        )  # fmt: skip
        if count == 1:
            return status
        run = self.get_run(run_id)
        return run.status if run else status

    def cancel_run(
        self, run_id: str, *, expected_status: str, expected_token: str | None, error: str
    ) -> bool:
        count = self._q(
            "UPDATE runs SET status = 'cancelled', error = %s, pause_requested = 0, "
            "cancel_requested = 0, lease_expires_at = NULL, updated_at = %s "
            "WHERE id = %s AND status = %s AND owner_token IS NOT DISTINCT FROM %s",
            (error, time.time(), run_id, str(expected_status), expected_token),
        )
        return bool(count == 1)

    def request_cancel(self, run_id: str) -> None:
        self._q("UPDATE runs SET cancel_requested = 1 WHERE id = %s", (run_id,))

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
            "UPDATE runs SET status = 'paused', pause_reason = %s, error = %s, "
            "paused_step = COALESCE(%s, paused_step), "
            "paused_occurrence = COALESCE(%s, paused_occurrence), updated_at = %s WHERE id = %s"
        )
        params: tuple[Any, ...] = (str(reason), message, step, occurrence, time.time(), run_id)
        if only_if_running:
            sql += " AND status = 'running' AND owner_token IS NOT DISTINCT FROM %s"
            params += (token,)
        return bool(self._q(sql, params) == 1)

    def request_pause(self, run_id: str) -> None:
        self._q("UPDATE runs SET pause_requested = 1 WHERE id = %s", (run_id,))

    def control_state(self, run_id: str) -> tuple[str, bool, bool, str | None]:
        rows = self._q(
            "SELECT status, pause_requested, cancel_requested, owner_token FROM runs WHERE id = %s",
            (run_id,),
        )
        if not rows:
            return RunStatus.CANCELLED, False, False, None
        row = rows[0]
        return row[0], bool(row[1]), bool(row[2]), row[3]

    def update_snapshot(self, run_id: str, snapshot: dict[str, Any]) -> None:
        self._q(
            "UPDATE runs SET source_snapshot = %s WHERE id = %s", (json.dumps(snapshot), run_id)
        )

    def last_activity(self, run_id: str) -> float:
        rows = self._q(
            "SELECT GREATEST(r.updated_at, COALESCE((SELECT MAX(COALESCE(finished_at, "
            "started_at)) FROM run_steps WHERE run_id = r.id), 0)) FROM runs r WHERE r.id = %s",
            (run_id,),
        )
        return float(rows[0][0]) if rows else 0.0

    # -- steps ---------------------------------------------------------------------
    def load_steps(self, run_id: str) -> list[StepRecord]:
        rows = self._q(
            f"SELECT {STEP_COLUMNS} FROM run_steps WHERE run_id = %s ORDER BY scope, position",
            (run_id,),
        )
        return [StepRecord(*r) for r in rows]

    def replay_steps(self, run_id: str) -> list[StepRecord]:
        rows = self._q(f"SELECT {REPLAY_COLUMNS} FROM run_steps WHERE run_id = %s", (run_id,))
        return [StepRecord(*r) for r in rows]

    def top_level_steps(self, run_id: str) -> list[StepRecord]:
        rows = self._q(
            f"SELECT {STEP_COLUMNS} FROM run_steps WHERE run_id = %s AND scope = '' "
            "ORDER BY position",
            (run_id,),
        )
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
        self._q(
            _DISPATCH_SQL,
            (run_id, step_key, scope, position, kind, name, occurrence, input_hash, time.time()),
        )

    def complete_step(self, run_id: str, step_key: str, result_json: str) -> None:
        self._q(_COMPLETE_SQL, (result_json, time.time(), run_id, step_key))

    def fail_step(self, run_id: str, step_key: str, error: str) -> None:
        self._q(
            "UPDATE run_steps SET status = 'failed', result = %s, finished_at = %s "
            "WHERE run_id = %s AND step_key = %s",
            (json.dumps(error), time.time(), run_id, step_key),
        )

    def count_steps(self, run_id: str, status: str | None = None) -> int:
        if status is None:
            rows = self._q(
                "SELECT COUNT(*) FROM run_steps WHERE run_id = %s AND kind = 'step'", (run_id,)
            )
        else:
            rows = self._q(
                "SELECT COUNT(*) FROM run_steps WHERE run_id = %s AND kind = 'step' "
                "AND status = %s",
                (run_id, status),
            )
        return int(rows[0][0])

    # -- approvals -----------------------------------------------------------------
    def request_approval(self, run_id: str, key: str, tool: str, arguments_json: str) -> None:
        self._q(
            "INSERT INTO run_steps (run_id, step_key, scope, position, kind, name, occurrence, "
            "input_hash, status, result, started_at, finished_at) VALUES "
            "(%s, %s, 'approvals', 0, 'approval', %s, 0, %s, 'requested', %s, %s, NULL) "
            "ON CONFLICT (run_id, step_key) DO NOTHING",
            (run_id, key, tool, key, arguments_json, time.time()),
        )

    def approval_status(self, run_id: str, key: str) -> str | None:
        rows = self._q(
            "SELECT status FROM run_steps WHERE run_id = %s AND step_key = %s "
            "AND kind = 'approval'",
            (run_id, key),
        )
        return str(rows[0][0]) if rows else None

    def pending_approval(self, run_id: str) -> tuple[str, str, str] | None:
        rows = self._q(
            "SELECT step_key, name, result FROM run_steps WHERE run_id = %s AND "
            "kind = 'approval' AND status = 'requested' ORDER BY started_at LIMIT 1",
            (run_id,),
        )
        return (str(rows[0][0]), str(rows[0][1]), str(rows[0][2])) if rows else None

    def decide_approval(self, run_id: str, key: str, decision: str) -> bool:
        count = self._q(
            "UPDATE run_steps SET status = %s, finished_at = %s WHERE run_id = %s AND "
            "step_key = %s AND kind = 'approval' AND status = 'requested'",
            (str(decision), time.time(), run_id, key),
        )
        return bool(count == 1)

    # -- session-DAG reads -----------------------------------------------------------
    def session_node_rows(self, session_id: str) -> list[tuple[Any, ...]]:
        rows = self._q(
            "SELECT id, seq, kind, name, caller_id, predecessor_id, input, output, status, "
            "metadata, created_at FROM nodes WHERE session_id = %s ORDER BY seq",
            (session_id,),
        )
        return [tuple(r) for r in rows]

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
