"""Keep OpenProgram's background threads out of database calls while the process forks.

A forked child has only the thread that called ``fork()``. If another thread was inside
SQLite (or a database driver) at that moment, the child inherits the locks that thread
held and deadlocks on its first database call. OpenProgram runs two kinds of background
threads that touch a store — the lease heartbeat (``store/lease.py``) and the WAL
checkpointer (``store/wal_checkpointer.py``) — and each makes its calls inside
:func:`no_fork`; ``os.register_at_fork`` takes the same lock around ``fork()``, so a fork
waits for a call in progress (a checkpoint or a lease renewal: milliseconds) and no such
call starts until the fork is done. Threads of the user's own are not covered.
"""

from __future__ import annotations

import os
import threading

__all__ = ["no_fork"]

_LOCK = threading.Lock()

if hasattr(os, "register_at_fork"):
    os.register_at_fork(
        before=_LOCK.acquire, after_in_parent=_LOCK.release, after_in_child=_LOCK.release
    )


def no_fork() -> threading.Lock:
    """``with no_fork():`` — no ``fork()`` happens while the block runs."""
    return _LOCK
