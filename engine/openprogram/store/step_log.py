"""The step log of the SQLite store: where a durable step's commit writes its node.

A step's commit writes two node rows: the previous step's exit (an update) and the new
step's running node (an insert). In ``nodes`` that insert touches four B-trees (the
table, its id, ``(session_id, seq)`` and ``(run_id, step_key)``); in ``node_log``
(schema v8: the columns of ``nodes`` plus ``lid INTEGER PRIMARY KEY``, no other index)
it touches one, and the update lands on the same page. The rows are moved into ``nodes``
in batches — a *fold*: one ``INSERT ... SELECT`` and one ``DELETE`` in the transaction
that needs it — which writes each B-tree page once for many rows.

Rules that keep both tables one DAG (each enforced here or by the statements below):

* Only the step commit (:mod:`openprogram.store.sqlite_runs`) inserts into the log, and
  only when its guard holds: the caller's guess of the session's last seq is the last seq
  over both tables, the head is not pinned, the run's lease is held and no record of the
  step key exists in ``nodes`` (a key this process logged since its last fold is never
  dispatched into the log again: :meth:`StepLog.may_log`).
* Every other write transaction folds first (:meth:`StepLog.fold`): ``transaction()``,
  the general append, the by-id updates that found no row in ``nodes``, the step
  commit's general path. So every statement that writes ``nodes`` sees every node.
* A session's rows in the log therefore come after its rows in ``nodes`` (higher seqs,
  in ``lid`` order): its last node is its last log row if it has one.
* Readers read the view ``nodes_all`` (``run_steps`` reads it too); the log holds at
  most :data:`FOLD_AFTER` rows per writing process plus what a killed process left,
  which the run's next owner folds before it executes (``close_interrupted_nodes``).

A fold never changes a node's id, seq or content, so a writer whose in-memory state
(:class:`StepLog`) is stale — another process folded its rows — finds no row by ``lid``
and writes ``nodes`` instead; no guard trusts that state for correctness.

What a row still in the log proves: since its insert, every write to the store was one
that does not fold — a step commit's fast path, a plain append to a session with no row
in the log, an update by id of a node in ``nodes`` — or it would have emptied the log,
and none of those writes ``runs`` or ``sessions``. So the lease the row was inserted
under still holds, with no cancel or pause requested since, and the session's head is
still unpinned. A step's commit that finds its previous step's row in the log (by
``lid``, in the same transaction, with no fold between) therefore completes it without
the lease check and dispatches the next step without the lease and head checks
(``_CONTINUE_IN_LOG_SQL`` in :mod:`openprogram.store.sqlite_runs`); the seq and the key
checks stay, in SQL.
"""

from __future__ import annotations

import sqlite3

from openprogram.store.migrations import FOLD_LOG_DELETE, FOLD_LOG_INSERT

#: A writing process folds its log rows into ``nodes`` once it has logged this many.
FOLD_AFTER = 256

#: Whether the log holds any row (the check before a fold).
_ANY_SQL = "SELECT 1 FROM node_log LIMIT 1"


def last_seq(session: str) -> str:
    """SQL: the last seq of the session ``session`` (an SQL expression) over both tables."""
    return (
        f"COALESCE((SELECT seq FROM node_log WHERE session_id = {session} "
        f"ORDER BY lid DESC LIMIT 1), (SELECT MAX(seq) FROM nodes WHERE session_id = {session}))"
    )


def last_id(session: str) -> str:
    """SQL: the id of the session's last node over both tables."""
    return (
        f"COALESCE((SELECT id FROM node_log WHERE session_id = {session} "
        "ORDER BY lid DESC LIMIT 1), "
        f"(SELECT id FROM nodes WHERE session_id = {session} ORDER BY seq DESC LIMIT 1))"
    )


#: SQL: the caller's guess — ?3 the last seq of session ?2, ?6 the id of that last node,
#: which the caller appended — holds over both tables (``GUESS_HOLDS_SEQ``) and the
#: session's head is not pinned: the condition of a step's insert into the log. The first
#: test is the common case in one read: ?6 is the log's last row, so (the session's rows
#: in the log come after its rows in ``nodes``) it is the session's last node.
GUESS_HOLDS_SEQ = (
    f"((SELECT id FROM node_log ORDER BY lid DESC LIMIT 1) = ?6 OR {last_seq('?2')} = ?3)"
)
GUESS_HOLDS = f"{GUESS_HOLDS_SEQ} AND (SELECT head_pinned FROM sessions WHERE id = ?2) = 0"

#: SQL: the session ?2 has no row in the log (an append straight into ``nodes`` needs it).
NOT_IN_LOG = "NOT EXISTS (SELECT 1 FROM node_log WHERE session_id = ?2)"


class StepLog:
    """One process's side of the log: the fold, and what it logged since its last fold.

    The bookkeeping is a hint for speed only (see the module docstring); it is read and
    written inside write transactions, which SQLite runs one at a time (so one thread at a
    time: no lock of its own).
    """

    def __init__(self) -> None:
        #: node id -> (lid, whether its metadata was ``{}``) of the running step nodes
        #: this process logged.
        self._lids: dict[str, tuple[int, bool]] = {}
        #: (run id, step key) of the steps this process logged.
        self._keys: set[tuple[str, str]] = set()
        self._count = 0

    def fold(self, conn: sqlite3.Connection) -> None:
        """Move every log row into ``nodes``, inside ``conn``'s open write transaction."""
        if conn.execute(_ANY_SQL).fetchone() is not None:
            conn.execute(FOLD_LOG_INSERT)
            conn.execute(FOLD_LOG_DELETE)
        self._lids.clear()
        self._keys.clear()
        self._count = 0

    def due(self) -> bool:
        """Whether this process logged :data:`FOLD_AFTER` rows since its last fold."""
        return self._count >= FOLD_AFTER

    def may_log(self, run_id: str, key: str) -> bool:
        """Whether the step ``key`` of ``run_id`` may go to the log (not logged before)."""
        return (run_id, key) not in self._keys

    def logged(self, node_id: str, lid: int, run_id: str, key: str, plain: bool) -> None:
        """This process logged the running node ``node_id`` of step ``key`` as ``lid``
        (``plain``: with the metadata ``{}``)."""
        self._lids[node_id] = (lid, plain)
        self._keys.add((run_id, key))
        self._count += 1

    def take_lid(self, node_id: str) -> tuple[int, bool] | None:
        """``(lid, plain)`` this process logged ``node_id`` with (forgotten once taken)."""
        return self._lids.pop(node_id, None) if self._lids else None
