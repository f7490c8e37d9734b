"""Session DAG store: sessions, nodes, branch heads (SPEC §2.6).

``SessionStore`` opens a store root (default ``$OPENPROGRAM_STORE`` or ``./.openprogram``,
database ``<root>/openprogram.db``); ``SessionNodeWriter`` appends and updates the nodes of
one session. The default backend is SQLite (:mod:`openprogram.store.sqlite`); the
interface it implements is :class:`openprogram.store.base.StoreBackend`.
"""

from __future__ import annotations

from openprogram.store.base import UNSET, StoreBackend
from openprogram.store.models import NODE_KINDS, NODE_STATUSES, Node, Session
from openprogram.store.session_store import (
    STORE_ENV,
    SessionNodeWriter,
    SessionStore,
    resolve_root,
    store_db_path,
    store_location,
    store_url,
)

__all__ = [
    "NODE_KINDS",
    "NODE_STATUSES",
    "STORE_ENV",
    "UNSET",
    "Node",
    "Session",
    "SessionNodeWriter",
    "SessionStore",
    "StoreBackend",
    "resolve_root",
    "store_db_path",
    "store_location",
    "store_url",
]
