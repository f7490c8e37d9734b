"""Versioned schema of the PostgreSQL store (the same tables as SQLite's, see
:mod:`openprogram.store.migrations` and :mod:`openprogram.store.runs`).

:func:`migrate` applies the missing migrations inside one transaction holding a
transaction-level advisory lock, so several processes starting at once against a new
database apply each migration exactly once (the others wait, then see it applied).
"""

from __future__ import annotations

import time
from typing import Any

from openprogram.errors import StoreError
from openprogram.store.migrations import CANCELLED_KEEP_NO_PAUSE, RUNS_PROGRAM_INDEX, Migration

# Key of the advisory lock taken while migrating (any constant shared by every process).
MIGRATION_LOCK = 0x0F_9209_5CA1E

PG_V1 = """
CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    name TEXT,
    agent_id TEXT,
    head_id TEXT,
    head_pinned BOOLEAN NOT NULL DEFAULT false,
    last_id TEXT,
    last_seq BIGINT NOT NULL DEFAULT 0,
    last_seq_count BIGINT NOT NULL DEFAULT 0,
    metadata TEXT NOT NULL DEFAULT '{}',
    created_at DOUBLE PRECISION NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL
);
CREATE TABLE nodes (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    seq BIGINT NOT NULL,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    caller_id TEXT,
    predecessor_id TEXT,
    input TEXT,
    output TEXT,
    status TEXT NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}',
    created_at DOUBLE PRECISION NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL,
    UNIQUE (session_id, seq)
);
CREATE INDEX nodes_caller ON nodes(caller_id);
CREATE TABLE runs (
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
    created_at DOUBLE PRECISION NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL,
    owner_token TEXT,
    owner_proc TEXT,
    lease_expires_at DOUBLE PRECISION,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    queue TEXT
);
CREATE INDEX runs_status ON runs(status, updated_at);
CREATE INDEX runs_queue ON runs(queue, status, created_at);
CREATE TABLE run_steps (
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
    started_at DOUBLE PRECISION NOT NULL,
    finished_at DOUBLE PRECISION,
    PRIMARY KEY (run_id, step_key)
);
"""

# v2: ``run_steps.run_id`` is no longer a foreign key. Its check locked the run's row
# (FOR KEY SHARE) in every step's statement, about a third of a step's server time; a
# step is only dispatched by a statement that reads the run's row anyway (the lease
# fence). Deleting a run still deletes its steps, by a trigger instead of the cascade.
PG_V2 = """
ALTER TABLE run_steps DROP CONSTRAINT IF EXISTS run_steps_run_id_fkey;
CREATE OR REPLACE FUNCTION openprogram_delete_run_steps() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM run_steps WHERE run_id = OLD.id;
    RETURN OLD;
END
$$;
CREATE TRIGGER runs_delete_steps AFTER DELETE ON runs
    FOR EACH ROW EXECUTE FUNCTION openprogram_delete_run_steps();
"""

# v3: ``nodes.session_id`` is no longer a foreign key. Its check ran as a trigger at the
# end of every statement that appends a node (a step's too) and locked the session's row
# FOR KEY SHARE, about a tenth of a step's server time, while the only statement that
# inserts a node (``postgres.APPEND_INSERT``) inserts it from the session row it has just
# locked and updated, so the session exists by construction; SQLite never enforced this
# key (its foreign keys are off). ``sessions.prior_head``: the head the last appended
# node followed, set by the append's one UPDATE from the row it replaces (before v3 the
# append first locked the row with SELECT ... FOR UPDATE to read it). And run-id
# prefixes (``RunStore.runs_by_id_prefix``: ``id COLLATE "C"`` ranges) get the index
# that the primary key's collation cannot give.
PG_V3 = """
ALTER TABLE nodes DROP CONSTRAINT IF EXISTS nodes_session_id_fkey;
ALTER TABLE sessions ADD COLUMN IF NOT EXISTS prior_head TEXT;
CREATE INDEX IF NOT EXISTS runs_id_code_points ON runs (id COLLATE "C");
"""

# v4: ``nodes.step_key``: the step key of a step's node (written by the step statement,
# ``postgres_runs``), read with the graph so prompts fold a resumed run's executions
# (``openprogram.history.fold_attempts``); NULL for every other node.
PG_V4 = """
ALTER TABLE nodes ADD COLUMN IF NOT EXISTS step_key TEXT;
"""

# v5: ``nodes`` and ``run_steps`` leave a tenth of each heap page free. A step inserts its
# node and its dispatch record and, one step later, updates both (the result, the node's
# exit): an update stays HOT — no new entry in any of the table's indexes (three on
# ``nodes``), a smaller WAL record, a dead version the next access prunes — only when the
# new version fits on the page of the old one. Packed full (fillfactor 100), the page a
# row was inserted last onto has no room for its update: about 2-3% of a step's updates
# were not HOT, each writing every index of its table once more. Applies to the pages
# filled from now on (no rewrite: a short lock, also on a large existing store).
PG_V5 = """
ALTER TABLE nodes SET (fillfactor = 90);
ALTER TABLE run_steps SET (fillfactor = 90);
"""

# v6: ``runs`` indexed by Program file, and the runs cancelled before this version keep
# no pause, as SQLite's v10 (``migrations.RUNS_PROGRAM_INDEX``, ``CANCELLED_KEEP_NO_PAUSE``).
PG_V6 = RUNS_PROGRAM_INDEX + ";\n" + CANCELLED_KEEP_NO_PAUSE + ";\n"

#: Every PostgreSQL migration, in order (append new ones; never edit an applied one).
PG_MIGRATIONS: list[Migration] = [
    Migration(1, "sessions, nodes, runs and steps (leases, queues)", PG_V1),
    Migration(2, "run steps without the per-step foreign-key lock", PG_V2),
    Migration(
        3, "appends without the foreign-key check and the row lock; run-id prefix index", PG_V3
    ),
    Migration(4, "the step key of a step's node", PG_V4),
    Migration(5, "room on each page for a step's updates to stay HOT", PG_V5),
    Migration(6, "runs indexed by their Program file; cancelled runs keep no pause", PG_V6),
]


def _refuse_newer(current: int, migrations: list[Migration], location: str) -> None:
    target = max(m.version for m in migrations)
    if current > target:
        raise StoreError(
            f"the store {location} has schema version {current}, newer than this "
            f"OpenProgram knows ({target}); upgrade OpenProgram to use it"
        )


def schema_version(conn: Any, migrations: list[Migration], location: str) -> int:
    """The applied schema version, read without writing anything (0: no schema yet, an
    empty database); ``StoreError`` when it is newer than ``migrations`` know."""
    row = conn.execute("SELECT to_regclass('schema_version') IS NOT NULL").fetchone()
    if not row[0]:
        return 0
    row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
    current = int(row[0] or 0)
    _refuse_newer(current, migrations, location)
    return current


def migrate(conn: Any, migrations: list[Migration], location: str) -> None:
    """Apply the missing migrations on ``conn`` (autocommit connection)."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, "
            "name TEXT NOT NULL, applied_at DOUBLE PRECISION NOT NULL)"
        )
        row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
        current = int(row[0] or 0)
        _refuse_newer(current, migrations, location)
        for m in migrations:
            if m.version <= current:
                continue
            conn.execute(m.script())
            conn.execute(
                "INSERT INTO schema_version (version, name, applied_at) VALUES (%s, %s, %s)",
                (m.version, m.name, time.time()),
            )
