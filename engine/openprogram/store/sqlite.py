"""SQLite backend of the session store (stdlib ``sqlite3``, WAL, one file per root).

Connections: one per thread (``threading.local``), opened on first use with WAL,
``synchronous=NORMAL`` and a busy timeout, so threads and processes can append to one
session at the same time.

Hot path (one recorded node = one autocommit statement, atomic by itself):

* append: one ``INSERT``. Each connection remembers the seq and id of the last node it
  appended to a session; the statement checks inside SQLite that this is still the
  session's last node and that its head is not pinned (otherwise seq comes out NULL, the
  NOT NULL constraint refuses the row, and nothing was written). That check is atomic
  with the insert, so concurrent writers in threads and processes never collide. Rare
  cases (first append on a connection, another writer appended meanwhile, a pinned head,
  ``move_head=False``, an existing id, a missing session) take a ``BEGIN IMMEDIATE``
  transaction that reads the head.
* update: one ``UPDATE`` statement (its own transaction) merging metadata with
  ``json_set``. The stored row is always merged by SQLite; the returned ``Node`` is built
  from the node this process appended (``RETURNING`` reads back nodes it did not), so a
  field another process changed in between may be missing from that returned object.

``append_json``/``close_node`` are the same two writes for callers that already hold
the JSON text (``openprogram.scope``'s recording): no ``Node`` is built or cached.

All of them join a transaction the caller already opened on :meth:`SqliteBackend.connection`
(``conn.in_transaction``), so another module can commit its own rows and a node together.

Other store-backed modules may use :meth:`SqliteBackend.connection` and
:meth:`SqliteBackend.transaction` for their own tables (see ``migrations.py``).

``read_only=True`` (the listing commands) opens with ``mode=ro`` and never migrates, so a
store on a read-only disk or directory can be read; one that needs a migration raises
:class:`MigrationNeeded` (``SessionStore`` then migrates it if it is writable).
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from openprogram.errors import StoreError
from openprogram.store.base import UNSET, StoreBackend, _Unset, node_exit
from openprogram.store.ids import new_id
from openprogram.store.jsoncodec import dumps as _dumps
from openprogram.store.jsoncodec import loads as _loads
from openprogram.store.migrations import (
    MIGRATIONS,
    VERSION_TABLE,
    Migration,
    latest_version,
    split_statements,
)
from openprogram.store.models import Node, Session
from openprogram.store.step_log import NOT_IN_LOG, StepLog
from openprogram.store.step_log import last_id as _log_last_id
from openprogram.store.step_log import last_seq as _log_last_seq
from openprogram.store.wal_checkpointer import WalCheckpointer

DEFAULT_BUSY_TIMEOUT_S = 10.0
_HAS_RETURNING = sqlite3.sqlite_version_info >= (3, 35, 0)

_NODE_COLS = (
    "id, session_id, seq, kind, name, caller_id, predecessor_id, input, output, status, "
    "metadata, created_at, updated_at"
)
#: The columns of ``nodes`` every node has, in the order of :class:`Node`'s row.
NODE_COLUMNS = _NODE_COLS
# What the graph reads select: a node's columns and the step key of a step's node.
_READ_COLS = _NODE_COLS + ", step_key"
# The session's head, its pin, its last node's id and seq (over nodes and the step log).
_HEAD_SQL = (
    f"SELECT head_id, head_pinned, {_log_last_id('?1')}, {_log_last_seq('?1')} "
    "FROM sessions WHERE id = ?1"
)
_INSERT_SQL = (
    f"INSERT INTO nodes ({_NODE_COLS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?) "
    "ON CONFLICT(id) DO NOTHING"
)
# One-statement append (see append_node): the caller's guess of the session's last seq
# (?3) is checked inside the INSERT; a wrong guess or a pinned head / missing session
# yields seq NULL, which the NOT NULL constraint refuses, and the general path runs.
# Straight into ``nodes`` only while the session has no row in the step log (its rows
# come after the session's rows in ``nodes``); else the general append folds it first.
_FAST_APPEND_SQL = (
    f"INSERT INTO nodes ({_NODE_COLS}) VALUES (?1, ?2, "
    f"CASE WHEN {NOT_IN_LOG} AND (SELECT MAX(seq) FROM nodes WHERE session_id = ?2) = ?3 "
    "AND (SELECT head_pinned FROM sessions WHERE id = ?2) = 0 THEN ?3 + 1 END, "
    "?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?12) ON CONFLICT(id) DO NOTHING"
)


def with_duration(duration: str) -> str:
    """The node's metadata with ``duration_s`` set to ``duration`` (an expression whose value
    is the JSON text of the number): ``metadata`` of :func:`node_exit`."""
    return f"json_set(metadata, '$.\"duration_s\"', json({duration}))"


# finish_node: (now, output, the duration's JSON, id).
_FINISH_SQL = (
    "UPDATE nodes SET "
    + node_exit("?1", "?2", "'completed'", with_duration("?3"))
    + " WHERE id = ?4"
)
# close_node: (now, output, status, the duration's JSON, id); the same row update_node
# writes for (output, status, {"duration_s": d}).
_CLOSE_SQL = (
    "UPDATE nodes SET " + node_exit("?1", "?2", "?3", with_duration("?4")) + " WHERE id = ?5"
)
# The session's nodes, each table on its own: SQLite pushes no correlated condition into
# the view ``nodes_all`` (a UNION ALL), so an aggregate over it read every node of the
# store, and a new run's session took seconds in a store of millions of nodes.
_SESSION_NODES = ("FROM nodes WHERE session_id = s.id", "FROM node_log WHERE session_id = s.id")
_SESSION_SELECT = (
    "SELECT s.id, s.name, s.agent_id, "
    f"CASE WHEN s.head_pinned THEN s.head_id ELSE {_log_last_id('s.id')} END, "
    "s.metadata, s.created_at, "
    "MAX(s.updated_at, "
    + ", ".join(f"COALESCE((SELECT MAX(updated_at) {t}), 0)" for t in _SESSION_NODES)
    + "), "
    + " + ".join(f"(SELECT COUNT(*) {t})" for t in _SESSION_NODES)
    + " FROM sessions s"
)

_TERMINAL = frozenset(("completed", "error", "cancelled"))
_JSON_ERRORS = (TypeError, ValueError, RecursionError)
# Nodes appended with status "running" are kept (up to this many) for update().
_OPEN_NODES_MAX = 4096

# Bumped in a forked child so it opens its own connections (never reuse a parent's).
_fork_generation = 0


def _after_fork() -> None:
    global _fork_generation
    _fork_generation += 1


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


class MigrationNeeded(StoreError):
    """A store opened read-only has an older schema and must be migrated first."""


def holds_no_store(path: Path) -> bool:
    """Whether the database file ``path`` holds no store yet: empty (0 bytes) or an SQLite
    database without any table. A reading command takes it for no store rather than
    opening it, which would give it the schema; ``False`` when it cannot tell (a file
    that is not SQLite, an unreadable one: opening it says why)."""
    try:
        if path.stat().st_size == 0:
            return True
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except (OSError, sqlite3.Error):
        return False
    try:
        return conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0] == 0
    except sqlite3.Error:
        return False
    finally:
        conn.close()


def db_error(exc: BaseException, location: str, busy_timeout_s: float) -> StoreError:
    """Translate an ``sqlite3`` error into a one-line ``StoreError`` saying what to do."""
    msg = str(exc) or type(exc).__name__
    low = msg.lower()
    if "not a database" in low or "malformed" in low or "encrypted" in low:
        return StoreError(
            f"{location} is not a readable OpenProgram store (corrupted or not an SQLite "
            f"database: {msg}); move the file aside (nothing was deleted) or use another "
            "store with --store DIR / OPENPROGRAM_STORE"
        )
    if "readonly" in low or "read-only" in low or "unable to open" in low:
        return StoreError(
            f"cannot open the store {location} for writing ({msg}); make its directory "
            "writable or choose another with --store DIR / OPENPROGRAM_STORE"
        )
    if "locked" in low or "busy" in low:
        return StoreError(
            f"the store {location} stayed locked by another writer for more than "
            f"{busy_timeout_s:g}s ({msg}); retry when the other process is done"
        )
    if "disk" in low or "full" in low or "i/o" in low:
        return StoreError(f"cannot write the store {location} ({msg}); check free disk space")
    return StoreError.about(location, msg)


def _node(row: Sequence[Any]) -> Node:
    inp, out, meta = row[7], row[8], row[10]
    return Node(
        row[0],
        row[1],
        row[2],
        row[3],
        row[4],
        row[5],
        row[6],
        None if inp is None else _loads(inp),
        None if out is None else _loads(out),
        row[9],
        _loads(meta) if meta else {},
        row[11],
        row[12],
        row[13] if len(row) > 13 else None,
    )


def _session(row: Sequence[Any]) -> Session:
    return Session(
        id=row[0],
        name=row[1],
        agent_id=row[2],
        head_id=row[3],
        metadata=_loads(row[4]) if row[4] else {},
        created_at=row[5],
        updated_at=row[6],
        node_count=row[7],
    )


class SqliteBackend(StoreBackend):
    """The session store in one SQLite file (see module docstring)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
        migrations: list[Migration] | None = None,
        read_only: bool = False,
    ) -> None:
        self.path = Path(path)
        self.location = str(self.path)
        self.busy_timeout_s = busy_timeout_s
        self.read_only = read_only
        self._migrations = sorted(migrations or MIGRATIONS, key=lambda m: m.version)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._conns: list[tuple[int, sqlite3.Connection]] = []
        self._closed = False
        self._update_sql: dict[tuple[bool, bool, int, bool], str] = {}
        self._open_nodes: dict[str, Node] = {}
        #: This process's side of the step log (``node_log``, schema v8).
        self.step_log = StepLog()
        self._synchronous = "NORMAL"
        #: Background WAL checkpoints for writers that report their commits (durable steps).
        self.checkpointer = None if read_only else WalCheckpointer(self.path)
        self._migrate(self.connection())

    # -- connections -------------------------------------------------------------------

    def connection(self) -> sqlite3.Connection:
        """This thread's connection (autocommit mode: use :meth:`transaction` to group).

        Other store-backed modules (durable runs) may run their own SQL on it.
        """
        local = self._local
        conn: sqlite3.Connection | None = getattr(local, "conn", None)
        if conn is not None and local.gen == _fork_generation and not self._closed:
            return conn
        return self._open()

    def step_cursor(self) -> sqlite3.Cursor:
        """A cursor on this thread's :meth:`connection`, kept for the statements of a step's
        commit (``sqlite_runs``): reused, where ``conn.execute`` makes a cursor each time."""
        self.connection()
        cursor: sqlite3.Cursor = self._local.cursor
        return cursor

    def _open(self) -> sqlite3.Connection:
        if self._closed:
            raise StoreError(f"the store {self.location} is closed; open a new SessionStore")
        conn: sqlite3.Connection | None = None
        try:
            conn = self._connect()
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_s * 1000)}")
            if not self.read_only:
                self._enable_wal(conn)
                conn.execute(f"PRAGMA synchronous = {self._synchronous}")
        except sqlite3.Error as exc:
            if conn is not None:
                conn.close()
            raise db_error(exc, self.location, self.busy_timeout_s) from None
        with self._lock:
            self._conns.append((_fork_generation, conn))
        self._local.conn = conn
        self._local.cursor = conn.cursor()
        self._local.gen = _fork_generation
        # session id -> (seq, id) of the last node this connection appended: a guess the
        # fast append checks in SQL (see append_node).
        self._local.last = {}
        return conn

    def _enable_wal(self, conn: sqlite3.Connection) -> None:
        """``PRAGMA journal_mode = WAL``, waiting up to the busy timeout. Turning a new file
        into WAL needs it to itself; SQLite answers "database is locked" at once, without
        its busy handler, while another connection is opening the same new store (several
        threads or processes starting runs on a fresh store)."""
        deadline = time.monotonic() + self.busy_timeout_s
        delay = 0.001
        while True:
            try:
                conn.execute("PRAGMA journal_mode = WAL").fetchone()
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() + delay > deadline:
                    raise
            time.sleep(delay)
            delay = min(delay * 2, 0.05)

    def _connect(self) -> sqlite3.Connection:
        options: dict[str, Any] = {
            "timeout": self.busy_timeout_s,
            "isolation_level": None,
            "check_same_thread": False,
            "cached_statements": 256,
        }
        if not self.read_only:
            return sqlite3.connect(self.path, **options)
        uri = self.path.resolve().as_uri()
        conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, **options)
        try:
            conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        except sqlite3.OperationalError as exc:
            if "unable to open" not in str(exc):
                conn.close()
                raise
            # A WAL store in a read-only directory cannot get its -shm file: nobody can
            # write there either, so reading it as immutable is exact.
            conn.close()
            conn = sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True, **options)
        return conn

    def set_synchronous(self, level: str) -> None:
        """``PRAGMA synchronous`` of this thread's connection and of those opened later.

        ``"NORMAL"`` (default; WAL: a commit survives a killed process) or ``"FULL"``
        (every commit is fsynced: it also survives power loss). Connections other threads
        opened earlier keep their setting, so call this before sharing the store.
        """
        level = level.upper()
        if level not in ("NORMAL", "FULL"):
            raise StoreError(f"synchronous must be NORMAL or FULL, got {level!r}")
        self._synchronous = level
        try:
            self.connection().execute(f"PRAGMA synchronous = {level}")
        except sqlite3.Error as exc:
            raise self._error(exc) from None

    def forget_cached_state(self) -> None:
        """Drop nodes remembered for :meth:`update_node` (after writing ``nodes`` with your
        own SQL on :meth:`connection`)."""
        self._open_nodes.clear()

    def transaction(self) -> _Transaction:
        """``with backend.transaction() as conn:`` — one ``BEGIN IMMEDIATE`` transaction,
        which starts with a fold of the step log (:mod:`openprogram.store.step_log`).

        Commits on success, rolls back on any exception; ``sqlite3`` errors become
        ``StoreError``. Inside a transaction already open on this thread's connection it
        joins it (the outer owner commits or rolls back).
        """
        return _Transaction(self)

    def close(self) -> None:
        if self.checkpointer is not None:
            self.checkpointer.close()
        with self._lock:
            self._closed = True
            conns, self._conns = self._conns, []
        for generation, conn in conns:
            if generation != _fork_generation:
                continue  # inherited through fork(): the parent still owns it
            try:
                conn.close()
            except sqlite3.Error:
                pass

    def _error(self, exc: BaseException) -> StoreError:
        return db_error(exc, self.location, self.busy_timeout_s)

    # -- schema ------------------------------------------------------------------------

    def schema_version(self) -> int:
        """The version recorded in ``schema_version`` (0 for a new file)."""
        conn = self.connection()
        try:
            row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return 0
            raise self._error(exc) from None
        except sqlite3.Error as exc:
            raise self._error(exc) from None
        return int(row[0] or 0)

    def _check_version(self) -> int:
        """The stored schema version; ``StoreError`` when it is newer than this code."""
        target = latest_version(self._migrations)
        current = self.schema_version()
        if current > target:
            raise StoreError(
                f"the store {self.location} has schema version {current}, newer than this "
                f"OpenProgram knows ({target}); upgrade OpenProgram to use it"
            )
        return current

    def has_tables(self, *names: str) -> bool:
        """Whether every table (or view) in ``names`` exists."""
        marks = ", ".join("?" * len(names))
        rows = self._query(
            "SELECT COUNT(*) FROM sqlite_master WHERE type IN ('table', 'view') "
            f"AND name IN ({marks})",
            names,
        )
        return int(rows[0][0]) == len(set(names))

    def _migrate(self, conn: sqlite3.Connection) -> None:
        target = latest_version(self._migrations)
        current = self._check_version()
        if current == target:
            return
        if self.read_only:
            self.close()
            raise MigrationNeeded(
                f"the store {self.location} has schema version {current} and needs a "
                f"migration to {target}, which cannot happen while it is opened read-only; "
                "run a writing command (e.g. openprogram run) on it once with write access"
            )
        with _Transaction(self, fold=False):  # the step log may not exist yet
            conn.execute(VERSION_TABLE)
            row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
            current = int(row[0] or 0)  # another process may have migrated meanwhile
            for m in self._migrations:
                if m.version <= current:
                    continue
                for statement in split_statements(m.script()):
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO schema_version (version, name, applied_at) VALUES (?, ?, ?)",
                    (m.version, m.name, time.time()),
                )

    # -- sessions ----------------------------------------------------------------------

    def create_session(
        self,
        session_id: str,
        *,
        name: str | None,
        agent_id: str | None,
        metadata: dict[str, Any],
        now: float,
    ) -> Session:
        conn = self.connection()
        try:
            conn.execute(
                "INSERT INTO sessions (id, name, agent_id, head_id, head_pinned, metadata, "
                "created_at, updated_at) VALUES (?, ?, ?, NULL, 0, ?, ?, ?) "
                "ON CONFLICT(id) DO NOTHING",
                (session_id, name, agent_id, _dumps(metadata), now, now),
            )
        except sqlite3.Error as exc:
            raise self._error(exc) from None
        except (TypeError, ValueError) as exc:
            raise StoreError(f"session {session_id!r}: metadata is not JSON ({exc})") from None
        session = self.get_session(session_id)
        assert session is not None
        return session

    def get_session(self, session_id: str) -> Session | None:
        rows = self._query(_SESSION_SELECT + " WHERE s.id = ?", (session_id,))
        return _session(rows[0]) if rows else None

    def list_sessions(self) -> list[Session]:
        rows = self._query(_SESSION_SELECT + " ORDER BY 7 DESC, s.created_at DESC", ())
        return [_session(r) for r in rows]

    def head_id(self, session_id: str) -> str | None:
        rows = self._query(_HEAD_SQL, (session_id,))
        if not rows:
            raise self._no_session(session_id)
        pinned_head, pinned, last_id, _ = rows[0]
        return pinned_head if pinned else last_id

    def set_head(self, session_id: str, node_id: str) -> None:
        with self.transaction() as conn:
            row = conn.execute("SELECT session_id FROM nodes WHERE id = ?", (node_id,)).fetchone()
            if row is None or row[0] != session_id:
                raise self._not_in_session(node_id, session_id)
            conn.execute(
                "UPDATE sessions SET head_id = ?, head_pinned = 1, updated_at = ? WHERE id = ?",
                (node_id, time.time(), session_id),
            )

    # -- nodes -------------------------------------------------------------------------

    def append_node(
        self,
        session_id: str,
        kind: str,
        name: str,
        *,
        node_id: str | None,
        input: Any,
        output: Any,
        status: str,
        caller_id: str | None,
        metadata: dict[str, Any],
        predecessor_id: str | _Unset | None,
        move_head: bool,
        now: float,
        input_json: str | None = None,
    ) -> Node:
        """Append one node (see the module docstring). ``input_json``: the JSON text of
        ``input`` when the caller already has it (any JSON formatting of that value)."""
        nid = node_id or new_id()
        try:
            if input_json is not None:
                in_json: str | None = input_json
            else:
                in_json = None if input is None else _dumps(input)
            out_json = None if output is None else _dumps(output)
            meta_json = _dumps(metadata) if metadata else "{}"
        except _JSON_ERRORS as exc:
            raise StoreError(
                f"node {name!r}: input, output and metadata must be JSON values ({exc})"
            ) from None
        conn = self.connection()
        last = self._local.last if move_head else None
        guess = last.get(session_id) if last is not None else None
        try:
            done = False
            if guess is not None:
                seq = guess[0] + 1
                pred = guess[1] if predecessor_id is UNSET else predecessor_id
                try:
                    done = (
                        conn.execute(
                            _FAST_APPEND_SQL,
                            (
                                nid,
                                session_id,
                                guess[0],
                                kind,
                                name,
                                caller_id,
                                pred,
                                in_json,
                                out_json,
                                status,
                                meta_json,
                                now,
                            ),
                        ).rowcount
                        == 1
                    )
                except sqlite3.IntegrityError:  # another writer appended: no guess
                    pass
            if not done:
                general = self._append_general(
                    conn,
                    (nid, session_id, kind, name, caller_id, in_json, out_json, status, meta_json),
                    predecessor_id,
                    move_head,
                    now,
                )
                if isinstance(general, Node):
                    return general
                seq, pred = general
        except sqlite3.Error as exc:
            raise self._error(exc) from None
        if move_head:
            self._local.last[session_id] = (seq, nid)
        node = Node(
            nid,
            session_id,
            seq,
            kind,
            name,
            caller_id,
            pred,
            input,
            output,
            status,
            metadata,
            now,
            now,
        )
        if status == "running":
            open_nodes = self._open_nodes
            if len(open_nodes) >= _OPEN_NODES_MAX:
                open_nodes.clear()
            open_nodes[nid] = node
        return node

    def append_json(
        self,
        session_id: str,
        kind: str,
        name: str,
        caller_id: str | None,
        in_json: str | None,
        out_json: str | None,
        status: str,
        meta_json: str,
        now: float,
    ) -> tuple[str, int]:
        """Append a node whose JSON columns the caller already encoded; ``(id, seq)``.

        The lean form of :meth:`append_node` for recording hot paths: a fresh id, the
        head as predecessor, the head moved; no :class:`Node` is built (so a later
        :meth:`update_node` of it reads the row back).
        """
        nid = new_id()
        local = self._local
        conn: sqlite3.Connection | None = getattr(local, "conn", None)
        if conn is None or local.gen != _fork_generation or self._closed:
            conn = self._open()
        last = local.last
        guess = last.get(session_id)
        try:
            if guess is not None:
                try:
                    if (
                        conn.execute(
                            _FAST_APPEND_SQL,
                            (
                                nid, session_id, guess[0], kind, name, caller_id, guess[1],
                                in_json, out_json, status, meta_json, now,
                            ),
                        ).rowcount
                        == 1
                    ):  # fmt: skip
                        seq = guess[0] + 1
                        last[session_id] = (seq, nid)
                        return nid, seq
                except sqlite3.IntegrityError:  # another writer appended: no guess
                    pass
            general = self._append_general(
                conn,
                (nid, session_id, kind, name, caller_id, in_json, out_json, status, meta_json),
                UNSET,
                True,
                now,
            )
        except sqlite3.Error as exc:
            raise self._error(exc) from None
        if isinstance(general, Node):  # pragma: no cover - a fresh random id exists
            return general.id, general.seq
        last[session_id] = (general[0], nid)
        return nid, general[0]

    def last_appended(self, session_id: str) -> tuple[int, str] | None:
        """``(seq, id)`` of the node this thread appended last to the session (call after
        :meth:`connection`): a guess of its last node that an insert checks, as
        :meth:`append_json` does."""
        return self._local.last.get(session_id)

    def note_appended(self, session_id: str, seq: int, node_id: str) -> None:
        """This thread appended the node ``node_id`` at ``seq`` (the next guess)."""
        self._local.last[session_id] = (seq, node_id)

    def forget_open_node(self, node_id: str) -> None:
        """The running node ``node_id`` is being finished by the caller's own statement."""
        if self._open_nodes:
            self._open_nodes.pop(node_id, None)

    def close_node(
        self, node_id: str, status: str, output_json: str | None, duration_s: float, now: float
    ) -> None:
        """Set a node's ``output`` (JSON text or ``None``) and ``status`` and merge
        ``{"duration_s": duration_s}`` into its metadata: one autocommit statement (or
        the caller's open transaction). The same row :meth:`update_node` would write."""
        if self._open_nodes:
            self._open_nodes.pop(node_id, None)
        local = self._local
        conn: sqlite3.Connection | None = getattr(local, "conn", None)
        if conn is None or local.gen != _fork_generation or self._closed:
            conn = self._open()
        d = duration_s
        d_json = repr(d) if d.__class__ is float and d - d == 0 else _dumps(d)  # finite: repr
        try:
            cur = conn.execute(_CLOSE_SQL, (now, output_json, status, d_json, node_id))
        except sqlite3.OperationalError as exc:
            if "json" not in str(exc).lower():
                raise self._error(exc) from None
            self._update_in_python(
                node_id, None if output_json is None else _loads(output_json), output_json,
                status, {"duration_s": duration_s}, now,
            )  # fmt: skip
            return
        except sqlite3.Error as exc:
            raise self._error(exc) from None
        if cur.rowcount == 0:
            params = (now, output_json, status, d_json, node_id)
            if self._write_folded(_CLOSE_SQL, params)[0] == 0:
                raise self._no_node(node_id)

    def _write_folded(self, sql: str, params: Sequence[Any]) -> tuple[int, list[Any]]:
        """Run the write ``sql`` on one node, which found no row in ``nodes``, again after a
        fold of the step log (the node may have been a logged step's): ``(rows written,
        rows returned)``. In the caller's open transaction when there is one."""
        conn = self.connection()
        try:
            if conn.in_transaction:
                self.step_log.fold(conn)
                cur = conn.execute(sql, params)
                return cur.rowcount, cur.fetchall()
            with self.transaction() as conn:
                cur = conn.execute(sql, params)
                rows = cur.fetchall()
                return max(cur.rowcount, len(rows)), rows
        except sqlite3.Error as exc:
            raise self._error(exc) from None

    def _append_general(
        self,
        conn: sqlite3.Connection,
        values: tuple[Any, ...],
        predecessor_id: str | _Unset | None,
        move_head: bool,
        now: float,
    ) -> tuple[int, str | None] | Node:
        """Append in an explicit transaction (joins the caller's one when open).

        Returns ``(seq, predecessor_id)`` of the new node, or the stored node when its id
        already exists.
        """
        nid, session_id = values[0], values[1]
        own = not conn.in_transaction
        if own:
            conn.execute("BEGIN IMMEDIATE")
        try:
            self.step_log.fold(conn)
            row = conn.execute(_HEAD_SQL, (session_id,)).fetchone()
            if row is None:
                raise self._no_session(session_id)
            if conn.execute("SELECT 1 FROM nodes WHERE id = ?", (nid,)).fetchone():
                if own:
                    conn.execute("ROLLBACK")
                return self._existing(nid, session_id)
            pinned_head, pinned, last_id, last_seq = row
            head = pinned_head if pinned else last_id
            pred = head if predecessor_id is UNSET else predecessor_id
            seq = (last_seq or 0) + 1
            kind, name, caller_id, in_json, out_json, status, meta_json = values[2:]
            conn.execute(
                _INSERT_SQL,
                (
                    nid,
                    session_id,
                    seq,
                    kind,
                    name,
                    caller_id,
                    pred,
                    in_json,
                    out_json,
                    status,
                    meta_json,
                    now,
                    now,
                ),
            )
            if move_head:
                if pinned:  # back to "head = latest node", which is this one
                    conn.execute(
                        "UPDATE sessions SET head_id = NULL, head_pinned = 0, "
                        "updated_at = ? WHERE id = ?",
                        (now, session_id),
                    )
            elif not pinned:  # keep the head where it was
                conn.execute(
                    "UPDATE sessions SET head_id = ?, head_pinned = 1, updated_at = ? WHERE id = ?",
                    (head, now, session_id),
                )
            if own:
                conn.execute("COMMIT")
        except BaseException:
            if own and conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return seq, pred

    def _existing(self, node_id: str, session_id: str) -> Node:
        node = self.get_node(node_id)
        if node is None:  # pragma: no cover - the conflicting row cannot vanish
            raise StoreError(f"node {node_id!r} conflicts but cannot be read; retry")
        if node.session_id != session_id:
            raise StoreError(
                f"node id {node_id!r} already belongs to session {node.session_id!r}, "
                f"not {session_id!r}; use a fresh node id"
            )
        return node

    def update_node(
        self,
        node_id: str,
        *,
        output: Any | _Unset,
        status: str | None,
        metadata: dict[str, Any] | None,
        now: float,
    ) -> Node:
        meta = metadata or {}
        has_output = output is not UNSET
        try:
            out_json = None if not has_output or output is None else _dumps(output)
            meta_items = [(k, _dumps(v)) for k, v in meta.items()]
        except _JSON_ERRORS as exc:
            raise StoreError(
                f"node {node_id!r}: output and metadata must be JSON values ({exc})"
            ) from None
        safe_keys = _HAS_RETURNING
        for k in meta:
            if '"' in k or "\\" in k:
                safe_keys = False
        if not safe_keys:
            return self._update_in_python(node_id, output, out_json, status, meta, now)
        known = self._open_nodes.get(node_id)
        key = (has_output, status is not None, len(meta_items), known is None)
        sql = self._update_sql.get(key) or self._build_update_sql(key)
        params: list[Any] = [now]
        if has_output:
            params.append(out_json)
        if status is not None:
            params.append(status)
        for k, v in meta_items:
            params.append(f'$."{k}"')
            params.append(v)
        params.append(node_id)
        try:
            cur = self.connection().execute(sql, params)
            rows = cur.fetchall() if known is None else None
        except sqlite3.OperationalError as exc:
            if "json" not in str(exc).lower():
                raise self._error(exc) from None
            # e.g. stored metadata holding NaN: merge in Python instead.
            return self._update_in_python(node_id, output, out_json, status, meta, now)
        except sqlite3.Error as exc:
            raise self._error(exc) from None
        if known is None:
            if not rows:
                rows = self._write_folded(sql, params)[1]
            if not rows:
                raise self._no_node(node_id)
            return _node(rows[0])
        if cur.rowcount == 0 and self._write_folded(sql, params)[0] == 0:
            self._open_nodes.pop(node_id, None)
            raise self._no_node(node_id)
        node = Node(
            known.id,
            known.session_id,
            known.seq,
            known.kind,
            known.name,
            known.caller_id,
            known.predecessor_id,
            known.input,
            output if has_output else known.output,
            status if status is not None else known.status,
            {**known.metadata, **meta} if meta else known.metadata,
            known.created_at,
            now,
        )
        if node.status in _TERMINAL:
            self._open_nodes.pop(node_id, None)
        else:
            self._open_nodes[node_id] = node
        return node

    def finish_node(
        self,
        conn: sqlite3.Connection,
        node_id: str,
        output_json: str,
        duration_s: float,
        now: float,
    ) -> None:
        """Mark a running node ``completed`` with ``output_json`` (JSON text) and merge
        ``duration_s`` into its metadata: one statement on ``conn`` (the caller's
        transaction, or autocommit). Same row as :meth:`update_node` would write."""
        if self._open_nodes:
            self._open_nodes.pop(node_id, None)
        d = duration_s
        d_json = repr(d) if d.__class__ is float and d - d == 0 else _dumps(d)  # finite: repr
        try:
            if conn.execute(_FINISH_SQL, (now, output_json, d_json, node_id)).rowcount == 0:
                self._write_folded(_FINISH_SQL, (now, output_json, d_json, node_id))
        except sqlite3.OperationalError as exc:
            if "json" not in str(exc).lower():
                raise self._error(exc) from None
            self._update_in_python(
                node_id, _loads(output_json), output_json, "completed",
                {"duration_s": duration_s}, now,
            )  # fmt: skip
        except sqlite3.Error as exc:
            raise self._error(exc) from None

    def _build_update_sql(self, key: tuple[bool, bool, int, bool]) -> str:
        has_output, has_status, n_meta, returning = key
        sets = ["updated_at = ?"]
        if has_output:
            sets.append("output = ?")
        if has_status:
            sets.append("status = ?")
        if n_meta:
            sets.append("metadata = json_set(metadata" + ", ?, json(?)" * n_meta + ")")
        sql = f"UPDATE nodes SET {', '.join(sets)} WHERE id = ?"
        if returning:
            sql += f" RETURNING {_NODE_COLS}"
        self._update_sql[key] = sql
        return sql

    def _update_in_python(
        self,
        node_id: str,
        output: Any,
        out_json: str | None,
        status: str | None,
        meta: dict[str, Any],
        now: float,
    ) -> Node:
        with self.transaction() as conn:
            row = conn.execute(
                f"SELECT {_NODE_COLS} FROM nodes WHERE id = ?", (node_id,)
            ).fetchone()
            if row is None:
                raise self._no_node(node_id)
            node = _node(row)
            node.metadata.update(meta)
            if output is not UNSET:
                node.output = output
            else:
                out_json = row[8]
            if status is not None:
                node.status = status
            node.updated_at = now
            self._open_nodes.pop(node_id, None)
            conn.execute(
                "UPDATE nodes SET output = ?, status = ?, metadata = ?, updated_at = ? "
                "WHERE id = ?",
                (out_json, node.status, _dumps(node.metadata), now, node_id),
            )
        return node

    def _no_node(self, node_id: str) -> StoreError:
        return StoreError(f"node {node_id!r} does not exist in {self.location}")

    def get_node(self, node_id: str) -> Node | None:
        rows = self._query(f"SELECT {_READ_COLS} FROM nodes_all WHERE id = ?", (node_id,))
        return _node(rows[0]) if rows else None

    def list_nodes(self, session_id: str) -> list[Node]:
        rows = self._query(
            f"SELECT {_READ_COLS} FROM nodes_all WHERE session_id = ? ORDER BY seq",
            (session_id,),
        )
        return [_node(r) for r in rows]

    def children(self, node_id: str) -> list[Node]:
        rows = self._query(
            f"SELECT {_READ_COLS} FROM nodes_all WHERE session_id = "
            "(SELECT session_id FROM nodes_all WHERE id = ?1) AND caller_id = ?1 ORDER BY seq",
            (node_id,),
        )
        return [_node(r) for r in rows]

    def _query(self, sql: str, params: Sequence[Any]) -> list[Any]:
        try:
            return self.connection().execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise self._error(exc) from None


class _Transaction:
    """Context manager of :meth:`SqliteBackend.transaction` (joins an open transaction)."""

    def __init__(self, backend: SqliteBackend, *, fold: bool = True) -> None:
        self._backend = backend
        self._conn: sqlite3.Connection | None = None
        self._own = True
        self._fold = fold

    def __enter__(self) -> sqlite3.Connection:
        conn = self._backend.connection()
        self._own = not conn.in_transaction
        if self._own:
            try:
                conn.execute("BEGIN IMMEDIATE")
                if self._fold:
                    self._backend.step_log.fold(conn)
            except sqlite3.Error as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise self._backend._error(exc) from None
        self._conn = conn
        return conn

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        conn = self._conn
        assert conn is not None
        self._conn = None
        if self._own:
            try:
                if exc is None:
                    conn.execute("COMMIT")
                elif conn.in_transaction:
                    conn.execute("ROLLBACK")
            except sqlite3.Error as err:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise self._backend._error(err) from None
        if isinstance(exc, sqlite3.Error):
            raise self._backend._error(exc) from None
