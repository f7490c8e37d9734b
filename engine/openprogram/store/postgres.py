"""PostgreSQL backend of the session store (psycopg 3 with a connection pool).

``--store postgresql://user@host/db`` (or ``OPENPROGRAM_STORE``) selects it. Sessions and
nodes keep the SQLite semantics (:class:`~openprogram.store.base.StoreBackend`):

* append: one statement (a CTE) locks the session row, takes ``seq = last_seq + 1``,
  resolves the default predecessor (the head) and moves the head, then inserts the node —
  concurrent writers on any machine serialise on the session row and never collide.
* JSON columns hold JSON text (as in SQLite): what was stored is read back unchanged.
* A transaction open on this thread (:meth:`PostgresBackend.transaction`) is joined by
  every method called inside it. A step's records need none: the run store writes them
  in one statement (``postgres_runs``).
* The pool hands out a connection without a round trip to check it (:func:`check_idle`).
* A database that went away is waited for at most ``$OPENPROGRAM_PG_WAIT_S`` seconds
  (:func:`wait_seconds`) from the first statement that found it gone: the statements
  after it (a run's last writes before it stops) only take a connection the pool got
  back meanwhile, so giving up takes that long, not that long per statement.

Migrations (:data:`PG_MIGRATIONS`) run under a transaction-level advisory lock, so many
processes starting at once against a new database apply each migration exactly once.
"""

from __future__ import annotations

import logging
import os
import re
import select
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from openprogram.errors import StoreError
from openprogram.store.base import UNSET, StoreBackend, _Unset
from openprogram.store.ids import new_id
from openprogram.store.jsoncodec import dumps as _dumps
from openprogram.store.jsoncodec import loads as _loads
from openprogram.store.lease import env_seconds
from openprogram.store.models import Node, Session
from openprogram.store.pg_hot import NOT_PREPARED, UNIQUE_VIOLATION, HotStatement
from openprogram.store.pg_migrations import PG_MIGRATIONS, migrate, schema_version
from openprogram.url_secrets import redact_url as redact
from openprogram.url_secrets import scrub_url_password as scrub

URL_SCHEMES = ("postgresql://", "postgres://")
_NODE_COLS = (
    "id, session_id, seq, kind, name, caller_id, predecessor_id, input, output, status, "
    "metadata, created_at, updated_at"
)
# What the graph reads select: a node's columns and the step key of a step's node.
_READ_COLS = _NODE_COLS + ", step_key"
_SESSION_SELECT = (
    "SELECT s.id, s.name, s.agent_id, CASE WHEN s.head_pinned THEN s.head_id ELSE s.last_id END, "
    "s.metadata, s.created_at, GREATEST(s.updated_at, COALESCE((SELECT MAX(updated_at) "
    "FROM nodes WHERE session_id = s.id), 0)), s.last_seq_count FROM sessions s"
)
# Appending a node, in one statement: ``APPEND_CTES`` bumps the session's seq and moves or
# keeps its head (only when ``{where}`` holds: the step statement of ``postgres_runs``
# appends its node only when its dispatch was written), in one UPDATE whose row lock
# orders concurrent appends; then ``APPEND_INSERT`` inserts the node. The UPDATE returns
# the node's default predecessor (the head before it) through ``prior_head``, which it
# sets from the row it replaces: RETURNING sees only the new row (schema v3).
APPEND_CTES = """
upd AS (
    UPDATE sessions SET last_seq = last_seq + 1, last_seq_count = last_seq_count + 1,
        prior_head = CASE WHEN head_pinned THEN head_id ELSE last_id END,
        last_id = %(nid)s,
        head_pinned = NOT %(move)s,
        head_id = CASE WHEN %(move)s THEN NULL WHEN head_pinned THEN head_id ELSE last_id END
    WHERE id = %(sid)s {where}
    RETURNING last_seq AS seq, prior_head AS head
)"""
_APPEND_INSERT = """
INSERT INTO nodes ({columns})
SELECT %(nid)s, %(sid)s, upd.seq, %(kind)s, %(name)s, %(caller)s,
    CASE WHEN %(pred_default)s THEN upd.head ELSE %(pred)s END,
    %(input)s, %(output)s, %(status)s, %(meta)s, %(now)s, %(now)s{values} FROM upd
RETURNING seq, predecessor_id
"""
APPEND_INSERT = _APPEND_INSERT.format(columns=_NODE_COLS, values="")
#: ``APPEND_INSERT`` of a step's node: with its step key (``%(key)s``, schema v4).
STEP_APPEND_INSERT = _APPEND_INSERT.format(columns=_NODE_COLS + ", step_key", values=", %(key)s")
_APPEND_SQL = "WITH " + APPEND_CTES.format(where="") + APPEND_INSERT
# A node's update (``update_node``): its output when given, its status when given, its
# metadata when given, and the time; returns the node. ``old`` NULL: only when that merges
# nothing into a stored object (no metadata given, or ``{}`` stored) — one statement, the
# common case; else ``old`` is the stored metadata the given one was merged into (in
# Python, as ``dict.update`` merges: jsonb would rewrite the object), and the update is
# made only if it is still stored (compare-and-set). No row: the node is missing, or the
# condition failed.
_UPDATE_SQL = f"""
UPDATE nodes SET
    output = CASE WHEN %(set_output)s THEN %(output)s ELSE output END,
    status = COALESCE(%(status)s, status),
    metadata = COALESCE(%(meta)s, metadata),
    updated_at = %(now)s
WHERE id = %(id)s AND CASE WHEN %(old)s::text IS NULL
    THEN %(meta)s::text IS NULL OR metadata = '{{}}' ELSE metadata = %(old)s END
RETURNING {_NODE_COLS}
"""


def normalize_url(location: str) -> str | None:
    """The PostgreSQL URL a ``--store`` value names, else ``None``. Accepts the form a
    ``pathlib.Path`` leaves of a URL (``postgresql:/host/db``: one slash collapsed), so a
    URL passed through a path setting (the language server's store) still works."""
    for scheme in URL_SCHEMES:
        if location.startswith(scheme):
            return location
        collapsed = scheme[:-1]
        if location.startswith(collapsed) and not location.startswith(scheme):
            return scheme + location[len(collapsed) :]
    return None


def is_url(location: object) -> bool:
    """Whether a ``--store`` value names a PostgreSQL database."""
    return isinstance(location, str) and normalize_url(location) is not None


#: A libpq keyword/value connection string (``host=db dbname=app``): its first keyword.
_CONNINFO = re.compile(
    r"\s*(?:host|hostaddr|port|dbname|user|password|passfile|service|sslmode|options"
    r"|application_name|connect_timeout|target_session_attrs)\s*=",
    re.IGNORECASE,
)
_CONNINFO_PASSWORD = re.compile(
    r"(?<![\w?&])(password\s*=\s*)('(?:[^'\\]|\\.)*'?|[^\s'&#]+)", re.IGNORECASE
)


def is_conninfo(location: object) -> bool:
    """Whether a ``--store`` value is a libpq keyword string (``host=db dbname=app
    password=...``): no store takes one (see :func:`conninfo_error`)."""
    return isinstance(location, str) and _CONNINFO.match(location) is not None


def conninfo_error(location: str) -> StoreError:
    """The error for a libpq keyword string given as a store, without its password."""
    return StoreError(
        f"store {redact_text(location)!r} is a libpq keyword string: give the database as "
        "a URL, postgresql://USER@HOST:PORT/DBNAME (or a directory for a SQLite store)"
    )


#: A URL's scheme (two characters or more: ``C:/data`` is a Windows path) and the ``:/``
#: after it — ``://`` as written, ``:/`` once a ``pathlib.Path`` collapsed it.
_ANY_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]+):/")


def other_scheme(location: object) -> str | None:
    """The scheme of a ``--store`` value that is a URL of no supported scheme
    (``pgsql://``, ``mysql://``, ``postgresql+psycopg://``), else ``None``."""
    if not isinstance(location, str) or is_url(location):
        return None
    match = _ANY_SCHEME.match(location)
    return match.group(1) if match else None


def refused(location: str | os.PathLike[str]) -> StoreError | None:
    """Why no store takes ``location``, else ``None``: a libpq keyword string, or a URL of
    a scheme other than ``postgresql://`` / ``postgres://``. Taken as a directory, either
    would become folders named after it (its password in their names and in every message
    that shows the store); the error hides the password."""
    text = os.fspath(location)
    if is_conninfo(text):
        return conninfo_error(text)
    scheme = other_scheme(text)
    if scheme is None:
        return None
    why = (
        f"store {redact(text)!r}: unsupported URL scheme {scheme + '://'!r}; a store is a "
        "postgresql:// (or postgres://) URL or a directory"
    )
    if scheme.lower().startswith(("postgresql+", "postgres+")):  # SQLAlchemy's dialect+driver
        written = text[len(scheme) :]
        rest = written[3:] if written.startswith("://") else written[2:]  # "//" collapsed
        why += f" (without SQLAlchemy's driver: {redact('postgresql://' + rest)})"
    return StoreError(why)


#: A URL in a message: a PostgreSQL one (also collapsed), or one of any scheme.
_URL_IN_TEXT = re.compile(r"(?:postgres(?:ql)?:|[A-Za-z][A-Za-z0-9+.-]+:/)\S*")


def redacted_location(store: str | os.PathLike[str]) -> str:
    """A store as messages show it: a URL (or a libpq keyword string) without its
    password, else the path as given."""
    text = os.fspath(store)
    if is_url(text) or other_scheme(text) is not None:
        return redact(text)
    return redact_text(text) if is_conninfo(text) else text


def redact_text(text: str) -> str:
    """``text`` with the password of every URL in it (any scheme), and of every libpq
    ``password=...`` keyword, replaced by ``***`` (an argument echoed back by a usage
    error: ``--store URL`` where none is taken)."""
    text = _URL_IN_TEXT.sub(lambda match: redact(match.group(0)), text)
    return _CONNINFO_PASSWORD.sub(lambda match: match.group(1) + "***", text)


_IDLE = 0  # libpq's PQTRANS_IDLE (psycopg.pq.TransactionStatus.IDLE)
_CONNECTION_OK = 0  # libpq's CONNECTION_OK (psycopg.pq.ConnStatus.OK)
# libpq's ExecStatusType (psycopg.pq.ExecStatus) and PG_DIAG_SQLSTATE (pq.DiagnosticField)
_COMMAND_OK, _TUPLES_OK, _FATAL_ERROR = 1, 2, 7
_SQLSTATE = ord("C")


def _idle(conn: Any) -> bool:
    """Whether ``conn`` is open, idle and has nothing to read on its socket — a healthy
    idle connection has nothing to read unless the server closed it or sent it something
    (a restart's termination notice). No round trip."""
    try:
        poller = select.poll()
        poller.register(conn.fileno(), select.POLLIN | select.POLLPRI)
        return _quiet(conn.pgconn, poller)
    except Exception:  # closed meanwhile, or no socket
        return False


def _quiet(pgconn: Any, poller: Any) -> bool:
    """:func:`_idle` for a connection whose socket ``poller`` watches already (a held
    connection's, checked before each of its statements)."""
    return bool(
        pgconn.status == _CONNECTION_OK
        and pgconn.transaction_status == _IDLE
        and not poller.poll(0)
    )


def check_idle(conn: Any) -> None:
    """The pool's check of a connection it hands out: a round trip (``ConnectionPool.
    check_connection``, which raises for a dead one: the pool replaces it) only when
    :func:`_idle` cannot tell it healthy."""
    if not _idle(conn):
        from psycopg_pool import ConnectionPool

        ConnectionPool.check_connection(conn)


def _node(row: Sequence[Any]) -> Node:
    inp, out, meta = row[7], row[8], row[10]
    return Node(
        row[0], row[1], row[2], row[3], row[4], row[5], row[6],
        None if inp is None else _loads(inp), None if out is None else _loads(out),
        row[9], _loads(meta) if meta else {}, row[11], row[12],
        row[13] if len(row) > 13 else None,
    )  # fmt: skip


# The pool logs each failed reconnect as a multi-line warning; with no logging configured,
# Python prints those on stderr (``logging.lastResort``), dozens while a database is down.
# The store reports a lost database itself, as one error; an application that configures
# logging still receives the pool's records (they propagate past this handler).
logging.getLogger("psycopg.pool").addHandler(logging.NullHandler())
#: How often a listening thread (:meth:`PostgresBackend.listen`) looks at its stop event:
#: a returning worker waits that long at most for it (a wait of libpq's, no round trip).
_LISTEN_CHECK_S = 0.1

CONNECT_TIMEOUT_S = 10
"""How long opening a connection waits for the server to answer: the first one and every
one the pool opens later (a reconnect to an unreachable host gives up too). A
``connect_timeout`` in the URL wins (psycopg lets keyword arguments override the URL's, so
this default is only passed where the URL has none)."""

KEEPALIVES: dict[str, int] = {
    "keepalives": 1,
    "keepalives_idle": 10,
    "keepalives_interval": 5,
    "keepalives_count": 3,
    "tcp_user_timeout": 30_000,
}
"""libpq options of a reader's connections (``PostgresBackend(keepalives=True)``): over
TCP, a connection whose server is cut off by the network fails in about 25 s (no answer
to keepalive probes, or data unacknowledged for 30 s) instead of waiting for ever. A
parameter the URL gives itself wins; Unix-socket connections ignore them."""

WAIT_ENV = "OPENPROGRAM_PG_WAIT_S"
DEFAULT_WAIT_S = 30.0
LAST_TRY_S = 0.1
"""How long a statement waits for a connection once the database has been away for the
whole wait: the pool's own reconnection is still taken (a worker's next claim after the
database came back), the give-up path is not made longer."""


def wait_seconds() -> float:
    """How long a PostgreSQL store waits for a database that went away (a restart, a
    failover) before the statement, and with it the run, gives up: ``$OPENPROGRAM_PG_WAIT_S``
    seconds, or 30 when unset or empty (``ConfigError`` for a bad value: a usage error)."""
    return env_seconds(WAIT_ENV, DEFAULT_WAIT_S, "a time to wait for the database")


def _unless_given(url: str, params: dict[str, int]) -> dict[str, int]:
    """``params`` less those ``url`` sets itself (none left out of a URL libpq cannot
    parse: opening it fails anyway, with libpq's own message)."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        given = conninfo_to_dict(url)
    except Exception:
        return dict(params)
    return {k: v for k, v in params.items() if k not in given}


class PostgresBackend(StoreBackend):
    """Sessions and nodes in a PostgreSQL database (see module docstring)."""

    def __init__(
        self,
        url: str,
        *,
        synchronous_commit: bool = False,
        max_size: int = 16,
        migrate_schema: bool = True,
        wait_s: float | None = None,
        keepalives: bool = False,
    ) -> None:
        """``wait_s``: how long statements wait for a database that went away, in all
        (default :func:`wait_seconds`); ``keepalives``: connections with :data:`KEEPALIVES`."""
        self.wait_s = wait_seconds() if wait_s is None else wait_s
        self._wait_named = f" ({WAIT_ENV})" if wait_s is None else ""  # said when it ends a wait
        try:
            import psycopg
            from psycopg_pool import ConnectionPool, PoolTimeout
        except ImportError:  # pragma: no cover - optional dependency
            raise StoreError(
                "a postgresql:// store needs psycopg 3: pip install 'openprogram[postgres]'"
            ) from None
        self._psycopg = psycopg
        self._pool_timeout = PoolTimeout
        # When the database was found gone: the start of the oldest checkout that failed
        # (None: it answers), and of the checkouts in progress (one may be waiting).
        self._lost_at: float | None = None
        self._checkouts: list[float] = []
        self._checkout_lock = threading.Lock()
        self.url = url
        self.location = redact(url)
        self.synchronous_commit = synchronous_commit
        self._local = threading.local()
        self._closed = False
        self._pid = os.getpid()
        # Connections held by pinned() blocks: at most half the pool, so threads that
        # check out per statement (heartbeats, a worker's claims) always find one.
        self._pins = 0
        self._pin_limit = max(1, max_size // 2)
        self._pin_lock = threading.Lock()
        sync = "on" if synchronous_commit else "off"
        options: dict[str, Any] = {"autocommit": True, "options": f"-c synchronous_commit={sync}"}
        options.update(_unless_given(url, {"connect_timeout": CONNECT_TIMEOUT_S}))
        if keepalives:
            options.update(_unless_given(url, KEEPALIVES))
        self._options = options
        try:  # one direct connection first: an unreachable server is a prompt, clear error
            psycopg.connect(url, **options).close()
        except Exception as exc:
            raise self._error(exc) from None
        try:
            self.pool = ConnectionPool(
                url,
                min_size=1,
                max_size=max_size,
                kwargs=options,
                check=check_idle,
                open=True,
                timeout=self.wait_s,
                reconnect_timeout=self.wait_s,
            )
            self.pool.wait(timeout=self.wait_s)
        except Exception as exc:
            raise self._error(exc) from None
        if migrate_schema:
            with self.connection() as conn:
                try:
                    migrate(conn, PG_MIGRATIONS, self.location)
                except psycopg.Error as exc:
                    raise self._error(exc) from None

    def listen(
        self, channel: str, payload: str, wake: threading.Event, stop: threading.Event
    ) -> threading.Thread:
        """Set ``wake`` whenever ``payload`` is notified on ``channel`` (``NOTIFY``), on a
        connection of its own held by a daemon thread until ``stop`` is set; also when the
        connection is (re)made, since a notification may have been missed meanwhile. A
        database that went away is tried again every second: whoever waits on ``wake``
        must not count on it (a worker still polls)."""

        def loop() -> None:
            psycopg = self._psycopg
            while not stop.is_set():
                try:
                    with psycopg.connect(self.url, **self._options) as conn:
                        conn.execute(f"LISTEN {channel}")
                        wake.set()
                        while not stop.is_set():
                            for note in conn.notifies(timeout=_LISTEN_CHECK_S):
                                if note.payload == payload:
                                    wake.set()
                except Exception:  # away, or closed under it: polling goes on meanwhile
                    stop.wait(1.0)

        thread = threading.Thread(target=loop, name=f"openprogram-listen:{channel}", daemon=True)
        thread.start()
        return thread

    def schema_version(self) -> int:
        """The database's schema version, read without writing (0: an empty database);
        ``StoreError`` when it is newer than this code."""
        with self.connection() as conn:
            return schema_version(conn, PG_MIGRATIONS, self.location)

    # -- connections -------------------------------------------------------------------
    def _error(self, exc: BaseException) -> StoreError:
        msg = scrub(" ".join(str(exc).split()) or type(exc).__name__, self.url)
        return StoreError.about(self.location, msg)

    def _getconn(self) -> Any:
        """A connection from the pool, waited for at most what is left of ``wait_s`` since
        the database was found gone: since the oldest failed checkout, else the oldest
        one still waiting (another thread's: a heartbeat and a step wait for the same
        database). At least ``LAST_TRY_S``; ``StoreError`` when none came. A connection
        handed out ends the outage."""
        started = time.monotonic()
        with self._checkout_lock:
            since = (
                self._lost_at
                if self._lost_at is not None
                else min(self._checkouts, default=started)
            )
            self._checkouts.append(started)
        left = max(self.wait_s - (started - since), LAST_TRY_S)
        try:
            conn = self.pool.getconn(timeout=left)
        except self._pool_timeout:
            with self._checkout_lock:
                if self._lost_at is None:
                    self._lost_at = since
            raise StoreError.about(
                self.location,
                f"no connection to the database within {self.wait_s:g} s{self._wait_named}",
            ) from None
        else:
            self._lost_at = None
        finally:
            with self._checkout_lock:
                self._checkouts.remove(started)
        return conn

    @contextmanager
    def _pooled(self) -> Iterator[Any]:
        """A connection from the pool (:meth:`_getconn`) for the block, then returned."""
        conn = self._getconn()
        try:
            with conn:
                yield conn
        finally:
            self.pool.putconn(conn)

    @contextmanager
    def connection(self) -> Iterator[Any]:
        """This thread's open transaction connection, else one from the pool (autocommit)."""
        if self._closed:
            raise StoreError(f"the store {self.location} is closed; open a new store")
        conn = getattr(self._local, "tx", None)
        if conn is not None:
            yield conn
            return
        try:
            with self._pooled() as conn:
                yield conn
        except self._psycopg.Error as exc:
            raise self._error(exc) from None

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """One transaction on one pooled connection; joined by every method this thread
        calls meanwhile (commit on success, rollback on any exception)."""
        if getattr(self._local, "tx", None) is not None:
            yield self._local.tx
            return
        if self._closed:
            raise StoreError(f"the store {self.location} is closed; open a new store")
        try:
            with self._pooled() as conn, conn.transaction():
                self._local.tx = conn
                try:
                    yield conn
                finally:
                    self._local.tx = None
        except self._psycopg.Error as exc:
            raise self._error(exc) from None

    @contextmanager
    def pinned(self) -> Iterator[None]:
        """Keep one pooled connection for this thread's statements until the block ends
        (a run's steps: no pool checkout per statement). A held connection the server
        closed or that is not idle is swapped for a checked one before its next use. When
        half the pool is held already, statements check out per statement as usual."""
        if self._closed:
            raise StoreError(f"the store {self.location} is closed; open a new store")
        if getattr(self._local, "pin", None) is not None:
            yield
            return
        # the held connection, a cursor of it, whether it takes hot statements (UTF-8),
        # a poller of its socket (_quiet)
        self._local.pin = [None, None, False, None]
        try:
            yield
        finally:
            conn = self._local.pin[0]
            self._local.pin = None
            if conn is not None:
                self._unpin(conn)

    def _unpin(self, conn: Any) -> None:
        with self._pin_lock:
            self._pins -= 1
        self.pool.putconn(conn)  # the pool resets, discards or (closed pool) closes it

    def _pinned(self) -> Any:
        """A cursor of this thread's held connection (see :meth:`pinned`), kept with it so
        a run's statements do not each build one; ``None`` outside a pinned block (or
        when no connection can be held)."""
        pin = getattr(self._local, "pin", None)
        if pin is None or self._closed:
            return None
        conn = pin[0]
        if conn is not None:
            try:
                if _quiet(conn.pgconn, pin[3]):
                    return pin[1]
            except Exception:  # closed meanwhile
                pass
            pin[:] = [None, None, False, None]
            self._unpin(conn)
        with self._pin_lock:
            if self._pins >= self._pin_limit:
                return None
            self._pins += 1
        try:
            conn = pin[0] = self._getconn()
        except BaseException as exc:
            with self._pin_lock:
                self._pins -= 1
            if isinstance(exc, self._psycopg.Error):
                raise self._error(exc) from None
            raise
        pin[1] = conn.cursor()
        pin[2] = conn.info.encoding == "utf-8"
        pin[3] = select.poll()
        pin[3].register(conn.fileno(), select.POLLIN | select.POLLPRI)
        return pin[1]

    def execute_hot(
        self, stmt: HotStatement, params: tuple[Any, ...], *, again: HotStatement | None = None
    ) -> list[tuple[Any, ...]]:
        """Run ``stmt`` (a statement returning rows; ``params`` in its ``keys`` order)
        through libpq on this thread's held connection (:mod:`~openprogram.store.pg_hot`),
        then ``again`` — the same statement handling the conflict — if ``stmt`` hit a
        unique key (the failed statement wrote nothing: autocommit). Through
        :meth:`execute` (``again`` alone, when given) in a transaction, where a failed
        statement would end it, outside a pinned block, or on a connection that is not
        UTF-8."""
        if again is None:
            again = stmt
        pin = getattr(self._local, "pin", None)
        if (
            pin is None
            or getattr(self._local, "tx", None) is not None
            or self._pinned() is None  # checks the held connection, swaps a dead one
            or not pin[2]
        ):
            return list(self.execute(again.sql, again.named(params)))
        pgconn = pin[0].pgconn
        try:
            result = self._exec_prepared(pgconn, stmt, stmt.values(params))
            if (
                again is not stmt
                and result.status == _FATAL_ERROR
                and result.error_field(_SQLSTATE) == UNIQUE_VIOLATION
            ):
                stmt = again
                result = self._exec_prepared(pgconn, stmt, stmt.values(params))
            if result.status != _TUPLES_OK:
                raise self._psycopg.errors.error_from_result(result)
        except (self._psycopg.Error, ValueError) as exc:
            raise self._error(exc) from None
        return stmt.rows(result)

    def _exec_prepared(self, pgconn: Any, stmt: HotStatement, values: list[bytes | None]) -> Any:
        """``stmt``'s result on ``pgconn``, prepared there first when the server does not
        have it (a new connection, or ``DISCARD ALL`` / ``DEALLOCATE ALL``)."""
        result = pgconn.exec_prepared(stmt.name, values)
        if result.status == _FATAL_ERROR and result.error_field(_SQLSTATE) == NOT_PREPARED:
            prepared = pgconn.prepare(stmt.name, stmt.server_sql)
            if prepared.status != _COMMAND_OK:
                raise self._psycopg.errors.error_from_result(prepared)
            result = pgconn.exec_prepared(stmt.name, values)
        return result

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Any:
        """Run one statement (in this thread's transaction if open); returns the cursor's
        rows for statements that return some, else its row count."""
        tx: Any = getattr(self._local, "tx", None)
        cur: Any = None if tx is not None else self._pinned()
        if tx is not None or cur is not None:
            try:
                if cur is None:
                    cur = tx.execute(sql, params, prepare=True)
                else:
                    cur.execute(sql, params, prepare=True)
            except self._psycopg.Error as exc:
                raise self._error(exc) from None
            return cur.fetchall() if cur.description is not None else cur.rowcount
        with self.connection() as conn:
            try:
                cur = conn.execute(sql, params, prepare=True)
            except self._psycopg.Error as exc:
                raise self._error(exc) from None
            return cur.fetchall() if cur.description is not None else cur.rowcount

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if os.getpid() == self._pid:
            self.pool.close(timeout=5.0)

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
        try:
            meta = _dumps(metadata)
        except (TypeError, ValueError) as exc:
            raise StoreError(f"session {session_id!r}: metadata is not JSON ({exc})") from None
        self.execute(
            "INSERT INTO sessions (id, name, agent_id, metadata, created_at, updated_at) "
            "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO NOTHING",
            (session_id, name, agent_id, meta, now, now),
        )
        session = self.get_session(session_id)
        assert session is not None
        return session

    def _session(self, row: Sequence[Any]) -> Session:
        return Session(
            id=row[0], name=row[1], agent_id=row[2], head_id=row[3],
            metadata=_loads(row[4]) if row[4] else {}, created_at=row[5], updated_at=row[6],
            node_count=row[7],
        )  # fmt: skip

    def get_session(self, session_id: str) -> Session | None:
        rows = self.execute(_SESSION_SELECT + " WHERE s.id = %s", (session_id,))
        return self._session(rows[0]) if rows else None

    def list_sessions(self) -> list[Session]:
        rows = self.execute(_SESSION_SELECT + " ORDER BY 7 DESC, s.created_at DESC")
        return [self._session(r) for r in rows]

    def head_id(self, session_id: str) -> str | None:
        rows = self.execute(
            "SELECT CASE WHEN head_pinned THEN head_id ELSE last_id END FROM sessions "
            "WHERE id = %s",
            (session_id,),
        )
        if not rows:
            raise self._no_session(session_id)
        return rows[0][0]

    def set_head(self, session_id: str, node_id: str) -> None:
        # one statement: the node's membership is checked by the update that pins it
        changed = self.execute(
            "UPDATE sessions SET head_id = %s, head_pinned = true, updated_at = %s "
            "WHERE id = %s AND EXISTS (SELECT FROM nodes WHERE id = %s AND session_id = %s)",
            (node_id, time.time(), session_id, node_id, session_id),
        )
        if changed == 0:
            raise self._not_in_session(node_id, session_id)

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
        if node_id is not None:
            existing = self.get_node(node_id)
            if existing is not None:
                if existing.session_id != session_id:
                    raise StoreError(
                        f"node id {node_id!r} already belongs to session "
                        f"{existing.session_id!r}, not {session_id!r}; use a fresh node id"
                    )
                return existing
        nid = node_id or new_id()
        try:
            in_json = input_json if input_json is not None else (
                None if input is None else _dumps(input)
            )  # fmt: skip
            out_json = None if output is None else _dumps(output)
            meta_json = _dumps(metadata) if metadata else "{}"
        except (TypeError, ValueError, RecursionError) as exc:
            raise StoreError(
                f"node {name!r}: input, output and metadata must be JSON values ({exc})"
            ) from None
        rows = self.execute(
            _APPEND_SQL,
            {
                "sid": session_id, "nid": nid, "move": move_head, "now": now, "kind": kind,
                "name": name, "caller": caller_id, "pred_default": predecessor_id is UNSET,
                "pred": None if predecessor_id is UNSET else predecessor_id,
                "input": in_json, "output": out_json, "status": status, "meta": meta_json,
            },
        )  # fmt: skip
        if not rows:
            raise self._no_session(session_id)
        seq, pred = rows[0]
        return Node(
            nid, session_id, seq, kind, name, caller_id, pred, input, output, status,
            metadata, now, now,
        )  # fmt: skip

    def update_node(
        self,
        node_id: str,
        *,
        output: Any | _Unset,
        status: str | None,
        metadata: dict[str, Any] | None,
        now: float,
    ) -> Node:
        try:
            out_json = None if output is UNSET or output is None else _dumps(output)
            meta_json = _dumps(metadata) if metadata else None
        except (TypeError, ValueError, RecursionError) as exc:
            raise StoreError(
                f"node {node_id!r}: output and metadata must be JSON values ({exc})"
            ) from None
        params = {
            "set_output": output is not UNSET, "output": out_json, "status": status,
            "meta": meta_json, "now": now, "id": node_id, "old": None,
        }  # fmt: skip
        while True:
            rows = self.execute(_UPDATE_SQL, params)
            if rows:
                node = _node(rows[0])
                if output is not UNSET:
                    node.output = output
                return node
            # missing, or metadata to merge into the stored object: read it, merge, and
            # write if it is still the one read (another update in between: again)
            rows = self.execute("SELECT metadata FROM nodes WHERE id = %s", (node_id,))
            if not rows:
                raise StoreError(f"node {node_id!r} does not exist in {self.location}")
            stored: str = rows[0][0]
            merged = _loads(stored) if stored else {}
            merged.update(metadata or {})
            params["meta"], params["old"] = _dumps(merged), stored  # both JSON already

    def get_node(self, node_id: str) -> Node | None:
        rows = self.execute(f"SELECT {_READ_COLS} FROM nodes WHERE id = %s", (node_id,))
        return _node(rows[0]) if rows else None

    def list_nodes(self, session_id: str) -> list[Node]:
        rows = self.execute(
            f"SELECT {_READ_COLS} FROM nodes WHERE session_id = %s ORDER BY seq", (session_id,)
        )
        return [_node(r) for r in rows]

    def children(self, node_id: str) -> list[Node]:
        rows = self.execute(
            f"SELECT {_READ_COLS} FROM nodes WHERE session_id = "
            "(SELECT session_id FROM nodes WHERE id = %s) AND caller_id = %s ORDER BY seq",
            (node_id, node_id),
        )
        return [_node(r) for r in rows]
