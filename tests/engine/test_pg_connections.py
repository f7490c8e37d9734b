"""Connections of the PostgreSQL store: a run's thread holds one (``pinned``), never more
than half the pool, a held connection the server dropped is replaced before use, and
threads appending to one session are ordered by its row."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest

from openprogram.errors import StoreError
from openprogram.store import SessionNodeWriter, SessionStore
from openprogram.store.postgres import PostgresBackend


def _pid(backend: PostgresBackend) -> int:
    return int(backend.execute("SELECT pg_backend_pid()")[0][0])


def test_a_pinned_thread_keeps_one_connection_and_leaves_half_the_pool(pg_dsn: str) -> None:
    backend = PostgresBackend(pg_dsn, max_size=4)
    release = threading.Event()
    seen: dict[int, tuple[int, int]] = {}
    ready = threading.Barrier(5)

    def run(i: int) -> None:
        with backend.pinned():
            seen[i] = (_pid(backend), _pid(backend))
            ready.wait(10)
            release.wait(10)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    try:
        for t in threads:
            t.start()
        ready.wait(10)  # 4 threads inside pinned(), each ran its statements
        # two of them hold a connection each (half the pool); the others checked out per
        # statement, so connections are left for everyone else
        conn = backend.pool.getconn(timeout=2.0)
        backend.pool.putconn(conn)
        assert _pid(backend) > 0
        same = [a == b for a, b in seen.values()]
        assert len(same) == 4 and same.count(True) >= 2
    finally:
        release.set()
        for t in threads:
            t.join(10)
        backend.close()


def test_a_pinned_connection_the_server_dropped_is_replaced(pg_dsn: str) -> None:
    backend = PostgresBackend(pg_dsn)
    try:
        with backend.pinned():
            first = _pid(backend)
            assert _pid(backend) == first  # held
            with psycopg.connect(pg_dsn, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(%s)", (first,))
            time.sleep(0.2)
            second = _pid(backend)  # no error: the dropped one was swapped before use
            assert second != first
            assert _pid(backend) == second
    finally:
        backend.close()


def test_a_pinned_connection_stays_usable_after_a_failed_statement(pg_dsn: str) -> None:
    """The held connection's cursor is reused: an error leaves it ready for the next."""
    backend = PostgresBackend(pg_dsn)
    try:
        with backend.pinned():
            first = _pid(backend)
            with pytest.raises(StoreError, match="division by zero"):
                backend.execute("SELECT 1 / 0")
            assert backend.execute("SELECT %s::int + 1", (41,)) == [(42,)]
            assert backend.execute("CREATE TEMP TABLE t (x int)") in (-1, 0)
            assert backend.execute("INSERT INTO t VALUES (1), (2)") == 2
            assert _pid(backend) == first
    finally:
        backend.close()


def test_threads_appending_to_one_session_make_one_chain(pg_dsn: str) -> None:
    """Concurrent appends are ordered by the session row: seqs 1..n without a gap, and each
    node follows the one appended before it (one chain, no fork)."""
    with SessionStore(pg_dsn) as store:
        sid = store.create_session("shared")
        writer = SessionNodeWriter(store, sid)
        start = threading.Barrier(4)

        def work(t: int) -> None:
            start.wait(10)
            for i in range(25):
                writer.append("code", f"t{t}-{i}")

        threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        nodes = sorted(store.list_nodes(sid), key=lambda n: n.seq)
    assert [n.seq for n in nodes] == list(range(1, 101))
    assert [n.predecessor_id for n in nodes] == [None] + [n.id for n in nodes[:-1]]
