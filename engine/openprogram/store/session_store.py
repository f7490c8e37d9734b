"""``SessionStore`` (sessions and nodes of one store root) and ``SessionNodeWriter``."""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from openprogram.errors import StoreError
from openprogram.history import branch_nodes
from openprogram.store.base import UNSET, StoreBackend, _Unset
from openprogram.store.models import NODE_STATUSES, Node, Session

STORE_ENV = "OPENPROGRAM_STORE"
DEFAULT_ROOT = ".openprogram"
DB_FILENAME = "openprogram.db"
_STATUSES = frozenset(NODE_STATUSES)


def store_location(
    value: str | os.PathLike[str] | None = None,
    *,
    base: str | os.PathLike[str] | None = None,
) -> Path | str:
    """The store a store setting names, for the CLI (``--store``) and the language server
    (``openprogram.store``, per workspace folder) alike: ``value``, else
    ``$OPENPROGRAM_STORE``, else ``<base>/.openprogram`` (an empty value is unset). A
    relative path (``~`` expanded) is resolved against ``base``, the folder it is relative
    to (the CLI: the working directory, then kept relative as written). A
    ``postgresql://`` URL, a libpq keyword string or a URL of another scheme is returned
    as written (a ``str``: a ``Path`` would collapse a URL's ``//``, and the last two are
    never a directory: opening them raises :func:`~openprogram.store.postgres.refused`)."""
    from openprogram.store.postgres import is_url, refused

    given = value if value is not None and os.fspath(value) != "" else None
    chosen = given if given is not None else (os.environ.get(STORE_ENV) or None)
    if chosen is None:
        return Path(base if base is not None else Path.cwd()) / DEFAULT_ROOT
    text = os.fspath(chosen)
    if is_url(text) or refused(text) is not None:
        return text
    path = Path(text).expanduser()
    return path if base is None or path.is_absolute() else Path(base) / path


def resolve_root(root_path: str | os.PathLike[str] | None = None) -> Path:
    """The store root: ``root_path``, else ``$OPENPROGRAM_STORE``, else ``./.openprogram``
    (:func:`store_location`).

    ``StoreError`` for a libpq keyword string (``host=db password=...``) or a URL of a
    scheme no store takes (``pgsql://``, ``mysql://``;
    :func:`~openprogram.store.postgres.refused`): taken as a path, it would become
    directories named after it, password included."""
    location = store_location(root_path)
    if isinstance(location, str):
        from openprogram.store.postgres import refused

        error = refused(location)
        if error is not None:
            raise error
        return Path(location)
    return location


def store_url(root_path: str | os.PathLike[str] | None = None) -> str | None:
    """The PostgreSQL URL named by ``root_path`` / ``$OPENPROGRAM_STORE``, else ``None``."""
    from openprogram.store.postgres import normalize_url

    value = root_path if root_path is not None and str(root_path) != "" else None
    if value is None:
        value = os.environ.get(STORE_ENV) or None
    return None if value is None else normalize_url(os.fspath(value))


def store_db_path(root_path: str | os.PathLike[str] | None = None) -> Path:
    """The database file of a store root (it may not exist yet)."""
    return resolve_root(root_path) / DB_FILENAME


def _prepare_root(root: Path, *, create: bool) -> Path:
    hint = "pass a directory with --store DIR or OPENPROGRAM_STORE"
    if root.exists() and not root.is_dir():
        raise StoreError(f"store path {root} is a file, not a directory; {hint}", store=str(root))
    if not root.exists():
        if not create:
            raise StoreError(f"no store at {root}; {hint}")
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"cannot create the store directory {root} ({exc.strerror or exc}); "
                f"choose a writable location: {hint}"
            ) from None
    db = root / DB_FILENAME
    if db.exists() and not db.is_file():
        raise StoreError(f"{db} exists but is not a database file; move it aside or {hint}")
    if not create and not db.exists():
        raise StoreError(f"no store database at {db}; {hint}")
    return db


def _sqlite_backend(db: Path, read_only: bool, busy_timeout_s: float | None = None) -> Any:
    """The SQLite backend of ``db`` (``read_only``: an older schema is migrated only when
    the store is writable, else ``MigrationNeeded`` says so)."""
    from openprogram.store.sqlite import DEFAULT_BUSY_TIMEOUT_S, MigrationNeeded, SqliteBackend

    timeout = DEFAULT_BUSY_TIMEOUT_S if busy_timeout_s is None else busy_timeout_s
    try:
        return SqliteBackend(db, read_only=read_only, busy_timeout_s=timeout)
    except MigrationNeeded:
        if not (os.access(db, os.W_OK) and os.access(db.parent, os.W_OK)):
            raise
        # an older store that can be written: migrate it now
        return SqliteBackend(db, busy_timeout_s=timeout)


class SessionStore:
    """Sessions and their node DAGs under one store root.

    ``SessionStore(root_path=None)``: ``None`` uses ``$OPENPROGRAM_STORE`` or
    ``./.openprogram`` (created on demand; ``create=False`` refuses to create it). The
    database is ``<root>/openprogram.db``; a ``postgresql://`` URL opens that database
    instead (:mod:`openprogram.store.postgres`). Callers own an explicit store and close it
    (``close()`` or ``with SessionStore(...) as store:``); ``read_only=True`` only reads
    (never creates; migrates an older SQLite schema only when the store is writable).
    ``backend=`` plugs in another
    :class:`~openprogram.store.base.StoreBackend` (the root is then ignored).
    """

    def __init__(
        self,
        root_path: str | os.PathLike[str] | None = None,
        *,
        create: bool = True,
        backend: StoreBackend | None = None,
        read_only: bool = False,
    ) -> None:
        url = store_url(root_path) if backend is None else None
        self.root_path = resolve_root(None if url else root_path)
        if url is not None:
            from openprogram.store.postgres import PostgresBackend

            if read_only:  # nothing is written, not even the schema (a read replica works)
                backend = PostgresBackend(url, max_size=2, migrate_schema=False)
            else:
                backend = PostgresBackend(url)
        elif backend is None:
            db = _prepare_root(self.root_path, create=create and not read_only)
            backend = _sqlite_backend(db, read_only)
        self.backend = backend

    @property
    def location(self) -> str:
        """Where the data lives (the database file path for SQLite)."""
        return self.backend.location

    def create_session(
        self,
        name: str | None = None,
        *,
        agent_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> str:
        """Create a session and return its id (``name`` when given; idempotent)."""
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise StoreError(f"session name must be a non-empty string, got {name!r}")
        from openprogram.store.ids import new_id

        sid = name if name is not None else new_id()
        self.backend.create_session(
            sid, name=name, agent_id=agent_id, metadata=dict(metadata or {}), now=time.time()
        )
        return sid

    def get_session(self, session_id: str) -> Session | None:
        """The session with ``node_count`` filled in, or ``None``."""
        return self.backend.get_session(session_id)

    def list_sessions(self) -> list[Session]:
        """Every session, most recently updated first."""
        return self.backend.list_sessions()

    def list_nodes(self, session_id: str) -> list[Node]:
        """The session's nodes in ``seq`` order (empty for an unknown session)."""
        return self.backend.list_nodes(session_id)

    def get_node(self, node_id: str) -> Node | None:
        """One node, or ``None``."""
        return self.backend.get_node(node_id)

    def children(self, node_id: str) -> list[Node]:
        """The nodes called from ``node_id`` (``caller_id`` edge), in ``seq`` order."""
        return self.backend.children(node_id)

    def close(self) -> None:
        """Close every connection of this store."""
        self.backend.close()

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SessionStore({self.location!r})"


class SessionNodeWriter:
    """Appends nodes to one session and moves its branch head (thread-safe).

    Raises ``StoreError`` when the session does not exist.
    """

    __slots__ = ("_backend", "_lean", "session_id", "store")

    def __init__(self, store: SessionStore, session_id: str) -> None:
        self.store = store
        self.session_id = session_id
        self._backend = store.backend
        # The backend's lean recording methods (``append_json``/``close_node``, SQLite)
        # used by ``openprogram.scope``; ``None`` when the backend has none.
        self._lean: Any = store.backend if hasattr(store.backend, "close_node") else None
        if self._backend.get_session(session_id) is None:
            raise StoreError(
                f"session {session_id!r} does not exist in {store.location}; create it with "
                f"store.create_session({session_id!r}) or list sessions with "
                "`openprogram sessions`"
            )

    def append(
        self,
        kind: str,
        name: str,
        *,
        input: Any = None,
        output: Any = None,
        status: str = "running",
        caller_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        node_id: str | None = None,
        predecessor_id: str | _Unset | None = UNSET,
        move_head: bool = True,
    ) -> Node:
        """Append a node (idempotent on ``node_id``); ``seq`` increases per session.

        ``predecessor_id`` defaults to the current head; with ``move_head`` the head
        becomes the new node.
        """
        if status not in _STATUSES:
            raise StoreError(
                f"node status must be one of {', '.join(NODE_STATUSES)}, got {status!r}"
            )
        if not kind or not isinstance(kind, str):
            raise StoreError(f"node kind must be a non-empty string, got {kind!r}")
        return self._backend.append_node(
            self.session_id,
            kind,
            name,
            node_id=node_id,
            input=input,
            output=output,
            status=status,
            caller_id=caller_id,
            metadata=dict(metadata) if metadata else {},
            predecessor_id=predecessor_id,
            move_head=move_head,
            now=time.time(),
        )

    def update(
        self,
        node_id: str,
        *,
        output: Any | _Unset = UNSET,
        status: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Node:
        """Set ``output``/``status`` of a node; ``metadata`` is merged into the stored dict."""
        if status is not None and status not in _STATUSES:
            raise StoreError(
                f"node status must be one of {', '.join(NODE_STATUSES)}, got {status!r}"
            )
        return self._backend.update_node(
            node_id, output=output, status=status, metadata=metadata, now=time.time()
        )

    def load_graph(self) -> list[Node]:
        """Every node of the session in ``seq`` order."""
        return self._backend.list_nodes(self.session_id)

    def load_branch(self) -> list[Node]:
        """The nodes on the predecessor chain ending at the head, in ``seq`` order.

        The head is read before the graph: nodes are only ever appended, and a node's
        predecessor is committed before it, so the graph read afterwards holds the head
        and its whole chain, whatever other threads or processes append in between.
        (Read the other way round, a node appended between the two reads becomes the
        head without being in the graph, and the branch comes out empty.)
        """
        head = self.head_id
        return branch_nodes(self.load_graph(), head)

    @property
    def head_id(self) -> str | None:
        """The current branch head (``None`` for an empty session)."""
        return self._backend.head_id(self.session_id)

    def move_head(self, node_id: str) -> None:
        """Select the branch ending at ``node_id`` (a node of this session)."""
        self._backend.set_head(self.session_id, node_id)

    def __repr__(self) -> str:
        return f"SessionNodeWriter({self.store.location!r}, {self.session_id!r})"
