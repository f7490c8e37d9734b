"""The run store: every read and write of the ``runs`` / ``run_steps`` tables.

:class:`RunStore` runs the statements both database engines share (:class:`RunSql`,
written once, adapted to each engine's parameter style when its class is defined) through
three primitives each engine implements; one subclass per engine holds the statements
that differ (SQLite: :mod:`openprogram.store.sqlite_runs`, PostgreSQL:
:mod:`openprogram.store.postgres_runs`). The durable layer
(``openprogram.durable``), the CLI, the linter's OP209 reader and the language server
call only this interface. Open one with :func:`open_run_store` (read-write, migrates)
or :func:`read_run_store` (tooling: read-only, ``None`` when there is no store).

Tables (created by the store's migrations, ``openprogram.store.migrations``):

``runs`` — one row per run (a task):

=================  =====================================================================
column             meaning
=================  =====================================================================
id                 run id (also the id of the run's session in the session DAG)
entry              the entry reference as given: ``path/to/file.py:ENTRY`` or ``pkg.mod:ENTRY``
program_path       absolute path of the Program file (NULL when unknown)
function_qualname  qualified name of the resumable function (``report``, ``Reporter.report``)
args               JSON object of the keyword arguments
status             a :class:`~openprogram.contract.runs.RunStatus`
policy             a :class:`~openprogram.contract.runs.Policy`
model              model string given at run time (NULL: autodetected lazily)
source_snapshot    JSON: saved source of the function and its same-module helpers
session_id         session of the run in the DAG (same store)
result             JSON result of a completed run
error              one-line error of a failed/paused run
paused_step        step name a paused run stopped at (NULL otherwise)
paused_occurrence  occurrence of that step name (0-based)
pause_reason       a :class:`~openprogram.contract.runs.PauseReason`
pause_requested    1 when a pause was requested for a running run (checked between steps)
owner_pid          pid of the process executing the run
owner_host         host name of that process
owner_token        random token of the execution holding the lease (compare-and-set)
owner_proc         ``boot_id/pidns/pid/start`` of that process (``store.lease``)
lease_expires_at   epoch seconds when the lease ends unless its heartbeat renews it
cancel_requested   1 when a cancel waits for the executing process (its next step)
queue              queue of a run submitted for workers (NULL: run in-process)
created_at         epoch seconds
updated_at         epoch seconds of the last state change
=================  =====================================================================

``run_steps`` — one row per step identity of a run, written when the step is **called**:

=================  =====================================================================
run_id             the run
step_key           scope path + name + occurrence, e.g. ``fetch#0``, ``sub#0/fetch#1``,
                   ``parallel#0/left/fetch#0``
scope              key of the enclosing workflow / parallel branch (``""`` at top level)
position           0-based call order inside ``scope``
kind               ``step`` | ``workflow`` | ``parallel`` | ``branch`` | ``approval`` (one
                   tool call awaiting/decided approval; scope ``approvals``, status
                   ``requested`` | ``approved`` | ``denied``, result: its JSON arguments)
name               the step name as written in the Program
occurrence         0-based count of earlier calls of ``name`` in ``scope``
input_hash         sha256 of the canonical JSON of the step's arguments
status             ``dispatched`` (called, no result saved) | ``completed`` | ``failed``
result             JSON result (completed) ; error text (failed)
started_at         epoch seconds when dispatched
finished_at        epoch seconds when completed/failed
=================  =====================================================================

On SQLite (schema v6) ``run_steps`` is a view: the record of a step that has a session-DAG
node lives in that node's row (``nodes.run_id``, ``step_key`` and ``step_*``; its name and
start are the node's ``name`` and ``created_at``), the others in ``run_steps_nodeless``
(see :mod:`openprogram.store.migrations`). Inserts, updates and deletes on the view reach
the right table; PostgreSQL keeps the one table.

A ``dispatched`` row of kind ``step`` found on resume is *uncertain*: the operation may or
may not have happened, so the run pauses naming it until it is re-run explicitly.
"""

from __future__ import annotations

import contextvars
import json
import os
import sys
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, fields, replace
from typing import Any, ClassVar

from openprogram.contract.runs import (
    DURABILITY_MODES,
    Durability,
    RunStatus,
    lease_lost_message,
    program_file,
)
from openprogram.errors import StoreError
from openprogram.store.lease import Owner, is_interrupted
from openprogram.store.run_views import (
    VIEW_STEP_KINDS,
    GraphNodeRow,
    StepContext,
    graph_node_row,
    step_view_object,
)

__all__ = [
    "GraphNodeRow",
    "RunRecord",
    "RunStore",
    "StepCall",
    "StepDone",
    "StepNode",
    "StepRecord",
    "open_run_store",
    "read_run_store",
]


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
    owner_token: str | None = None
    owner_proc: str | None = None
    lease_expires_at: float | None = None
    cancel_requested: bool = False
    queue: str | None = None
    #: Not a column: set on the record :meth:`RunStore.claim_next` returns when it took
    #: the run over from an execution whose lease expired (an interrupted run), not from
    #: its queue. Such an execution is a resume (:func:`~openprogram.durable.policy.policy_for_resume`).
    taken_over: bool = False

    def to_json(self) -> dict[str, Any]:
        """Summary used by ``openprogram runs --json``."""
        return {
            "run_id": self.id,
            "entry": self.entry,
            "function": self.function_qualname,
            "status": self.status,
            "policy": self.policy,
            "paused_step": self.paused_step,
            "paused_occurrence": self.paused_occurrence,
            "pause_reason": self.pause_reason,
            "error": self.error,
            "queue": self.queue,
            "cancel_requested": self.cancel_requested,
            "pause_requested": self.pause_requested,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }

    @property
    def entry_resumable(self) -> bool:
        """Whether the run's entry is resumable: a run of such an entry saves its source
        when it is started or submitted (``runner._prepare``), a run of an entry that is
        not saves none (it cannot pause; resuming it fails it)."""
        return self.source_snapshot is not None

    @property
    def interrupted(self) -> bool:
        """``running`` with no live process holding its lease, now
        (:func:`~openprogram.store.lease.is_interrupted`)."""
        return is_interrupted(self)

    def is_of_program(self, program_path: str) -> bool:
        """Whether this run executes the Program file ``program_path``."""
        return _same_file(program_file(self.program_path, self.entry), program_path)


def _same_file(path: str, program_path: str) -> bool:
    """Whether the recorded Program ``path`` ('' : none) is the file ``program_path``
    (their real paths are equal): the one rule of :meth:`RunRecord.is_of_program` and
    :meth:`RunStore.runs_of_program`."""
    if not path:
        return False
    try:
        return os.path.realpath(path) == os.path.realpath(program_path)
    except OSError:  # pragma: no cover - realpath of a str does not touch the disk
        return False


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
    started_at: float | None = None
    finished_at: float | None = None

    @property
    def uncertain(self) -> bool:
        """A step that was started but whose result was not saved: it may or may not have
        taken effect (a resume pauses on it unless asked to re-run it)."""
        return self.kind == "step" and self.status == "dispatched"


#: A run's steps in call order — by start time, then scope and position (parallel scopes
#: interleave by time) — as every backend's ``ORDER BY`` writes it; :func:`call_order_key`
#: is the same order in Python.
CALL_ORDER = "started_at, scope, position"


def call_order_key(step: StepRecord) -> tuple[float, str, int]:
    """The sort key of :data:`CALL_ORDER` for one step record."""
    return (step.started_at or 0.0, step.scope, step.position)


#: Column order of :class:`RunRecord` in every backend's ``SELECT``.
RUN_COLUMNS = (
    "id, entry, program_path, function_qualname, args, status, policy, model, "
    "source_snapshot, session_id, result, error, paused_step, paused_occurrence, "
    "pause_reason, pause_requested, owner_pid, owner_host, created_at, updated_at, "
    "owner_token, owner_proc, lease_expires_at, cancel_requested, queue"
)
STEP_COLUMNS = (
    "step_key, scope, position, kind, name, occurrence, input_hash, status, result, "
    "started_at, finished_at"
)
#: The columns of :data:`STEP_COLUMNS` an execution replays (no timestamps).
REPLAY_COLUMNS = "step_key, scope, position, kind, name, occurrence, input_hash, status, result"


def step_insert(table: str = "run_steps") -> str:
    """The head of every insert of a step record into ``table`` (all columns, in order)."""
    return (
        f"INSERT INTO {table} (run_id, step_key, scope, position, kind, name, occurrence, "
        "input_hash, status, result, started_at, finished_at) "
    )


#: :func:`step_insert` into ``run_steps``.
STEP_INSERT = step_insert()
#: Kinds of the records an approval keeps for itself (scope ``approvals``, status ``kept``
#: until used): ``approval_loops`` where the tool loops stood at an approval pause,
#: ``approval_result`` the result of an approved call that ran. Not steps: the step
#: listings leave them out.
APPROVAL_NOTE_KINDS = "('approval_loops', 'approval_result')"


def held_by(run: str, token: str) -> str:
    """The condition that the run ``run`` is still held by the execution whose lease token
    is ``token`` (two SQL parameters): a step's outcome is written only while it holds."""
    return f"(SELECT owner_token FROM runs WHERE id = {run}) = {token}"


def lease_lost_error(run: str) -> str:
    """An SQL text expression, on either engine: the error of a step's node whose step
    returned after its execution lost the run's lease (``run``: the run id's SQL
    parameter), as :func:`~openprogram.scope.exit_record` writes a ``LeaseLost``. Such a
    node is closed as an error in the statement that refuses the step's result."""
    before, after = lease_lost_message("\0").split("\0")
    quoted = ["'" + text.replace("'", "''") + "'" for text in ("LeaseLost: " + before, after)]
    return f"{quoted[0]} || {run} || {quoted[1]}"


#: The run may record a step: the condition on its ``runs`` row, followed by the lease
#: token of the execution asking (each backend appends its parameter).
MAY_DISPATCH = (
    "status = 'running' AND pause_requested = 0 AND cancel_requested = 0 AND owner_token = "
)
#: A dispatch of a step already recorded (a re-run) starts it again.
REDISPATCH = (
    "ON CONFLICT (run_id, step_key) DO UPDATE SET status = 'dispatched', result = NULL, "
    "started_at = excluded.started_at, finished_at = NULL"
)
_SET_PAUSED = (
    "UPDATE runs SET status = 'paused', pause_reason = ?, error = ?, "
    "paused_step = COALESCE(?, paused_step), "
    "paused_occurrence = COALESCE(?, paused_occurrence), updated_at = ? WHERE id = ? "
    "AND status = 'running' AND owner_token IS ?"
)
#: The error of a call whose process ended before it returned (killed, crashed, its
#: machine lost), recorded when another execution takes the run over.
INTERRUPTED_CALL = (
    "interrupted: the process executing this call ended (killed, crashed or its machine "
    "lost) before the call returned"
)
_COUNT_STEPS = "SELECT COUNT(*) FROM run_steps WHERE run_id = ? AND kind = 'step'"
#: The ids from a string up to (not including) another, compared as their characters' code
#: points whatever the database's collation (a linguistic one orders ``job_2`` after
#: ``jobs`` and may ignore punctuation): SQLite's ``BINARY``, the collation of its id
#: index; PostgreSQL's ``"C"`` (:meth:`RunSql.for_dialect`).
_ID_FROM_TO = "id COLLATE BINARY >= ? AND id COLLATE BINARY < ?"


#: the statuses a run never leaves, as an SQL list
_FINISHED = (
    f"('{RunStatus.COMPLETED.value}', '{RunStatus.FAILED.value}', '{RunStatus.CANCELLED.value}')"
)


@dataclass(frozen=True)
class RunSql:
    """The statements on the run tables that every SQL backend runs alike, written once:
    ``?`` is a parameter and ``IS ?`` a null-safe comparison with one. Each backend class
    takes its copy from :meth:`for_dialect` once, when it is defined; what differs
    between the engines (claiming from a queue, JSON functions, the step write) stays in
    the backend's own module."""

    insert_run: str = (
        f"INSERT INTO runs ({RUN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
        "NULL, NULL, NULL, NULL, NULL, 0, ?, ?, ?, ?, ?, ?, ?, 0, ?)"
    )
    get_run: str = f"SELECT {RUN_COLUMNS} FROM runs WHERE id = ?"
    list_runs: str = f"SELECT {RUN_COLUMNS} FROM runs ORDER BY created_at"
    list_runs_in: str = f"SELECT {RUN_COLUMNS} FROM runs WHERE status = ? ORDER BY created_at"
    # the runs of one Program file: the spellings of its path first (few), then its runs
    program_paths: str = "SELECT DISTINCT program_path FROM runs WHERE program_path <> ''"
    entries_without_program: str = (
        "SELECT DISTINCT entry FROM runs WHERE program_path IS NULL OR program_path = ''"
    )
    runs_of_program_path: str = (
        f"SELECT {RUN_COLUMNS} FROM runs WHERE program_path = ? ORDER BY created_at"
    )
    runs_of_entry_without_program: str = (
        f"SELECT {RUN_COLUMNS} FROM runs WHERE (program_path IS NULL OR program_path = '') "
        "AND entry = ? ORDER BY created_at"
    )
    # the runs' view: every unfinished run, the newest finished ones, how many finished
    unfinished_runs: str = (
        f"SELECT {RUN_COLUMNS} FROM runs WHERE status NOT IN {_FINISHED} "
        "ORDER BY created_at DESC, id"
    )
    newest_finished_runs: str = (
        f"SELECT {RUN_COLUMNS} FROM runs WHERE status IN {_FINISHED} "
        "ORDER BY created_at DESC, id LIMIT ?"
    )
    count_finished_runs: str = f"SELECT COUNT(*) FROM runs WHERE status IN {_FINISHED}"
    # the same of some Program files: how many finished runs each entry has (few rows),
    # then the newest finished ones of each entry that belongs
    count_finished_by_entry: str = (
        f"SELECT program_path, entry, COUNT(*) FROM runs WHERE status IN {_FINISHED} "
        "GROUP BY program_path, entry"
    )
    # (``program_path = ?``, not ``IS ?``: PostgreSQL's ``IS NOT DISTINCT FROM`` uses no
    # index; a NULL path has its own statement)
    newest_finished_runs_of_entry: str = (
        f"SELECT {RUN_COLUMNS} FROM runs WHERE program_path = ? AND entry = ? "
        f"AND status IN {_FINISHED} ORDER BY created_at DESC, id LIMIT ?"
    )
    newest_finished_runs_of_pathless_entry: str = (
        f"SELECT {RUN_COLUMNS} FROM runs WHERE program_path IS NULL AND entry = ? "
        f"AND status IN {_FINISHED} ORDER BY created_at DESC, id LIMIT ?"
    )
    # parameters: the prefix, the first string after it (``_after_prefix``), how many
    runs_by_id_prefix: str = (
        f"SELECT {RUN_COLUMNS} FROM runs WHERE {_ID_FROM_TO} ORDER BY created_at DESC, id LIMIT ?"
    )
    count_runs_by_id_prefix: str = f"SELECT COUNT(*) FROM runs WHERE {_ID_FROM_TO}"
    claim_run: str = (
        "UPDATE runs SET status = 'running', owner_token = ?, owner_pid = ?, "
        "owner_host = ?, owner_proc = ?, lease_expires_at = ?, pause_requested = 0, "
        "cancel_requested = 0, updated_at = ? "
        "WHERE id = ? AND status = ? AND owner_token IS ?"
    )
    count_unfinished: str = (
        "SELECT COUNT(*) FROM runs WHERE queue = ? AND status IN ('queued', 'running')"
    )
    renew_lease: str = (
        "UPDATE runs SET lease_expires_at = ? WHERE id = ? AND owner_token = ? "
        "AND status = 'running'"
    )
    release_run: str = (
        "UPDATE runs SET status = CASE WHEN ? THEN 'queued' ELSE status END, "
        "lease_expires_at = 0, updated_at = ? "
        "WHERE id = ? AND owner_token = ? AND status = 'running'"
    )
    # parameters: queue, policy, model (NULL: keep), now, run, the token of the holder
    requeue_run: str = (
        "UPDATE runs SET status = 'queued', queue = ?, policy = ?, model = COALESCE(?, model), "
        "result = NULL, error = NULL, paused_step = NULL, paused_occurrence = NULL, "
        "pause_reason = NULL, pause_requested = 0, cancel_requested = 0, "
        "lease_expires_at = NULL, updated_at = ? "
        "WHERE id = ? AND owner_token = ? AND status = 'running'"
    )
    finish_run: str = (
        "UPDATE runs SET status = ?, result = ?, error = ?, paused_step = ?, "
        "paused_occurrence = ?, pause_reason = ?, pause_requested = 0, "
        "cancel_requested = 0, lease_expires_at = NULL, updated_at = ? "
        "WHERE id = ? AND status = 'running' AND owner_token IS ?"
    )
    # a cancelled run is paused nowhere: its pause (step, reason) goes, as when the
    # process executing it records the cancel (``finish_run``)
    cancel_run: str = (
        "UPDATE runs SET status = 'cancelled', error = ?, paused_step = NULL, "
        "paused_occurrence = NULL, pause_reason = NULL, pause_requested = 0, "
        "cancel_requested = 0, lease_expires_at = NULL, updated_at = ? "
        "WHERE id = ? AND status = ? AND owner_token IS ?"
    )
    request_cancel: str = (
        "UPDATE runs SET cancel_requested = 1 WHERE id = ? AND status = 'running' "
        "AND owner_token IS ?"
    )
    close_interrupted_nodes: str = (
        "UPDATE nodes SET status = 'error', output = ?, updated_at = ? "
        "WHERE status = 'running' AND session_id = (SELECT session_id FROM runs "
        "WHERE id = ? AND status = 'running' AND owner_token = ?)"
    )
    set_paused: str = _SET_PAUSED
    # parameters: the new reason, its message, now, run, the reason it must have now
    repause: str = (
        "UPDATE runs SET pause_reason = ?, error = ?, updated_at = ? "
        "WHERE id = ? AND status = 'paused' AND pause_reason = ?"
    )
    request_pause: str = (
        "UPDATE runs SET pause_requested = 1 WHERE id = ? AND status = 'running' "
        "AND owner_token IS ?"
    )
    control_state: str = (
        "SELECT status, pause_requested, cancel_requested, owner_token FROM runs WHERE id = ?"
    )
    update_snapshot: str = "UPDATE runs SET source_snapshot = ? WHERE id = ?"
    load_steps: str = (
        f"SELECT {STEP_COLUMNS} FROM run_steps WHERE run_id = ? AND kind NOT IN "
        f"{APPROVAL_NOTE_KINDS} ORDER BY scope, position"
    )
    replay_steps: str = f"SELECT {REPLAY_COLUMNS} FROM run_steps WHERE run_id = ?"
    top_level_steps: str = (
        f"SELECT {STEP_COLUMNS} FROM run_steps WHERE run_id = ? AND scope = '' ORDER BY position"
    )
    dispatch_step: str = (
        STEP_INSERT + "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'dispatched', NULL, ?, NULL) " + REDISPATCH
    )
    # parameters: result, finished, run, key, run, the token of the execution writing
    complete_step: str = (
        "UPDATE run_steps SET status = 'completed', result = ?, finished_at = ? "
        f"WHERE run_id = ? AND step_key = ? AND {held_by('?', '?')}"
    )
    fail_step: str = (
        "UPDATE run_steps SET status = 'failed', result = ?, finished_at = ? "
        f"WHERE run_id = ? AND step_key = ? AND {held_by('?', '?')}"
    )
    count_steps: str = _COUNT_STEPS
    count_steps_in: str = _COUNT_STEPS + " AND status = ?"
    request_approval: str = (
        STEP_INSERT + "VALUES "
        "(?, ?, 'approvals', 0, 'approval', ?, ?, ?, 'requested', ?, ?, NULL) "
        "ON CONFLICT (run_id, step_key) DO NOTHING"
    )
    latest_approval: str = (
        "SELECT step_key, status, occurrence FROM run_steps WHERE run_id = ? AND "
        "kind = 'approval' AND input_hash = ? ORDER BY occurrence DESC LIMIT 1"
    )
    consume_approval: str = (
        "UPDATE run_steps SET status = 'executed', finished_at = ? WHERE run_id = ? AND "
        "step_key = ? AND kind = 'approval' AND status = 'approved'"
    )
    keep_approval_note: str = (
        STEP_INSERT + "VALUES (?, ?, 'approvals', 0, ?, ?, 0, ?, 'kept', ?, ?, NULL) "
        "ON CONFLICT (run_id, step_key) DO UPDATE SET status = 'kept', "
        "result = excluded.result, started_at = excluded.started_at"
    )
    approval_note: str = (
        "SELECT result FROM run_steps WHERE run_id = ? AND step_key = ? AND kind = ? "
        "AND status = 'kept'"
    )
    drop_approval_note: str = (
        "UPDATE run_steps SET status = 'taken', result = NULL WHERE run_id = ? AND "
        "step_key = ? AND kind = ? AND status = 'kept'"
    )
    pending_approval: str = (
        "SELECT step_key, name, result FROM run_steps WHERE run_id = ? AND "
        "kind = 'approval' AND status = 'requested' ORDER BY started_at LIMIT 1"
    )
    decide_approval: str = (
        "UPDATE run_steps SET status = ?, finished_at = ? WHERE run_id = ? AND "
        "step_key = ? AND kind = 'approval' AND status = 'requested'"
    )
    session_node_rows: str = (
        "SELECT id, seq, kind, name, caller_id, predecessor_id, input, output, status, "
        "metadata, created_at FROM nodes WHERE session_id = ? ORDER BY seq"
    )

    @classmethod
    def for_dialect(
        cls,
        *,
        placeholder: str,
        null_safe_equal: str,
        step_table: str = "run_steps",
        nodes_read: str = "nodes",
        code_point_order: str = "BINARY",
    ) -> RunSql:
        """The statements with ``placeholder`` for each ``?`` and ``null_safe_equal`` for
        the ``IS`` before one (PostgreSQL: ``%s`` and ``IS NOT DISTINCT FROM``); inserts
        and updates of step records go to ``step_table`` (SQLite: the records without a
        node, ``run_steps_nodeless``; reads keep ``run_steps``, its view of all records);
        reads of nodes read ``nodes_read`` (SQLite: ``nodes_all``, with the step log);
        ``code_point_order`` is the collation that compares text as code points
        (PostgreSQL: ``"C"``)."""
        written = cls()

        def adapt(sql: str) -> str:
            sql = sql.replace(" COLLATE BINARY ", f" COLLATE {code_point_order} ")
            sql = sql.replace("INTO run_steps (", f"INTO {step_table} (")
            sql = sql.replace("UPDATE run_steps SET", f"UPDATE {step_table} SET")
            if sql.startswith("SELECT"):
                sql = sql.replace(" FROM nodes ", f" FROM {nodes_read} ")
            return sql.replace(" IS ?", f" {null_safe_equal} ?").replace("?", placeholder)

        return replace(written, **{f.name: adapt(getattr(written, f.name)) for f in fields(cls)})


def _after_prefix(prefix: str) -> str | None:
    """The first string, in code-point order, after every string that starts with
    ``prefix`` (which are those from ``prefix`` up to it); ``None`` when there is none:
    ``prefix`` is empty or only U+10FFFF characters, so every string from it on starts
    with it."""
    stem = prefix.rstrip(chr(sys.maxunicode))
    if not stem:
        return None
    code = ord(stem[-1]) + 1
    if 0xD800 <= code <= 0xDFFF:  # surrogates: no character of a stored id
        code = 0xE000
    return stem[:-1] + chr(code)


def run_from_row(row: Any) -> RunRecord:
    """A :class:`RunRecord` from a row in :data:`RUN_COLUMNS` order."""
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
        owner_token=row[20],
        owner_proc=row[21],
        lease_expires_at=row[22],
        cancel_requested=bool(row[23]),
        queue=row[24],
    )


@dataclass(slots=True)
class StepDone:
    """A returned step whose result is not committed yet: its key, its result as JSON
    text (also its DAG node's output), its running node (``None``: none) and the
    seconds its function took."""

    key: str
    text: str
    node_id: str | None = None
    duration: float = 0.0


@dataclass(slots=True)
class StepCall:
    """The identity of a called step, recorded ``dispatched`` before its function runs.
    ``again``: the run has a record of it already (a failed or uncertain step run again),
    which a backend may record anew without first trying a plain insert."""

    key: str
    scope: str
    position: int
    kind: str
    name: str
    occurrence: int
    input_hash: str
    again: bool = False


@dataclass(slots=True)
class StepNode:
    """The step's running ``code`` node in the session DAG, as JSON text: ``input_json``
    the canonical text the input hash was computed from (``{"args": [...], "kwargs":
    {...}}``), ``meta_json`` the metadata :func:`openprogram.scope.code_metadata` builds
    (``"{}"`` when empty)."""

    session_id: str
    name: str
    input_json: str
    caller_id: str | None
    meta_json: str = "{}"


class RunStore(ABC):
    """Runs and steps of one store (see the module docstring).

    ``store`` is the :class:`~openprogram.store.SessionStore` on the same database: a
    step's record and its session-DAG node are written in one transaction.
    """

    location: str
    durability: Durability
    store: Any  # SessionStore
    backend: Any  # the SessionStore's backend: each subclass names its type

    def __init__(self, store: Any, durability: Durability) -> None:
        self.store = store
        self.backend = store.backend
        self.location = self.backend.location
        self.durability = durability

    @property
    def defer_results(self) -> bool:
        """Whether a step's result is committed with the next record (``process``/``power``)
        rather than on its own as soon as it returns (``eager``)."""
        return self.durability is not Durability.EAGER

    @property
    @abstractmethod
    def source(self) -> str | os.PathLike[str]:
        """What reopens this store (:func:`open_run_store`'s ``store``): the SQLite root, or
        the PostgreSQL URL with its password — kept in memory only; :attr:`location` is
        what is shown."""

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def pinned(self) -> AbstractContextManager[None]:
        """``with runs.pinned():`` — this thread keeps one store connection for the block
        (a run's execution; PostgreSQL: no pool checkout per statement). SQLite threads
        always keep theirs."""
        return nullcontext()

    def owns(self, writer: Any) -> bool:
        """Whether ``writer`` (a ``SessionNodeWriter``) writes through this store's
        connections, so a step's node can join the step transaction."""
        return getattr(writer, "_backend", None) is self.backend

    @abstractmethod
    def write_step(
        self,
        run_id: str,
        token: str,
        done: StepDone | None,
        call: StepCall | None,
        node: StepNode | None = None,
    ) -> tuple[bool, tuple[str, int] | None]:
        """One commit, by the execution holding the lease ``token``, of: the result of the
        step ``done`` (``completed``) and its node's exit; the dispatch of ``call``
        (``dispatched``) and, when it is written, ``node`` appended as its running DAG
        node. Returns ``(dispatched, (node id, node seq) or None)``. ``call`` is not written (``False``) when the
        run was cancelled, a cancel or a pause was requested or this execution lost its
        lease — ``done`` is written all the same (unless the lease was lost). All or
        nothing: on any error nothing of it is committed."""

    # -- statements: the per-backend primitives ------------------------------------
    #: This backend's copy of the shared statements (:meth:`RunSql.for_dialect`).
    sql: ClassVar[RunSql]

    @abstractmethod
    def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        """Every row of the query ``sql`` (errors raised as the backend raises them)."""

    @abstractmethod
    def _row(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        """The first row of the query ``sql``, ``None`` when there is none."""

    @abstractmethod
    def _changed(self, sql: str, params: tuple[Any, ...] = ()) -> int:
        """Run the statement ``sql``; how many rows it wrote."""

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
        """Record a new run: ``running`` under ``owner``'s lease, or ``queued`` on
        ``queue`` for workers when ``owner`` is ``None``."""
        now = time.time()
        self._changed(
            self.sql.insert_run,
            (
                run_id, entry, program_path, function_qualname, json.dumps(args),
                str(RunStatus.QUEUED if owner is None else RunStatus.RUNNING), str(policy),
                model, json.dumps(source_snapshot) if source_snapshot is not None else None,
                session_id, None if owner is None else owner.pid,
                None if owner is None else owner.host, now, now,
                None if owner is None else owner.token, None if owner is None else owner.proc,
                None if owner is None else now + lease_s, queue,
            ),
        )  # fmt: skip
        if owner is None and queue is not None:
            self._announce(run_id)

    def announce_queued(self, run_id: str) -> None:
        """Tell the idle workers of the queued run ``run_id``'s queue that it is there
        (PostgreSQL: ``NOTIFY``; elsewhere they find it at their next poll)."""
        return None

    def _announce(self, run_id: str) -> None:
        """:meth:`announce_queued`, best effort: the run is recorded already, and a worker
        that hears nothing finds it at its next poll."""
        try:
            self.announce_queued(run_id)
        except StoreError:
            pass

    def watch_queue(
        self, queue: str, wake: threading.Event, stop: threading.Event
    ) -> threading.Thread | None:
        """Set ``wake`` when a run of ``queue`` is announced (:meth:`announce_queued`),
        until ``stop`` is set (PostgreSQL: ``LISTEN``, by the thread returned; elsewhere
        nothing)."""
        return None

    def close_interrupted_nodes(self, run_id: str, token: str | None) -> int:
        """Close the run's session-DAG nodes an earlier execution left ``running`` (its
        process was killed or crashed, its machine lost): ``error``, with
        :data:`INTERRUPTED_CALL` as their error. Called by the execution holding the
        lease ``token`` before it appends nodes of its own, so every ``running`` node of
        the run's session is one nobody executes any more. Returns how many."""
        output = json.dumps({"error": INTERRUPTED_CALL})
        return self._changed(self.sql.close_interrupted_nodes, (output, time.time(), run_id, token))

    def get_run(self, run_id: str) -> RunRecord | None:
        row = self._row(self.sql.get_run, (run_id,))
        return run_from_row(row) if row else None

    def list_runs(self, status: str | None = None) -> list[RunRecord]:
        """Runs oldest first (only those in ``status`` when given)."""
        if status is None:
            rows = self._rows(self.sql.list_runs)
        else:
            rows = self._rows(self.sql.list_runs_in, (str(status),))
        return [run_from_row(r) for r in rows]

    def newest_runs(
        self, limit: int, belongs: Callable[[str], bool] | None = None
    ) -> tuple[list[RunRecord], int]:
        """Every run not finished yet (queued, running — an interrupted one too — or
        paused) and the ``limit`` newest finished ones (completed, failed, cancelled),
        newest first; and how many older finished runs were left out. Two queries that
        read only those rows, not every run.

        With ``belongs``, only the runs whose Program file
        (:func:`~openprogram.contract.runs.program_file`) it accepts: their ``limit``
        newest finished ones, and how many of theirs were left out (a store several
        folders share: each folder's own). The finished runs are counted per entry first
        (few rows); then the newest of each entry that belongs are read."""
        limit = max(0, int(limit))
        unfinished = [run_from_row(r) for r in self._rows(self.sql.unfinished_runs)]
        groups: list[tuple[Any, str, int]] | None = None
        if belongs is not None:
            unfinished = [r for r in unfinished if belongs(program_file(r.program_path, r.entry))]
            counts = self._rows(self.sql.count_finished_by_entry)
            groups = [(p, str(e), int(n)) for p, e, n in counts if belongs(program_file(p, e))]
            if len(groups) == len(counts):  # every finished run belongs: read them as one
                groups = None
        left_out = 0
        if groups is None:
            finished = [
                run_from_row(r) for r in self._rows(self.sql.newest_finished_runs, (limit,))
            ]
            if len(finished) >= limit:  # more may be finished than were read
                left_out = int(self._row(self.sql.count_finished_runs)[0]) - len(finished)
        else:
            sql = self.sql
            finished = [
                run_from_row(r)
                for p, e, _ in groups
                for r in (
                    self._rows(sql.newest_finished_runs_of_pathless_entry, (e, limit))
                    if p is None
                    else self._rows(sql.newest_finished_runs_of_entry, (p, e, limit))
                )
            ]
            finished.sort(key=lambda r: (-r.created_at, r.id))
            finished = finished[:limit]
            left_out = sum(n for _, _, n in groups) - len(finished)
        runs = [*unfinished, *finished]
        runs.sort(key=lambda r: (-r.created_at, r.id))
        return runs, max(0, left_out)

    def runs_by_id_prefix(self, prefix: str, limit: int) -> tuple[int, list[RunRecord]]:
        """How many runs' ids start with ``prefix`` (as written: case, ``%`` and ``_``
        are characters like any other), and the ``limit`` newest of them, newest first.
        A range of ids, not a read of every run: SQLite reads it from the id index."""
        end = _after_prefix(prefix)
        if end is None:  # only U+10FFFF characters: no string follows their ids
            found = sorted(
                (r for r in self.list_runs() if r.id.startswith(prefix)),
                key=lambda r: (-r.created_at, r.id),
            )
            return len(found), found[:limit]
        rows = self._rows(self.sql.runs_by_id_prefix, (prefix, end, limit))
        count = len(rows)
        if count >= limit:  # more may match than were read
            count = max(count, int(self._row(self.sql.count_runs_by_id_prefix, (prefix, end))[0]))
        return count, [run_from_row(r) for r in rows]

    def claim_run(
        self,
        run_id: str,
        *,
        expected_status: str,
        expected_token: str | None,
        owner: Owner,
        lease_s: float,
    ) -> bool:
        """Compare-and-set: make ``owner`` hold the run (``running``, a fresh lease) if it
        is still ``expected_status`` with ``expected_token`` — the values read before."""
        now = time.time()
        return (
            self._changed(
                self.sql.claim_run,
                (
                    owner.token, owner.pid, owner.host, owner.proc, now + lease_s, now, run_id,
                    str(expected_status), expected_token,
                ),
            )
            == 1
        )  # fmt: skip

    @abstractmethod
    def claim_next(
        self, queue: str, owner: Owner, lease_s: float, *, limit: int | None = None
    ) -> RunRecord | None:
        """Claim the oldest run of ``queue`` that is ``queued`` or whose lease expired (a
        worker); ``None`` when there is none or ``limit`` runs of the queue hold a live
        lease. Concurrent workers never claim the same run. The record returned has
        ``taken_over`` set when the run was ``running`` (its lease expired)."""

    def count_unfinished(self, queue: str) -> int:
        """How many runs of ``queue`` are ``queued`` or ``running`` (by any worker, live or
        dead: a dead worker's run is claimable once its lease expires)."""
        return int(self._row(self.sql.count_unfinished, (queue,))[0])

    def renew_lease(self, run_id: str, token: str, lease_s: float) -> bool:
        """Push the lease of ``token`` forward; ``False`` when it is no longer held."""
        return self._changed(self.sql.renew_lease, (time.time() + lease_s, run_id, token)) == 1

    def release_run(self, run_id: str, token: str, *, requeue: bool) -> bool:
        """Give up the lease (``requeue``: back to ``queued`` for another worker)."""
        params = (bool(requeue), time.time(), run_id, token)
        if self._changed(self.sql.release_run, params) != 1:
            return False
        if requeue:  # another worker may take it now
            self._announce(run_id)
        return True

    def requeue_run(
        self,
        run_id: str,
        token: str,
        *,
        queue: str,
        policy: str,
        model: str | None,
        rerun: Sequence[str] = (),
        rerun_reason: str = "",
    ) -> bool:
        """Hand the run the execution whose lease token is ``token`` holds to the workers
        of ``queue`` (``queued``, its pause and error cleared), with ``policy`` and, when
        given, ``model``; ``False`` when that execution no longer holds it. The steps
        ``rerun`` (keys) are recorded ``failed`` with ``rerun_reason`` in the same
        transaction, so the workers run them again: all of it is stored, or none."""
        params = (queue, policy, model, time.time(), run_id, token)
        with self.backend.transaction():
            for key in rerun:
                self.fail_step(run_id, key, rerun_reason, token=token)
            changed = self._changed(self.sql.requeue_run, params)
        if changed != 1:
            return False
        self._announce(run_id)
        return True

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
        """Record how the execution holding ``token`` ended; returns the state actually
        stored (a run cancelled or taken over meanwhile keeps what the other wrote)."""
        changed = self._changed(
            self.sql.finish_run,
            (
                str(status), json.dumps(result) if status == "completed" else None, error,
                paused_step, paused_occurrence,
                None if pause_reason is None else str(pause_reason), time.time(), run_id, token,
            ),
        )  # fmt: skip
        if changed == 1:
            return status
        run = self.get_run(run_id)
        return run.status if run else status

    def cancel_run(
        self, run_id: str, *, expected_status: str, expected_token: str | None, error: str
    ) -> bool:
        """Compare-and-set: mark the run ``cancelled`` if it is still as read (a
        ``running`` one: its process is gone, and its running calls are closed as in
        :meth:`set_paused`); a paused one's step and reason are cleared."""
        params = (error, time.time(), run_id, str(expected_status), expected_token)
        with self.backend.transaction():
            if expected_status == RunStatus.RUNNING:
                self.close_interrupted_nodes(run_id, expected_token)
            return self._changed(self.sql.cancel_run, params) == 1

    def request_cancel(self, run_id: str, *, token: str | None) -> bool:
        """Ask the process executing the run to cancel it at its next step
        (``cancel_requested``), if it still is ``running`` under ``token`` (as read)."""
        return self._changed(self.sql.request_cancel, (run_id, token)) == 1

    def set_paused(
        self,
        run_id: str,
        reason: str,
        message: str,
        *,
        token: str | None,
        step: str | None = None,
        occurrence: int | None = None,
    ) -> bool:
        """Compare-and-set: mark a run paused for ``reason`` if it still is ``running``
        under ``token`` (as read before: a run whose process is gone); ``False`` when it
        changed meanwhile. The calls that process left ``running`` in the run's tree are
        closed in the same transaction, as interrupted errors (as a takeover closes them)."""
        params = (str(reason), message, step, occurrence, time.time(), run_id, token)
        with self.backend.transaction():
            self.close_interrupted_nodes(run_id, token)
            return self._changed(self.sql.set_paused, params) == 1

    def repause(self, run_id: str, reason: str, message: str, *, was: str) -> bool:
        """Compare-and-set: a paused run paused for ``was`` is paused for ``reason`` now
        (an approval decided without resuming: it waits for a resume, not a decision)."""
        params = (str(reason), message, time.time(), run_id, str(was))
        return self._changed(self.sql.repause, params) == 1

    def request_pause(self, run_id: str, *, token: str | None) -> bool:
        """Ask the process executing the run to pause it before its next step
        (``pause_requested``), if it still is ``running`` under ``token`` (as read)."""
        return self._changed(self.sql.request_pause, (run_id, token)) == 1

    def control_state(self, run_id: str) -> tuple[str, bool, bool, str | None]:
        """``(status, pause_requested, cancel_requested, owner_token)`` — read between
        steps for cancel, pause and lease checks (``cancelled`` for a missing run)."""
        row = self._row(self.sql.control_state, (run_id,))
        if row is None:
            return RunStatus.CANCELLED, False, False, None
        return row[0], bool(row[1]), bool(row[2]), row[3]

    def update_snapshot(self, run_id: str, snapshot: dict[str, Any]) -> None:
        self._changed(self.sql.update_snapshot, (json.dumps(snapshot), run_id))

    @abstractmethod
    def last_activity(self, run_id: str) -> float:
        """Latest of the run's update time and its steps' timestamps."""

    def change_marker(self) -> tuple[int, int, int, int]:
        """A fingerprint of what the editor's run views show, changed by every commit
        that changes them: the runs (count, latest update) and the steps of running runs
        (count, latest start or finish; a step does not touch its run's row). Reads only
        the steps of running runs (through the run's key)."""
        row = self._row(
            "SELECT (SELECT COUNT(*) FROM runs), (SELECT MAX(updated_at) FROM runs), "
            "COUNT(*), MAX(COALESCE(finished_at, started_at)) FROM run_steps "
            "WHERE run_id IN (SELECT id FROM runs WHERE status = 'running')"
        )
        count, updated, steps, stepped = row if row else (0, None, 0, None)
        return (int(count), int((updated or 0.0) * 1e6), int(steps), int((stepped or 0.0) * 1e6))

    # -- steps ---------------------------------------------------------------------
    def load_steps(self, run_id: str) -> list[StepRecord]:
        """Every step record of a run, ordered by scope and position."""
        return [StepRecord(*r) for r in self._rows(self.sql.load_steps, (run_id,))]

    def uncertain_step(self, run_id: str) -> StepRecord | None:
        """The run's first step that was started but whose result was not saved (what a
        resume reports as uncertain; where an interrupted run stopped), or ``None``."""
        return next(
            (s for s in self.load_steps(run_id) if s.uncertain),
            None,
        )

    def replay_steps(self, run_id: str) -> list[StepRecord]:
        """Every step record of a run as an execution replays them: no timestamps, in no
        particular order (a 10,000-step resume reads and decodes only what it uses)."""
        return [StepRecord(*r) for r in self._rows(self.sql.replay_steps, (run_id,))]

    def top_level_steps(self, run_id: str) -> list[StepRecord]:
        """The run's top-level records (scope ``""``) in call order."""
        return [StepRecord(*r) for r in self._rows(self.sql.top_level_steps, (run_id,))]

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
        """Record (commit) that a workflow/parallel/branch/step was called."""
        self._changed(
            self.sql.dispatch_step,
            (run_id, step_key, scope, position, kind, name, occurrence, input_hash, time.time()),
        )

    def complete_step(self, run_id: str, step_key: str, result_json: str, *, token: str) -> None:
        """Record the step ``completed`` with its result, only while the execution whose
        lease token is ``token`` holds the run (one that lost it writes nothing)."""
        params = (result_json, time.time(), run_id, step_key, run_id, token)
        self._changed(self.sql.complete_step, params)

    def fail_step(self, run_id: str, step_key: str, error: str, *, token: str) -> None:
        """Record the step ``failed`` with ``error``, fenced as :meth:`complete_step`."""
        params = (json.dumps(error), time.time(), run_id, step_key, run_id, token)
        self._changed(self.sql.fail_step, params)

    def count_steps(self, run_id: str, status: str | None = None) -> int:
        """How many records of kind ``step`` the run has (in ``status`` when given)."""
        if status is None:
            row = self._row(self.sql.count_steps, (run_id,))
        else:
            row = self._row(self.sql.count_steps_in, (run_id, status))
        return int(row[0])

    # -- approvals of requires_approval tools ---------------------------------------
    # Rows of ``run_steps`` with kind ``approval`` and scope ``approvals``: step_key the
    # call's key, name the tool, result its JSON arguments, status an ApprovalStatus.
    # One call (tool and arguments, ``call``: its hash) may be requested again after an
    # approval of it was used: each request is its own row, ``occurrence`` counting them
    # and ``input_hash`` holding ``call``.
    def request_approval(
        self, run_id: str, key: str, call: str, occurrence: int, tool: str, arguments_json: str
    ) -> None:
        """Record that the run waits for approval of one tool call (idempotent)."""
        params = (run_id, key, tool, occurrence, call, arguments_json, time.time())
        self._changed(self.sql.request_approval, params)

    def latest_approval(self, run_id: str, call: str) -> tuple[str, str, int] | None:
        """``(key, status, occurrence)`` of the newest request of the call ``call``; status
        ``requested`` | ``approved`` | ``denied`` | ``executed`` (an approval used)."""
        row = self._row(self.sql.latest_approval, (run_id, call))
        return (str(row[0]), str(row[1]), int(row[2])) if row else None

    def consume_approval(self, run_id: str, key: str) -> bool:
        """Mark an approved call ``executed`` before it runs (``False``: it was not
        approved, or another execution used the approval first)."""
        return self._changed(self.sql.consume_approval, (time.time(), run_id, key)) == 1

    def keep_approval_note(self, run_id: str, key: str, kind: str, text: str) -> None:
        """Keep (replace) the note ``key`` of kind ``kind`` (:data:`APPROVAL_NOTE_KINDS`)."""
        self._changed(
            self.sql.keep_approval_note, (run_id, key, kind, kind, key, text, time.time())
        )

    def approval_note(self, run_id: str, key: str, kind: str) -> str | None:
        """The text of a kept note, or ``None``."""
        row = self._row(self.sql.approval_note, (run_id, key, kind))
        return str(row[0]) if row and row[0] is not None else None

    def take_approval_note(self, run_id: str, key: str, kind: str) -> str | None:
        """The text of a kept note, which is dropped (``None``: none kept)."""
        text = self.approval_note(run_id, key, kind)
        if text is not None:
            self._changed(self.sql.drop_approval_note, (run_id, key, kind))
        return text

    def pending_approval(self, run_id: str) -> tuple[str, str, str] | None:
        """``(key, tool, arguments_json)`` of the run's oldest undecided request."""
        row = self._row(self.sql.pending_approval, (run_id,))
        return (str(row[0]), str(row[1]), str(row[2])) if row else None

    def decide_approval(self, run_id: str, key: str, decision: str) -> bool:
        """Record ``approved`` / ``denied`` for a requested call (``False``: it was not
        requested or was decided meanwhile)."""
        params = (str(decision), time.time(), run_id, key)
        return self._changed(self.sql.decide_approval, params) == 1

    # -- session-DAG reads for tooling ------------------------------------------------
    def session_node_rows(self, session_id: str) -> list[tuple[Any, ...]]:
        """The session's nodes in ``seq`` order as ``(id, seq, kind, name, caller_id,
        predecessor_id, input, output, status, metadata, created_at)`` with the JSON
        columns left as stored text (a 10,000-node graph decodes only what it shows)."""
        return [tuple(r) for r in self._rows(self.sql.session_node_rows, (session_id,))]

    @abstractmethod
    def llm_usage(self, session_id: str) -> tuple[int, tuple[int, int]]:
        """``(model calls, (input tokens, output tokens))`` recorded so far in a session."""

    # -- tooling reads -------------------------------------------------------------
    def steps_in_call_order(self, run_id: str) -> list[StepRecord]:
        """Every step record of a run in call order (:data:`CALL_ORDER`)."""
        return sorted(self.load_steps(run_id), key=call_order_key)

    def step_starts(self, run_id: str) -> list[tuple[str, int, float]]:
        """``(name, occurrence, started_at)`` of the run's steps by start time (the run
        graph's step labels)."""
        steps = self.steps_in_call_order(run_id)
        return [(s.name, int(s.occurrence), float(s.started_at or 0.0)) for s in steps]

    def step_view_objects(
        self,
        run_id: str,
        context: StepContext,
        *,
        now: float,
        shorten: Callable[[str | None], str],
    ) -> list[str]:
        """The run's steps (records of :data:`~openprogram.store.run_views.VIEW_STEP_KINDS`)
        in call order, each the Runs view's JSON object text
        (:func:`openprogram.store.run_views.step_view_object`)."""
        return [
            step_view_object(s, context, now=now, shorten=shorten)
            for s in self.steps_in_call_order(run_id)
            if s.kind in VIEW_STEP_KINDS
        ]

    def graph_node_objects(
        self,
        session_id: str,
        *,
        limit: int,
        node_id: str | None = None,
        run_status: str | None = None,
    ) -> list[GraphNodeRow]:
        """The session's nodes (or the one ``node_id``) in ``seq`` order for the run graph
        (:func:`openprogram.store.run_views.graph_node_row`; ``run_status``: the status of
        the session's run, ``None`` for a session of no run)."""
        return [
            graph_node_row(row, limit=limit, run_status=run_status)
            for row in self.session_node_rows(session_id)
            if node_id is None or row[0] == node_id
        ]

    def runs_of_program(self, program_path: str | None) -> list[RunRecord]:
        """Runs of the Program file ``program_path`` (every run for ``None``), oldest first:
        those :meth:`RunRecord.is_of_program` says, read by SQL. The few distinct spellings
        of the runs' Program files (:func:`~openprogram.contract.runs.program_file`:
        ``program_path``, else the path of ``entry``) are read and compared as that method
        compares them (``_same_file``: real paths); then only the runs of the matching ones
        are read."""
        if program_path is None:
            return self.list_runs()
        paths = [str(row[0]) for row in self._rows(self.sql.program_paths)]
        entries = [str(row[0]) for row in self._rows(self.sql.entries_without_program)]
        rows = [
            row
            for path in paths
            if _same_file(path, program_path)
            for row in self._rows(self.sql.runs_of_program_path, (path,))
        ]
        rows += [
            row
            for entry in entries
            if _same_file(program_file(None, entry), program_path)
            for row in self._rows(self.sql.runs_of_entry_without_program, (entry,))
        ]
        return sorted((run_from_row(r) for r in rows), key=lambda r: r.created_at)

    def program_paths(self) -> list[str]:
        """The distinct Program files the runs execute
        (:func:`~openprogram.contract.runs.program_file`), as recorded, sorted."""
        paths = {str(row[0]) for row in self._rows(self.sql.program_paths)}
        entries = (str(row[0]) for row in self._rows(self.sql.entries_without_program))
        paths.update(program_file(None, entry) for entry in entries)
        return sorted(path for path in paths if path)

    def recorded_step_sequences(
        self, program_path: str | None = None
    ) -> dict[str, list[list[tuple[str, int]]]]:
        """``{function_qualname: [RecordedRun per run an edit can break]}``: the top-level
        calls, in order, of each run an edit of the Program can break
        (:func:`~openprogram.durable.policy.edit_can_break`: the runs ``resume`` takes and
        the queued ones a worker takes, when they execute the latest source), each with
        the entry it was started with — the identities an edit must keep for it to go on
        (OP209, for ``openprogram-lint --store`` and the language server alike)."""
        from openprogram.durable.policy import edit_can_break

        out: dict[str, list[list[tuple[str, int]]]] = {}
        for run in self.runs_of_program(program_path):
            if not edit_can_break(run):
                continue
            steps = [
                (s.name, int(s.occurrence))
                for s in self.top_level_steps(run.id)
                if s.kind != "branch"
            ]
            out.setdefault(run.function_qualname, []).append(RecordedRun(steps, run.entry))
        return out


class RecordedRun(list[tuple[str, int]]):
    """The top-level step identities ``(name, occurrence)`` of one recorded run, in call
    order, and the entry it was started with (``prog.py:report``: which class a method
    ran on); a plain list (no ``entry``) is a run whose entry is not known."""

    def __init__(self, steps: Iterable[tuple[str, int]] = (), entry: str | None = None) -> None:
        super().__init__(steps)
        self.entry = entry


def _durability(durability: str | None) -> Durability:
    mode = durability or os.environ.get("OPENPROGRAM_DURABILITY") or Durability.PROCESS.value
    if mode not in DURABILITY_MODES:
        raise StoreError(
            f"unknown durability mode {mode!r}: use one of {', '.join(DURABILITY_MODES)}"
        )
    return Durability(mode)


_executing: contextvars.ContextVar[RunStore | None] = contextvars.ContextVar(
    "openprogram_executing_run_store", default=None
)


def executing_store() -> RunStore | None:
    """The store of the run executing in this context (in its steps too), or ``None``."""
    return _executing.get()


@contextmanager
def executing_in(db: RunStore) -> Iterator[None]:
    """Make ``db`` the store of the run executing in this context (runner use). Inside it
    the default store (no ``store`` given) is ``db``'s, not ``$OPENPROGRAM_STORE``'s: a
    Program's ``pause_run(current_run_id())`` finds its run wherever it was started."""
    token = _executing.set(db)
    try:
        yield
    finally:
        _executing.reset(token)


def _in_run_default(
    store: str | os.PathLike[str] | None,
) -> str | os.PathLike[str] | None:
    """``store``, or the executing run's store when none is given."""
    if store is None or str(store) == "":
        db = _executing.get()
        if db is not None:
            return db.source
    return store


def open_run_store(
    store: str | os.PathLike[str] | None = None,
    *,
    durability: str | None = None,
    create: bool = True,
) -> RunStore:
    """Open the runs of ``store`` (``--store`` / ``$OPENPROGRAM_STORE`` / ``./.openprogram``)
    for reading and writing; applies the store's migrations. A ``postgresql://`` URL
    opens that database (:mod:`openprogram.store.postgres_runs`)."""
    from openprogram.store.session_store import store_url

    url = store_url(store := _in_run_default(store))
    if url is not None:
        from openprogram.store.postgres_runs import PostgresRunStore

        return PostgresRunStore.open(url, durability=_durability(durability))
    from openprogram.store.sqlite_runs import SqliteRunStore

    return SqliteRunStore.open(store, durability=_durability(durability), create=create)


def read_run_store(
    store: str | os.PathLike[str] | None = None, *, wait_s: float | None = None
) -> RunStore | None:
    """Open the runs of ``store`` read-only for tooling; ``None`` when there is no store
    (or it has no run tables). Raises ``StoreError`` when it exists but cannot be read.
    ``wait_s``: how long a PostgreSQL store's reads wait for a connection (default
    ``$OPENPROGRAM_PG_WAIT_S``)."""
    from openprogram.store.session_store import store_url

    url = store_url(store := _in_run_default(store))
    if url is not None:
        from openprogram.store.postgres_runs import PostgresRunStore

        return PostgresRunStore.open_readonly(url, wait_s=wait_s)
    from openprogram.store.sqlite_runs import SqliteRunStore

    return SqliteRunStore.open_readonly(store)
