"""Concurrent writers (threads and processes) and a writer killed with SIGKILL."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from openprogram.store import SessionNodeWriter, SessionStore

WRITER = """
import sys, os, time
from pathlib import Path
from openprogram.store import SessionStore, SessionNodeWriter
root, sid, tag, count, go = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
store = SessionStore(root)
writer = SessionNodeWriter(store, sid)
if go != "-":
    Path(f"{go}.{tag}").touch()  # opened: ready to start
while go != "-" and not Path(go).exists():
    time.sleep(0.001)
i = 0
while count < 0 or i < count:
    node = writer.append("code", f"{tag}-{i}", input={"tag": tag, "i": i})
    writer.update(node.id, status="completed", output=i)
    print(node.id, node.seq, flush=True)
    i += 1
    if i % 10 == 0:
        time.sleep(0.001)  # let the other writers in: appends interleave
store.close()
"""


def _integrity(db: Path) -> str:
    conn = sqlite3.connect(db)
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


def _assert_consistent(store: SessionStore, sid: str, expected: int) -> None:
    nodes = store.list_nodes(sid)
    assert len(nodes) == expected
    assert [n.seq for n in nodes] == list(range(1, expected + 1))
    assert len({n.id for n in nodes}) == expected
    # every predecessor is the node right before it (one linear conversation)
    assert [n.predecessor_id for n in nodes[1:]] == [n.id for n in nodes[:-1]]


def test_eight_threads_append_to_one_session(tmp_path: Path) -> None:
    per_thread = 60
    with SessionStore(tmp_path) as store:
        sid = store.create_session("shared")
        writer = SessionNodeWriter(store, sid)
        barrier = threading.Barrier(8)
        seen: dict[int, list[int]] = {}
        errors: list[BaseException] = []

        def work(t: int) -> None:
            try:
                barrier.wait()
                seqs = []
                for i in range(per_thread):
                    node = writer.append("code", f"t{t}-{i}", input={"t": t, "i": i})
                    writer.update(node.id, status="completed", metadata={"t": t})
                    seqs.append(node.seq)
                seen[t] = seqs
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert not errors
        for seqs in seen.values():  # each writer sees its own seqs strictly increasing
            assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
        _assert_consistent(store, sid, 8 * per_thread)
        assert all(n.status == "completed" for n in store.list_nodes(sid))
    assert _integrity(tmp_path / "openprogram.db") == "ok"


@pytest.mark.slow
def test_two_processes_and_the_parent_append_to_one_session(tmp_path: Path) -> None:
    per_proc = 300
    go = tmp_path / "go"
    with SessionStore(tmp_path) as store:
        sid = store.create_session("shared")
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", WRITER, str(tmp_path), sid, tag, str(per_proc), str(go)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for tag in ("p1", "p2")
        ]
        writer = SessionNodeWriter(store, sid)
        # both children have opened the store (a fixed sleep lost this race on a loaded
        # machine: one child finished before the other started, and nothing overlapped)
        deadline = time.monotonic() + 60
        while not all(Path(f"{go}.{tag}").exists() for tag in ("p1", "p2")):
            assert time.monotonic() < deadline and all(p.poll() is None for p in procs)
            time.sleep(0.01)
        go.touch()
        local_seqs = []
        for i in range(100):
            local_seqs.append(writer.append("user", f"local-{i}").seq)
            time.sleep(0.001)
        outputs = [p.communicate(timeout=120) for p in procs]
        for p, (_, err) in zip(procs, outputs, strict=True):
            assert p.returncode == 0, err
        per_writer = [[int(line.split()[1]) for line in out.splitlines()] for out, _ in outputs]
        per_writer.append(local_seqs)
        for seqs in per_writer:
            assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
        assert [len(s) for s in per_writer] == [per_proc, per_proc, 100]
        # the writers really overlapped: the two processes' seq ranges interleave
        p1, p2 = per_writer[0], per_writer[1]
        assert max(p1[0], p2[0]) < min(p1[-1], p2[-1])
        _assert_consistent(store, sid, 2 * per_proc + 100)
    assert _integrity(tmp_path / "openprogram.db") == "ok"


@pytest.mark.slow
def test_writer_killed_with_sigkill_leaves_committed_nodes_readable(tmp_path: Path) -> None:
    with SessionStore(tmp_path) as store:
        sid = store.create_session("victim")
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(tmp_path), sid, "k", "-1", "-"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    committed: list[tuple[str, int]] = []
    try:
        while len(committed) < 300:
            line = proc.stdout.readline()
            assert line, proc.stderr.read() if proc.stderr else ""
            node_id, seq_text = line.split()
            committed.append((node_id, int(seq_text)))
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        proc.stdout.close()
        if proc.stderr is not None:
            proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    assert _integrity(tmp_path / "openprogram.db") == "ok"
    with SessionStore(tmp_path) as store:
        for node_id, seq in committed:
            node = store.get_node(node_id)
            assert node is not None and node.seq == seq
        nodes = store.list_nodes(sid)
        assert len(nodes) >= len(committed)
        assert [n.seq for n in nodes] == list(range(1, len(nodes) + 1))
        # the store is still writable after the crash
        after = SessionNodeWriter(store, sid).append("user", "after")
        assert after.seq == len(nodes) + 1
