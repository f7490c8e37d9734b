"""The backend interface of the session store.

:class:`~openprogram.store.SessionStore` and
:class:`~openprogram.store.SessionNodeWriter` talk only to a :class:`StoreBackend`. The
interface says *what* must hold, never *how* SQLite does it, so a PostgreSQL backend can
implement it (one row per node, one per session, a transaction per append):

* ``append_node`` is atomic: it gives the node ``seq = max(seq of the session) + 1``,
  resolves the default predecessor (the branch head) and moves the head in one
  transaction, so concurrent writers in threads and processes never collide.
* ``append_node`` is idempotent on ``node_id``: an id that exists returns the stored node.
* ``update_node`` merges ``metadata`` into the stored dict (top-level keys, like
  ``dict.update``) atomically.
* Every failure is raised as :class:`openprogram.errors.StoreError` with a one-line
  message that says what to do.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from typing import Any, Final

from openprogram.errors import StoreError
from openprogram.store.models import Node, Session


class _Unset(enum.Enum):
    """Marker for "argument not given" where ``None`` is a valid value."""

    UNSET = "UNSET"


UNSET: Final = _Unset.UNSET


def node_exit(at: str, output: str, status: str, metadata: str) -> str:
    """The assignments of a node's exit (an ``UPDATE``'s ``SET`` list), on either engine:
    its time ``at``, ``output`` (JSON text), ``status`` and new ``metadata``, each an SQL
    expression (a placeholder, a literal, or the engine's JSON merge of ``duration_s``).
    The one text of a node's close and of a returned step's node update (SQLite's
    ``finish_node``/``close_node``/``sqlite_runs``, ``postgres_runs.FINISH_SQL``)."""
    return f"updated_at = {at}, output = {output}, status = {status}, metadata = {metadata}"


class StoreBackend(ABC):
    """Storage of sessions and nodes (one implementation per database engine)."""

    #: Human-readable location for messages (a file path, a DSN without password).
    location: str

    def _no_session(self, session_id: str) -> StoreError:
        """The error for a session id that is not in this store."""
        return StoreError(
            f"session {session_id!r} does not exist in {self.location}; create it with "
            "SessionStore.create_session() or list sessions with `openprogram sessions`"
        )

    @staticmethod
    def _not_in_session(node_id: str, session_id: str) -> StoreError:
        """The error for a head that is not a node of its session."""
        return StoreError(
            f"node {node_id!r} is not in session {session_id!r}; pick a node id from "
            f"`openprogram show {session_id}`"
        )

    @abstractmethod
    def create_session(
        self,
        session_id: str,
        *,
        name: str | None,
        agent_id: str | None,
        metadata: dict[str, Any],
        now: float,
    ) -> Session:
        """Create the session, or return the existing one with this id unchanged."""

    @abstractmethod
    def get_session(self, session_id: str) -> Session | None:
        """The session (with ``node_count``), or ``None``."""

    @abstractmethod
    def list_sessions(self) -> list[Session]:
        """Every session with ``node_count``, most recently updated first."""

    @abstractmethod
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
    ) -> Node:
        """Append one node atomically (see module docstring); ``UNSET`` predecessor = head.

        ``node_id=None`` asks the backend to generate a fresh id.
        """

    @abstractmethod
    def update_node(
        self,
        node_id: str,
        *,
        output: Any | _Unset,
        status: str | None,
        metadata: dict[str, Any] | None,
        now: float,
    ) -> Node:
        """Set ``output`` (unless ``UNSET``) and ``status`` (unless ``None``), merge metadata."""

    @abstractmethod
    def get_node(self, node_id: str) -> Node | None:
        """The node, or ``None``."""

    @abstractmethod
    def list_nodes(self, session_id: str) -> list[Node]:
        """The session's nodes ordered by ``seq`` (empty when the session is unknown)."""

    @abstractmethod
    def children(self, node_id: str) -> list[Node]:
        """Nodes whose ``caller_id`` is ``node_id``, ordered by ``seq``."""

    @abstractmethod
    def head_id(self, session_id: str) -> str | None:
        """The session's branch head (``None`` for an empty session)."""

    @abstractmethod
    def set_head(self, session_id: str, node_id: str) -> None:
        """Make ``node_id`` (a node of this session) the branch head."""

    @abstractmethod
    def schema_version(self) -> int:
        """The schema version recorded in the database, read without writing anything (0:
        no store in it yet)."""

    @abstractmethod
    def close(self) -> None:
        """Release connections; later calls raise ``StoreError``."""
