"""Checkpoint a SQLite store's WAL on a background thread, off the step's commit path.

SQLite's automatic checkpoint runs inside the ``COMMIT`` that finds 1,000 pages in the
write-ahead log: that commit copies them into the database file and fsyncs both files
(about 14 ms here), so one durable step in a couple of hundred pays for all of them — a
third of what a step costs on average. A writable
:class:`~openprogram.store.sqlite.SqliteBackend` hands that work to one daemon thread per
process and store: writers report their commits (:meth:`WalCheckpointer.committed`, one
integer increment), and every :data:`COMMITS_PER_CHECKPOINT` commits the thread runs
``PRAGMA wal_checkpoint(PASSIVE)`` on its own connection. A passive checkpoint never
blocks a writer or a reader (SQLite releases the GIL while it runs); once it has copied
every page, the next write starts the log again from its beginning, so the log stays
under SQLite's own threshold and no commit pays for a checkpoint.

SQLite's automatic checkpoint stays on as the safety net: writes that do not report
(recording of model calls, listings' own writes) and a thread that fell behind still get
their log checkpointed inline, exactly as without this module. Errors on the thread
(a locked or unwritable file) are left to that safety net: a skipped checkpoint loses
nothing, the pages are still in the log.

After ``fork()`` the child has no thread: it starts its own on its first report and never
touches the connection inherited from the parent.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from pathlib import Path

#: Step commits between two background checkpoints. A step commits 4–6 pages, so the
#: log is checkpointed at about 300 pages, well before SQLite's own 1,000-page threshold.
COMMITS_PER_CHECKPOINT = 64

#: An idle thread checks this often whether its store was closed or dropped.
_IDLE_WAIT_S = 30.0

# Checkpointers inherited through fork(): kept referenced so the child never closes (or
# garbage-collects) a connection that belongs to the parent.
_INHERITED: list[_Worker] = []


class _Worker:
    """One thread with its own connection; lives until :meth:`stop`."""

    def __init__(self, path: Path, busy_timeout_s: float) -> None:
        self.path = path
        self.busy_timeout_s = busy_timeout_s
        self.pid = os.getpid()
        self.wake = threading.Event()
        self.stopping = False
        self.conn: sqlite3.Connection | None = None
        self.checkpoints = 0
        self.thread = threading.Thread(
            target=self._loop, name=f"openprogram-wal-checkpoint:{path.name}", daemon=True
        )
        self.thread.start()

    def _loop(self) -> None:
        while True:
            self.wake.wait(_IDLE_WAIT_S)
            self.wake.clear()
            if self.stopping:
                break
            self._checkpoint()
        conn, self.conn = self.conn, None
        if conn is not None:
            with contextlib.suppress(sqlite3.Error):
                conn.close()

    def _checkpoint(self) -> None:
        try:
            if self.conn is None:
                self.conn = sqlite3.connect(
                    self.path,
                    timeout=self.busy_timeout_s,
                    isolation_level=None,
                    check_same_thread=False,
                )
            self.conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            self.checkpoints += 1
        except sqlite3.Error:
            # Busy or unwritable: the writers' automatic checkpoint is the safety net.
            conn, self.conn = self.conn, None
            if conn is not None:
                with contextlib.suppress(sqlite3.Error):
                    conn.close()

    def stop(self) -> None:
        self.stopping = True
        self.wake.set()
        if self.thread is not threading.current_thread():
            self.thread.join(timeout=max(self.busy_timeout_s, 1.0) + 5.0)


class WalCheckpointer:
    """Background ``PASSIVE`` checkpoints of one SQLite file (see module docstring)."""

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout_s: float) -> None:
        self.path = Path(path)
        self.busy_timeout_s = busy_timeout_s
        self._lock = threading.Lock()
        self._worker: _Worker | None = None
        self._pending = 0
        self._closed = False

    def committed(self) -> None:
        """Note one commit; every :data:`COMMITS_PER_CHECKPOINT` wakes the thread."""
        self._pending += 1
        if self._pending >= COMMITS_PER_CHECKPOINT:
            self._pending = 0
            self._wake()

    def _wake(self) -> None:
        worker = self._worker
        if worker is None or worker.pid != os.getpid():
            with self._lock:
                if self._closed:
                    return
                worker = self._worker
                if worker is not None and worker.pid != os.getpid():
                    _INHERITED.append(worker)  # the parent's: never closed here
                    worker = None
                if worker is None:
                    worker = self._worker = _Worker(self.path, self.busy_timeout_s)
        worker.wake.set()

    @property
    def checkpoints(self) -> int:
        """Background checkpoints this process ran so far (for tests and benchmarks)."""
        worker = self._worker
        return 0 if worker is None or worker.pid != os.getpid() else worker.checkpoints

    def close(self) -> None:
        """Stop the thread (after a checkpoint in progress) and close its connection."""
        with self._lock:
            self._closed = True
            worker, self._worker = self._worker, None
        if worker is not None and worker.pid == os.getpid():
            worker.stop()
