"""Connections of the PostgreSQL store: a run's thread holds one (``pinned``), never more
than half the pool, and a held connection the server dropped is replaced before use."""

from __future__ import annotations

import threading
import time

import psycopg

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
