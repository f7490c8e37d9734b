"""Versioned schema of the SQLite store.

Each :class:`Migration` is applied once, in ``version`` order, inside one transaction,
and recorded in the ``schema_version`` table (``version``, ``name``, ``applied_at``).
Opening a store applies the missing ones; a database whose version is newer than this
code knows is refused (upgrade OpenProgram instead of writing an older schema into it).

Adding a migration is one entry: append ``Migration(N + 1, "what it adds", SQL)`` to
:data:`MIGRATIONS`. ``SQL`` is a script of ``;``-separated statements. All DDL of the
store lives here (the run tables are documented in :mod:`openprogram.store.runs`).
Never edit or renumber an applied migration; add a new one.

Schema v1 (sessions and nodes):

* ``sessions(id, name, agent_id, head_id, head_pinned, metadata, created_at, updated_at)``
  — ``head_pinned = 0`` means the head is the session's latest node (by ``seq``), so the
  common append writes no session row; ``head_pinned = 1`` means ``head_id`` was chosen
  (``move_head`` or an append with ``move_head=False``).
* ``nodes(id, session_id, seq, kind, name, caller_id, predecessor_id, input, output,
  status, metadata, created_at, updated_at)`` — JSON columns hold JSON text;
  ``(session_id, seq)`` is unique.

Schema v2: the durable-run tables ``runs`` and ``run_steps``, documented in
:mod:`openprogram.store.runs`.

Schema v3: drops the index ``run_steps_order`` (one B-tree less to write per step; the
primary key ``(run_id, step_key)`` already serves every per-run query).

Schema v4: rebuilds ``run_steps`` ``WITHOUT ROWID`` (rows stored in the primary-key
B-tree: one B-tree written per step instead of two; same columns and data).

Schema v5: run ownership is a lease (``owner_token``, ``owner_proc``,
``lease_expires_at``), ``cancel_requested`` (a cancel waiting for the executing process)
and ``queue`` (runs submitted for workers), see :mod:`openprogram.store.lease`.

Schema v6: a step's record lives in its session-DAG node. ``nodes`` gains ``run_id``,
``step_key`` and the step columns (``step_scope``, ``step_position``, ``step_kind``,
``step_occurrence``, ``step_input_hash``, ``step_status``, ``step_result``,
``step_finished_at``; the step's name and start are the node's ``name`` and
``created_at``), unique on ``(run_id, step_key)`` where set. So a step's commit writes
two rows (the previous node's exit with its result, the new node with its dispatch)
instead of four. The table ``run_steps`` becomes ``run_steps_nodeless``: the records that
have no node (workflows, parallel scopes and branches, approvals, steps under a hidden
frame) and every record written before v6. ``run_steps`` is now a view of both, with
the same columns as before; inserts, updates and deletes on it reach the right table.

Schema v7: an insert or update through the view ``run_steps`` that would give a run two
records with one ``step_key`` (one in each table) is refused as the primary key of a
table refuses it (``UNIQUE constraint failed: run_steps.run_id, run_steps.step_key``),
also under ``OR REPLACE`` / ``OR IGNORE`` (a trigger cannot see the outer statement's
conflict clause); within one table the table's own key decides, honouring the clause.

Schema v8: the step log ``node_log`` (see :mod:`openprogram.store.step_log`): a table
with the columns of ``nodes`` plus ``lid INTEGER PRIMARY KEY`` and no other index, where
a durable step's commit appends its running node and writes its exit, touching one
B-tree instead of four; its rows are moved into ``nodes`` in batches (a *fold*) before
any other write. ``nodes_all`` is the view of both that every reader reads, and
``run_steps`` reads ``nodes_all``.

Schema v9: the triggers of ``run_steps`` fold the step log first, so an insert, update or
delete of one's own through ``run_steps`` (raw SQL) also reaches a step whose node is
still in the log, and an insert's key check sees it.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass


@dataclass(frozen=True)
class Migration:
    """One schema step: its version number, a short name and its SQL script."""

    version: int
    name: str
    sql: str

    def script(self) -> str:
        return self.sql


SCHEMA_V1 = """
CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    name TEXT,
    agent_id TEXT,
    head_id TEXT,
    head_pinned INTEGER NOT NULL DEFAULT 0,
    metadata TEXT NOT NULL DEFAULT '{}',
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE nodes (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    caller_id TEXT,
    predecessor_id TEXT,
    input TEXT,
    output TEXT,
    status TEXT NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}',
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE UNIQUE INDEX nodes_session_seq ON nodes(session_id, seq);
"""

SCHEMA_V2_RUNS = """
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

SCHEMA_V3_DROP_ORDER_INDEX = """
DROP INDEX IF EXISTS run_steps_order;
"""

SCHEMA_V4_STEPS_WITHOUT_ROWID = """
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

SCHEMA_V5_LEASES = """
ALTER TABLE runs ADD COLUMN owner_token TEXT;
ALTER TABLE runs ADD COLUMN owner_proc TEXT;
ALTER TABLE runs ADD COLUMN lease_expires_at REAL;
ALTER TABLE runs ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN queue TEXT;
CREATE INDEX IF NOT EXISTS runs_queue ON runs(queue, status, created_at);
"""

_STEP_COLUMNS_ON_NODES = (
    ("run_id", "TEXT"),
    ("step_key", "TEXT"),
    ("step_scope", "TEXT"),
    ("step_position", "INTEGER"),
    ("step_kind", "TEXT"),
    ("step_occurrence", "INTEGER"),
    ("step_input_hash", "TEXT"),
    ("step_status", "TEXT"),
    ("step_result", "TEXT"),
    ("step_finished_at", "REAL"),
)
#: ``SET`` of every step column of a node to NULL: the node no longer holds a record.
RELEASE_STEP_COLUMNS = ", ".join(f"{name} = NULL" for name, _ in _STEP_COLUMNS_ON_NODES)

#: The statements of the triggers that route an insert / update on the view ``run_steps``.
_RUN_STEPS_INSERT = """    INSERT INTO run_steps_nodeless (run_id, step_key, scope, position, kind, name,
        occurrence, input_hash, status, result, started_at, finished_at)
    VALUES (NEW.run_id, NEW.step_key, NEW.scope, NEW.position, NEW.kind, NEW.name,
        NEW.occurrence, NEW.input_hash, NEW.status, NEW.result, NEW.started_at,
        NEW.finished_at);
"""
_RUN_STEPS_UPDATE = """    UPDATE run_steps_nodeless SET run_id = NEW.run_id, step_key = NEW.step_key,
        scope = NEW.scope, position = NEW.position, kind = NEW.kind, name = NEW.name,
        occurrence = NEW.occurrence, input_hash = NEW.input_hash, status = NEW.status,
        result = NEW.result, started_at = NEW.started_at, finished_at = NEW.finished_at
    WHERE run_id = OLD.run_id AND step_key = OLD.step_key;
    UPDATE nodes SET run_id = NEW.run_id, step_key = NEW.step_key, step_scope = NEW.scope,
        step_position = NEW.position, step_kind = NEW.kind, name = NEW.name,
        step_occurrence = NEW.occurrence, step_input_hash = NEW.input_hash,
        step_status = NEW.status, step_result = NEW.result, created_at = NEW.started_at,
        step_finished_at = NEW.finished_at
    WHERE run_id = OLD.run_id AND step_key = OLD.step_key;
"""


def _run_steps_view(nodes: str) -> str:
    """``CREATE VIEW run_steps``: the nodeless records and the step records of ``nodes``."""
    return f"""CREATE VIEW run_steps (run_id, step_key, scope, position, kind, name, occurrence,
    input_hash, status, result, started_at, finished_at) AS
SELECT run_id, step_key, scope, position, kind, name, occurrence, input_hash, status,
    result, started_at, finished_at FROM run_steps_nodeless
UNION ALL
SELECT run_id, step_key, step_scope, step_position, step_kind, name, step_occurrence,
    step_input_hash, step_status, step_result, created_at, step_finished_at
FROM {nodes} WHERE run_id IS NOT NULL;
"""


_RUN_STEPS_DELETE_TRIGGER = f"""CREATE TRIGGER run_steps_delete INSTEAD OF DELETE ON run_steps BEGIN
    DELETE FROM run_steps_nodeless WHERE run_id = OLD.run_id AND step_key = OLD.step_key;
    UPDATE nodes SET {RELEASE_STEP_COLUMNS}
    WHERE run_id = OLD.run_id AND step_key = OLD.step_key;
END;
"""

SCHEMA_V6_STEPS_IN_NODES = (
    "ALTER TABLE run_steps RENAME TO run_steps_nodeless;\n"
    + "".join(f"ALTER TABLE nodes ADD COLUMN {n} {t};\n" for n, t in _STEP_COLUMNS_ON_NODES)
    + f"""
CREATE UNIQUE INDEX nodes_run_step ON nodes(run_id, step_key) WHERE run_id IS NOT NULL;
{_run_steps_view("nodes")}CREATE TRIGGER run_steps_insert INSTEAD OF INSERT ON run_steps BEGIN
{_RUN_STEPS_INSERT}END;
CREATE TRIGGER run_steps_update INSTEAD OF UPDATE ON run_steps BEGIN
{_RUN_STEPS_UPDATE}END;
{_RUN_STEPS_DELETE_TRIGGER}"""
)

#: ``RAISE`` of a second record of one ``(run_id, step_key)`` through the view
#: ``run_steps`` when the two would be in different tables (within one table its primary
#: key or unique index refuses it, honouring ``OR REPLACE`` / ``OR IGNORE``).
_RUN_STEPS_KEY_TAKEN = (
    "SELECT RAISE(ABORT, 'UNIQUE constraint failed: run_steps.run_id, run_steps.step_key')"
)
_IN_NODES = "EXISTS (SELECT 1 FROM nodes WHERE run_id = {0}.run_id AND step_key = {0}.step_key)"
_IN_NODELESS = (
    "EXISTS (SELECT 1 FROM run_steps_nodeless WHERE run_id = {0}.run_id "
    "AND step_key = {0}.step_key)"
)

_RUN_STEPS_INSERT_TRIGGER = f"""CREATE TRIGGER run_steps_insert INSTEAD OF INSERT ON run_steps BEGIN
    {_RUN_STEPS_KEY_TAKEN} WHERE {_IN_NODES.format("NEW")};
{_RUN_STEPS_INSERT}END;
"""
_RUN_STEPS_UPDATE_TRIGGER = f"""CREATE TRIGGER run_steps_update INSTEAD OF UPDATE ON run_steps BEGIN
    {_RUN_STEPS_KEY_TAKEN}
    WHERE (NEW.run_id IS NOT OLD.run_id OR NEW.step_key IS NOT OLD.step_key)
        AND (({_IN_NODES.format("NEW")} AND {_IN_NODELESS.format("OLD")})
            OR ({_IN_NODELESS.format("NEW")} AND {_IN_NODES.format("OLD")}));
{_RUN_STEPS_UPDATE}END;
"""

SCHEMA_V7_RUN_STEPS_UNIQUE = f"""
DROP TRIGGER run_steps_insert;
{_RUN_STEPS_INSERT_TRIGGER}DROP TRIGGER run_steps_update;
{_RUN_STEPS_UPDATE_TRIGGER}"""

#: Every column of ``nodes`` (schema v6), in table order.
NODE_TABLE_COLUMNS = (
    "id, session_id, seq, kind, name, caller_id, predecessor_id, input, output, status, "
    "metadata, created_at, updated_at, " + ", ".join(name for name, _ in _STEP_COLUMNS_ON_NODES)
)

SCHEMA_V8_STEP_LOG = f"""
CREATE TABLE node_log (
    lid INTEGER PRIMARY KEY,
    id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    caller_id TEXT,
    predecessor_id TEXT,
    input TEXT,
    output TEXT,
    status TEXT NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{{}}',
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
{"".join(f"    {n} {t},{chr(10)}" for n, t in _STEP_COLUMNS_ON_NODES).rstrip().rstrip(",")}
);
CREATE VIEW nodes_all AS
SELECT {NODE_TABLE_COLUMNS} FROM nodes
UNION ALL
SELECT {NODE_TABLE_COLUMNS} FROM node_log;
DROP VIEW run_steps;
{_run_steps_view("nodes_all")}{_RUN_STEPS_INSERT_TRIGGER}{_RUN_STEPS_UPDATE_TRIGGER}
{_RUN_STEPS_DELETE_TRIGGER}"""

#: The fold of the step log (:mod:`openprogram.store.step_log`): its rows move into
#: ``nodes`` (ids, seqs and content kept, in log order), then the log is emptied.
FOLD_LOG_INSERT = (
    f"INSERT INTO nodes ({NODE_TABLE_COLUMNS}) "
    f"SELECT {NODE_TABLE_COLUMNS} FROM node_log ORDER BY lid"
)
FOLD_LOG_DELETE = "DELETE FROM node_log"
_FOLD_FIRST = f"    {FOLD_LOG_INSERT};\n    {FOLD_LOG_DELETE};\n"


def _folding_first(trigger: str) -> str:
    """``trigger`` (a ``CREATE TRIGGER ... BEGIN`` text) folding the step log first."""
    head, body = trigger.split(" BEGIN\n", 1)
    return f"{head} BEGIN\n{_FOLD_FIRST}{body}"


SCHEMA_V9_RUN_STEPS_FOLD_FIRST = f"""
DROP TRIGGER run_steps_insert;
DROP TRIGGER run_steps_update;
DROP TRIGGER run_steps_delete;
{_folding_first(_RUN_STEPS_INSERT_TRIGGER)}{_folding_first(_RUN_STEPS_UPDATE_TRIGGER)}
{_folding_first(_RUN_STEPS_DELETE_TRIGGER)}"""

#: ``runs`` of one Program file: the Runs view's per-folder reads (``RunSql``'s
#: ``newest_finished_runs_of_entry``, ``runs_of_program_path``) and ``program_paths``
#: read the rows of a path instead of every run. PostgreSQL has the same index (v6).
RUNS_PROGRAM_INDEX = (
    "CREATE INDEX IF NOT EXISTS runs_program ON runs(program_path, entry, created_at)"
)
#: A cancelled run keeps no pause (its step, occurrence and reason): the cancel statement
#: clears them since this version; the runs cancelled before are cleared once (v10 here,
#: v6 on PostgreSQL).
CANCELLED_KEEP_NO_PAUSE = (
    "UPDATE runs SET paused_step = NULL, paused_occurrence = NULL, pause_reason = NULL "
    "WHERE status = 'cancelled' AND (paused_step IS NOT NULL OR paused_occurrence IS NOT "
    "NULL OR pause_reason IS NOT NULL)"
)
SCHEMA_V10_RUNS_PROGRAM_INDEX = RUNS_PROGRAM_INDEX + ";\n" + CANCELLED_KEEP_NO_PAUSE + ";\n"

#: Every migration, in order. Append new entries at the end (see module docstring).
MIGRATIONS: list[Migration] = [
    Migration(1, "sessions and nodes", SCHEMA_V1),
    Migration(2, "durable runs and steps", SCHEMA_V2_RUNS),
    Migration(3, "durable steps without the order index", SCHEMA_V3_DROP_ORDER_INDEX),
    Migration(4, "durable steps without rowid", SCHEMA_V4_STEPS_WITHOUT_ROWID),
    Migration(5, "run leases, cancel requests and queues", SCHEMA_V5_LEASES),
    Migration(6, "step records in their session-DAG nodes", SCHEMA_V6_STEPS_IN_NODES),
    Migration(7, "one record per step key through the view run_steps", SCHEMA_V7_RUN_STEPS_UNIQUE),
    Migration(8, "the step log node_log and the view nodes_all", SCHEMA_V8_STEP_LOG),
    Migration(
        9, "writes through run_steps fold the step log first", SCHEMA_V9_RUN_STEPS_FOLD_FIRST
    ),
    Migration(
        10,
        "runs indexed by their Program file; cancelled runs keep no pause",
        SCHEMA_V10_RUNS_PROGRAM_INDEX,
    ),
]

VERSION_TABLE = """
CREATE TABLE IF NOT EXISTS schema_version (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at REAL NOT NULL
)
"""


def check_migrations(migrations: list[Migration]) -> None:
    """Raise ``ValueError`` unless versions are 1, 2, 3, ... in list order."""
    versions = [m.version for m in migrations]
    if versions != list(range(1, len(versions) + 1)):
        raise ValueError(f"migration versions must be 1..N in order, got {versions}")


def latest_version(migrations: list[Migration] | None = None) -> int:
    """The version a fully migrated database has."""
    ms = MIGRATIONS if migrations is None else migrations
    return max((m.version for m in ms), default=0)


def split_statements(script: str) -> list[str]:
    """Split an SQL script into complete statements (``;`` inside strings is kept)."""
    out: list[str] = []
    buf = ""
    for piece in script.split(";"):
        buf += piece + ";"
        if sqlite3.complete_statement(buf):
            if buf.strip(" \t\r\n;"):
                out.append(buf.strip())
            buf = ""
    if buf.strip(" \t\r\n;"):
        out.append(buf.strip())
    return out


check_migrations(MIGRATIONS)
