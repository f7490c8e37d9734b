"""Appending nodes to a large store: time-ordered ids (``store.ids``) beside random ones.

A store that has recorded many runs holds a large ``nodes`` table whose primary-key
index is keyed by node id. With random ids every append lands on a random page of that
index, which a store larger than SQLite's page cache must read first; with the
time-ordered ids of ``openprogram.store.ids`` (milliseconds, then 80 random bits) every
append lands on the index's last page. For each id scheme, in a fresh temp directory:
fill a SQLite store with ``--nodes`` nodes of one session (one transaction), reopen it,
then time ``--appends`` single-statement appends to a new session (the recording hot
path, ``SqliteBackend.append_json``). Rounds alternate the schemes; medians are printed.

Usage::

    .venv/bin/python benchmarks/node_ids.py [--nodes 1000000] [--appends 3000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from openprogram.store import SessionStore
from openprogram.store import ids as store_ids
from openprogram.store import sqlite as store_sqlite
from openprogram.store.sqlite import SqliteBackend


def random_id() -> str:
    """The previous scheme: 128 random bits."""
    return os.urandom(16).hex()


SCHEMES: dict[str, Callable[[], str]] = {"random": random_id, "time-ordered": store_ids.new_id}


def one(tmp: Path, scheme: Callable[[], str], nodes: int, appends: int) -> float:
    store = SessionStore(tmp / "store")
    assert isinstance(store.backend, SqliteBackend)
    conn = store.backend.connection()
    sid = store.create_session("history")
    now = time.time()
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO nodes (id, session_id, seq, kind, name, input, status, metadata, "
        "created_at, updated_at) VALUES (?, ?, ?, 'code', 'old', '{}', 'completed', '{}', ?, ?)",
        ((scheme(), sid, i + 1, now, now) for i in range(nodes)),
    )
    conn.execute("COMMIT")
    store.close()
    saved = store_sqlite.new_id
    store_sqlite.new_id = scheme  # the id the append path draws
    try:
        store = SessionStore(tmp / "store")
        backend = store.backend
        assert isinstance(backend, SqliteBackend)
        work = store.create_session("work")
        started = time.perf_counter()
        for _ in range(appends):
            backend.append_json(work, "code", "s", None, "{}", None, "running", "{}", time.time())
        elapsed = time.perf_counter() - started
        store.close()
    finally:
        store_sqlite.new_id = saved
    return elapsed / appends * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--nodes", type=int, default=1_000_000, help="nodes already stored")
    parser.add_argument("--appends", type=int, default=3000, help="appends timed")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    times: dict[str, list[float]] = {name: [] for name in SCHEMES}
    for _ in range(args.rounds):
        for name, scheme in SCHEMES.items():
            tmp = Path(tempfile.mkdtemp(prefix="op-ids-"))
            try:
                times[name].append(one(tmp, scheme, args.nodes, args.appends))
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    med = {name: statistics.median(v) for name, v in times.items()}
    print(f"{args.nodes} nodes stored, {args.appends} appends x {args.rounds} rounds; median µs")
    for name, value in med.items():
        print(f"  {name:<13} {value:8.1f}   {[round(v, 1) for v in times[name]]}")
    print(f"  time-ordered / random: {med['time-ordered'] / med['random']:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
