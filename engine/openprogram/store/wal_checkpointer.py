"""Checkpoint a SQLite store's WAL on a background thread, off the step's commit path.

SQLite's automatic checkpoint runs inside the ``COMMIT`` that finds 1,000 pages in the
write-ahead log: that commit copies them into the database file and fsyncs both files
(about 14 ms here), so one durable step in a couple of hundred pays for all of them — a
third of what a step costs on average. A writable
:class:`~openprogram.store.sqlite.SqliteBackend` hands that work to a daemon thread:
writers report their commits (:meth:`WalCheckpointer.committed`, one integer increment),
and every :data:`COMMITS_PER_CHECKPOINT` commits the thread runs
``PRAGMA wal_checkpoint(PASSIVE)`` on its own connection. A passive checkpoint never
waits for and never blocks a writer or a reader (and SQLite releases the GIL while it
runs); once it has copied every page, the next write starts the log again from its
beginning, so the log stays under SQLite's own threshold and no commit pays for one.

SQLite's automatic checkpoint stays on as the safety net: writes that do not report
(recording of model calls, tooling) and a thread that fell behind still get their log
checkpointed inline, as without this module. A checkpoint that fails (a locked or
unwritable file) is left to that safety net: nothing is lost, the pages are in the log.

The thread exists only while commits come: it ends after :data:`IDLE_EXIT_S` without a
report, and the next report starts another. It calls SQLite only inside
:func:`~openprogram.store.fork_guard.no_fork`, so ``fork()`` waits for a checkpoint in
progress and a child never inherits SQLite mid-call; the child starts its own thread on
its first report and never touches the connection of the parent's.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from pathlib import Path

from openprogram.store.fork_guard import no_fork

#: Step commits between two background checkpoints. A step commits 4–6 pages, so the
#: log is checkpointed at about 300 pages, well before SQLite's own 1,000-page threshold.
COMMITS_PER_CHECKPOINT = 64

#: A thread with no report for this long closes its connection and ends.
IDLE_EXIT_S = 5.0

# Checkpointers inherited through fork(): kept referenced so the child never closes (or
# garbage-collects) a connection that belongs to the parent.
_INHERITED: list[_Worker] = []


class _Worker:
    """One thread with its own connection; ends when stopped or idle."""

    def __init__(self, owner: WalCheckpointer) -> None:
        self.path = owner.path
        self.owner_lock = owner._lock
        self.pid = os.getpid()
        self.wake = threading.Event()
        self.stopping = False
        self.ended = False  # set under owner_lock: a new report starts another thread
        self.conn: sqlite3.Connection | None = None
        self.checkpoints = 0
        self.thread = threading.Thread(
            target=self._loop, name=f"openprogram-wal-checkpoint:{self.path.name}", daemon=True
        )
        self.thread.start()

    def _loop(self) -> None:
        try:
            while True:
                if not self.wake.wait(IDLE_EXIT_S):
                    with self.owner_lock:
                        if not self.wake.is_set():
                            self.ended = True
                            return
                self.wake.clear()
                if self.stopping:
                    return
                with no_fork():
                    self._checkpoint()
        finally:
            with no_fork():
                self._close()

    def _checkpoint(self) -> None:
        try:
            if self.conn is None:
                # timeout=0: a passive checkpoint never waits; a busy file is skipped
                self.conn = sqlite3.connect(
                    self.path, timeout=0, isolation_level=None, check_same_thread=False
                )
            self.conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            self.checkpoints += 1
        except sqlite3.Error:
            self._close()  # the writers' automatic checkpoint is the safety net

    def _close(self) -> None:
        conn, self.conn = self.conn, None
        if conn is not None:
            with contextlib.suppress(sqlite3.Error):
                conn.close()

    def stop(self) -> None:
        self.stopping = True
        self.wake.set()
        if self.thread is not threading.current_thread():
            self.thread.join(timeout=30.0)


class WalCheckpointer:
    """Background ``PASSIVE`` checkpoints of one SQLite file (see module docstring)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._worker: _Worker | None = None
        self._pending = 0
        self._closed = False
        self._checkpoints = 0  # of the threads that ended, in this process

    def committed(self) -> None:
        """Note one commit; every :data:`COMMITS_PER_CHECKPOINT` wakes the thread."""
        self._pending += 1
        if self._pending >= COMMITS_PER_CHECKPOINT:
            self._pending = 0
            self._wake()

    def _wake(self) -> None:
        pid = os.getpid()
        with self._lock:
            if self._closed:
                return
            worker = self._worker
            if worker is not None and worker.pid != pid:
                _INHERITED.append(worker)  # the parent's: never closed here
                worker = self._worker = None
                self._checkpoints = 0
            if worker is not None and worker.ended:
                self._checkpoints += worker.checkpoints
                worker = None
            if worker is None:
                worker = self._worker = _Worker(self)
            worker.wake.set()

    @property
    def checkpoints(self) -> int:
        """Background checkpoints run in this process so far (for tests and benchmarks)."""
        worker = self._worker
        if worker is None or worker.pid != os.getpid():
            return self._checkpoints
        return self._checkpoints + worker.checkpoints

    def close(self) -> None:
        """Stop the thread (after a checkpoint in progress) and close its connection."""
        with self._lock:
            self._closed = True
            worker, self._worker = self._worker, None
        if worker is not None and worker.pid == os.getpid():
            worker.stop()
