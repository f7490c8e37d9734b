"""Tables of durable runs and their steps (one migration of the store's migration list).

``runs`` — one row per run (a task):

=================  =====================================================================
column             meaning
=================  =====================================================================
id                 run id (also the id of the run's session in the session DAG)
entry              the entry reference as given: ``path/to/file.py:ENTRY`` or ``pkg.mod:ENTRY``
program_path       absolute path of the Program file (NULL when unknown)
function_qualname  qualified name of the resumable function (``report``, ``Reporter.report``)
args               JSON object of the keyword arguments
status             ``running`` | ``paused`` | ``completed`` | ``failed`` | ``cancelled``
policy             code-change policy: ``keep_original`` | ``use_latest``
model              model string given at run time (NULL: autodetected lazily)
source_snapshot    JSON: saved source of the function and its same-module helpers
session_id         session of the run in the DAG (same store)
result             JSON result of a completed run
error              one-line error of a failed/paused run
paused_step        step name a paused run stopped at (NULL otherwise)
paused_occurrence  occurrence of that step name (0-based)
pause_reason       ``uncertain`` | ``incompatible`` | ``requested`` | ``awaiting_approval``
pause_requested    1 when a pause was requested for a running run (checked between steps)
owner_pid          pid of the process executing the run
owner_host         host name of that process
created_at         epoch seconds
updated_at         epoch seconds of the last state change (heartbeat)
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

Indexes: the primary key ``(run_id, step_key)`` (every query is per run). Schema v2 also
had ``run_steps_order(run_id, scope, position)``; v3 drops it, since writing a third
B-tree on every step cost more than sorting one run's rows when they are read. v4
rebuilds ``run_steps`` ``WITHOUT ROWID``: the rows live in the primary-key B-tree itself,
so a step writes one B-tree instead of two (there is no ``rowid``: order by ``scope,
position`` or ``started_at``).

A ``dispatched`` row of kind ``step`` found on resume is *uncertain*: the operation may or
may not have happened, so the run pauses naming it until it is re-run explicitly.
"""

from __future__ import annotations

MIGRATION_NAME = "durable runs and steps"

MIGRATION_SQL = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    entry TEXT NOT NULL,
    program_path TEXT,
    function_qualname TEXT NOT NULL,
    args TEXT NOT NULL DEFAULT '{}',
    status TEXT NOT NULL,
    policy TEXT NOT NULL DEFAULT 'keep_original',
    model TEXT,
    source_snapshot TEXT,
    session_id TEXT,
    result TEXT,
    error TEXT,
    paused_step TEXT,
    paused_occurrence INTEGER,
    pause_reason TEXT,
    pause_requested INTEGER NOT NULL DEFAULT 0,
    owner_pid INTEGER,
    owner_host TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_status ON runs(status, updated_at);
CREATE INDEX IF NOT EXISTS runs_function ON runs(function_qualname);
CREATE TABLE IF NOT EXISTS run_steps (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    step_key TEXT NOT NULL,
    scope TEXT NOT NULL,
    position INTEGER NOT NULL,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    occurrence INTEGER NOT NULL,
    input_hash TEXT NOT NULL,
    status TEXT NOT NULL,
    result TEXT,
    started_at REAL NOT NULL,
    finished_at REAL,
    PRIMARY KEY (run_id, step_key)
);
CREATE INDEX IF NOT EXISTS run_steps_order ON run_steps(run_id, scope, position);
"""

MIGRATION_V3_NAME = "durable steps without the order index"

MIGRATION_V3_SQL = """
DROP INDEX IF EXISTS run_steps_order;
"""

MIGRATION_V4_NAME = "durable steps without rowid"

MIGRATION_V4_SQL = """
CREATE TABLE run_steps_v4 (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    step_key TEXT NOT NULL,
    scope TEXT NOT NULL,
    position INTEGER NOT NULL,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    occurrence INTEGER NOT NULL,
    input_hash TEXT NOT NULL,
    status TEXT NOT NULL,
    result TEXT,
    started_at REAL NOT NULL,
    finished_at REAL,
    PRIMARY KEY (run_id, step_key)
) WITHOUT ROWID;
INSERT INTO run_steps_v4 (run_id, step_key, scope, position, kind, name, occurrence,
    input_hash, status, result, started_at, finished_at)
SELECT run_id, step_key, scope, position, kind, name, occurrence, input_hash, status,
    result, started_at, finished_at FROM run_steps;
DROP TABLE run_steps;
ALTER TABLE run_steps_v4 RENAME TO run_steps;
"""
