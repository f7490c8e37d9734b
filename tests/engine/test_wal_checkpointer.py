"""Background WAL checkpoints of a SQLite store: a long durable run is checkpointed by the
store's own thread (not inside a step's commit), nothing is lost, a failed checkpoint is
harmless, closing stops the thread, and a forked child never touches the parent's."""

from __future__ import annotations

import os
import select
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from openprogram.durable import start_run
from openprogram.store import SessionStore
from openprogram.store import wal_checkpointer as wc
from openprogram.store.runs import read_run_store

THREAD_PREFIX = "openprogram-wal-checkpoint"

PROGRAM = """
import json, os, threading

from openprogram import step

HERE = os.path.dirname(os.path.abspath(__file__))


def tiny(i: int) -> dict:
    return {"i": i}


def look() -> list:
    return sorted(t.name for t in threading.enumerate())


def main(n: int) -> dict:
    total = 0
    for i in range(n):
        total += step("s", tiny, i)["i"]
    return {"total": total, "threads": step("look", look)}


main.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["main"]
"""


def _checkpoint_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(THREAD_PREFIX)]


def test_a_long_run_is_checkpointed_by_the_store_thread(tmp_path: Path) -> None:
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM, encoding="utf-8")
    store = tmp_path / "store"
    n = 3 * wc.COMMITS_PER_CHECKPOINT
    out = start_run(f"{prog}:main", {"n": n}, store=store)
    assert out.status == "completed", out
    assert out.result["total"] == sum(range(n))
    # Seen from inside the run: the store's checkpoint thread was working beside it.
    assert any(name.startswith(THREAD_PREFIX) for name in out.result["threads"])
    # The run closed its store: the thread is gone, every step is there.
    assert _checkpoint_threads() == []
    runs = read_run_store(store)
    assert runs is not None
    with runs:
        steps = runs.load_steps(out.run_id)
    assert len(steps) == n + 1
    assert {s.status for s in steps} == {"completed"}


def _fill(store: SessionStore, commits: int) -> None:
    backend = store.backend
    sessions = store.list_sessions()
    sid = sessions[0].id if sessions else store.create_session("s")
    checkpointer = backend.checkpointer
    assert checkpointer is not None
    for i in range(commits):
        with backend.transaction():
            backend.append_json(sid, "code", f"n{i}", None, "1", None, "running", "{}", 0.0)
        checkpointer.committed()


def test_checkpoints_run_on_the_thread_and_stop_with_the_store(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "store")
    checkpointer = store.backend.checkpointer
    assert checkpointer is not None
    _fill(store, wc.COMMITS_PER_CHECKPOINT - 1)
    assert checkpointer.checkpoints == 0 and _checkpoint_threads() == []
    _fill(store, 1)
    threads = _checkpoint_threads()
    assert len(threads) == 1
    for _ in range(200):  # the thread runs beside this one
        if checkpointer.checkpoints:
            break
        threading.Event().wait(0.01)
    assert checkpointer.checkpoints >= 1
    store.close()
    assert not threads[0].is_alive()
    assert _checkpoint_threads() == []


def test_a_checkpoint_held_back_by_a_reader_loses_nothing(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "store")
    db = store.backend.path
    blocker = sqlite3.connect(db, isolation_level=None)
    blocker.execute("BEGIN")
    blocker.execute("SELECT COUNT(*) FROM nodes").fetchone()  # a reader pins the log
    _fill(store, 2 * wc.COMMITS_PER_CHECKPOINT)
    blocker.execute("COMMIT")
    blocker.close()
    names = [n.name for n in store.list_nodes(store.list_sessions()[0].id)]
    assert len(names) == 2 * wc.COMMITS_PER_CHECKPOINT
    store.close()
    reopened = SessionStore(tmp_path / "store")
    assert len(reopened.list_nodes(reopened.list_sessions()[0].id)) == len(names)
    reopened.close()


def test_read_only_stores_have_no_checkpointer(tmp_path: Path) -> None:
    SessionStore(tmp_path / "store").close()
    from openprogram.store.sqlite import SqliteBackend

    ro = SqliteBackend(tmp_path / "store" / "openprogram.db", read_only=True)
    assert ro.checkpointer is None
    ro.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_forks_during_checkpoints_never_hang_the_child(tmp_path: Path) -> None:
    """fork() while the thread may be inside SQLite: each child writes, checkpoints with its
    own thread and exits; the parent's thread and store go on."""
    store = SessionStore(tmp_path / "store")
    checkpointer = store.backend.checkpointer
    assert checkpointer is not None
    for _ in range(20):
        _fill(store, wc.COMMITS_PER_CHECKPOINT)  # wakes the thread: a checkpoint starts
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child reports through the pipe
            code = 1
            try:
                _fill(store, wc.COMMITS_PER_CHECKPOINT)
                worker = checkpointer._worker
                ok = worker is not None and worker.pid == os.getpid()
                store.close()
                code = 0 if ok and _checkpoint_threads() == [] else 2
            finally:
                os.write(write, bytes([code]))
                os._exit(0)
        os.close(write)
        ready, _, _ = select.select([read], [], [], 60)
        if not ready:
            os.kill(pid, signal.SIGKILL)
        status = os.read(read, 1) if ready else b"hung"
        os.close(read)
        os.waitpid(pid, 0)
        assert status == b"\x00"
    # the children's nodes are in the shared file, the parent's thread still works
    sid = store.list_sessions()[0].id
    assert len(store.list_nodes(sid)) == 40 * wc.COMMITS_PER_CHECKPOINT
    assert len(_checkpoint_threads()) == 1
    store.close()
    assert _checkpoint_threads() == []


def test_an_idle_thread_ends_and_the_next_commits_start_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wc, "IDLE_EXIT_S", 0.05)
    store = SessionStore(tmp_path / "store")
    checkpointer = store.backend.checkpointer
    assert checkpointer is not None
    _fill(store, wc.COMMITS_PER_CHECKPOINT)
    [first] = _checkpoint_threads()
    first.join(timeout=30)
    assert not first.is_alive()
    _fill(store, wc.COMMITS_PER_CHECKPOINT)
    [second] = _checkpoint_threads()
    assert second is not first
    store.close()
    assert checkpointer.checkpoints >= 1
    assert _checkpoint_threads() == []


def test_a_process_that_never_closes_its_store_exits(tmp_path: Path) -> None:
    script = (
        "from openprogram.store import SessionStore\n"
        "from openprogram.store import wal_checkpointer as wc\n"
        f"store = SessionStore({str(tmp_path / 'store')!r})\n"
        "sid = store.create_session('s')\n"
        "for i in range(2 * wc.COMMITS_PER_CHECKPOINT):\n"
        "    store.backend.append_json(sid, 'code', 'n', None, '1', None, 'running', '{}', 0.0)\n"
        "    store.backend.checkpointer.committed()\n"
        "print('done')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "done"
    store = SessionStore(tmp_path / "store")
    assert len(store.list_nodes(store.list_sessions()[0].id)) == 2 * wc.COMMITS_PER_CHECKPOINT
    store.close()
