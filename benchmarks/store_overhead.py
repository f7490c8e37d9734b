"""Store overhead per recorded node, beside a bare sqlite3 insert-and-commit floor.

Measures, in the same run and on the same disk (a fresh temp directory per run):

(a) ``code`` node: enter + exit of ``call_scope`` with a session writer installed
    (one append when the call starts, one update when it returns);
(b) ``llm`` node: ``record_llm_call`` with a hand-built scripted-style request/response;
(c) floor: a bare ``sqlite3`` loop inserting one node-shaped row per transaction into a
    table with the same columns (WAL, ``synchronous=NORMAL``, autocommit).

and, to show where the time goes, (d) ``SessionNodeWriter.append`` alone with a small
input (the store's own cost per node, without ``openprogram.scope``'s serialization) and
(e) the floor loop on a table that also has the store's unique ``(session_id, seq)``
index (reference only; the ratios are always to the plain floor (c)).

Every timing includes closing the connection/store, so work a case defers to its final
checkpoint is counted. Each run times every case back to back; the reported figures are
medians over runs of µs per node (wall clock and CPU time of this process) and the median
of the per-run ratios to the floor (target: <= 2x). CPU time is the steadier figure on a
busy machine.
Usage::

    .venv/bin/python benchmarks/store_overhead.py [--nodes 2000] [--runs 7]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from openprogram.runtime.types import Message, ModelRequest, ModelResponse, ToolSpec, Usage
from openprogram.scope import call_scope, record_llm_call, set_output, use_writer
from openprogram.store import SessionNodeWriter, SessionStore

BARE_TABLE = """
CREATE TABLE nodes (
    id TEXT PRIMARY KEY, session_id TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL,
    name TEXT NOT NULL, caller_id TEXT, predecessor_id TEXT, input TEXT, output TEXT,
    status TEXT NOT NULL, metadata TEXT NOT NULL, created_at REAL NOT NULL,
    updated_at REAL NOT NULL
)
"""


Timer = Callable[[], float]


def _clocks() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def bare_floor(root: Path, n: int, *, create: bool = True) -> tuple[float, float]:
    """(wall, cpu) seconds for ``n`` single-row insert+commit transactions, plain sqlite3,
    and closing the connection (its final checkpoint)."""
    conn = sqlite3.connect(root / "bare.db", isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    if create:
        conn.execute(BARE_TABLE)
    sql = "INSERT INTO nodes VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)"
    inp = json.dumps({"i": 0})
    w0, c0 = _clocks()
    for i in range(n):
        now = time.time()
        conn.execute(
            sql,
            (
                os.urandom(16).hex(),
                "s",
                i,
                "code",
                "step",
                None,
                None,
                inp,
                None,
                "completed",
                "{}",
                now,
                now,
            ),
        )
    conn.close()
    w1, c1 = _clocks()
    return w1 - w0, c1 - c0


def indexed_floor(root: Path, n: int) -> tuple[float, float]:
    """The floor loop on a table that also has the store's unique ``(session_id, seq)``
    index (a third B-tree to write per row): what any node store keyed by seq pays."""
    conn = sqlite3.connect(root / "bare.db", isolation_level=None)
    conn.execute(BARE_TABLE)
    conn.execute("CREATE UNIQUE INDEX nodes_session_seq ON nodes(session_id, seq)")
    conn.close()
    return bare_floor(root, n, create=False)


def code_nodes(root: Path, n: int) -> tuple[float, float]:
    """(wall, cpu) seconds for ``n`` code nodes written by ``call_scope`` enter + exit,
    and closing the store."""
    store = SessionStore(root / "store")
    writer = SessionNodeWriter(store, store.create_session("bench"))
    with use_writer(writer):
        w0, c0 = _clocks()
        for i in range(n):
            with call_scope("step", inputs={"i": i}) as frame:
                set_output(frame, i)
        store.close()
        w1, c1 = _clocks()
    with SessionStore(root / "store") as check:
        nodes = check.list_nodes("bench")
        assert len(nodes) == n and all(x.status == "completed" for x in nodes)
    return w1 - w0, c1 - c0


def llm_nodes(root: Path, n: int) -> tuple[float, float]:
    """(wall, cpu) seconds for ``n`` llm nodes written by ``record_llm_call``."""
    request = ModelRequest(
        model_id="scripted:bench",
        messages=[Message(role="user", content="Summarise the report in one line.")],
        system="You are terse.",
        tools=[ToolSpec("lookup", "Look a word up.", {"type": "object", "properties": {}})],
    )
    response = ModelResponse(
        text="The report says sales grew.",
        usage=Usage(input_tokens=12, output_tokens=7),
        model="scripted",
        finish_reason="stop",
    )
    store = SessionStore(root / "store_llm")
    writer = SessionNodeWriter(store, store.create_session("bench"))
    with use_writer(writer):
        w0, c0 = _clocks()
        for _ in range(n):
            record_llm_call(
                provider="scripted", request=request, response=response, duration_s=0.001
            )
        store.close()
        w1, c1 = _clocks()
    with SessionStore(root / "store_llm") as check:
        assert len(check.list_nodes("bench")) == n
    return w1 - w0, c1 - c0


def store_appends(root: Path, n: int) -> tuple[float, float]:
    """(wall, cpu) seconds for ``n`` bare ``SessionNodeWriter.append`` calls."""
    store = SessionStore(root / "store_append")
    writer = SessionNodeWriter(store, store.create_session("bench"))
    w0, c0 = _clocks()
    for i in range(n):
        writer.append("code", "step", input={"i": i}, status="completed")
    store.close()
    w1, c1 = _clocks()
    return w1 - w0, c1 - c0


FLOOR = "bare sqlite3 insert+commit"
CASES: dict[str, Callable[[Path, int], tuple[float, float]]] = {
    FLOOR: bare_floor,
    "floor + (session_id, seq) index": indexed_floor,
    "code node (call_scope)": code_nodes,
    "llm node (record_llm_call)": llm_nodes,
    "store append alone": store_appends,
}
TARGETS = ("code node (call_scope)", "llm node (record_llm_call)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--nodes", type=int, default=2000, help="nodes per run")
    parser.add_argument("--runs", type=int, default=7, help="runs (median reported)")
    args = parser.parse_args(argv)
    wall: dict[str, list[float]] = {name: [] for name in CASES}
    cpu: dict[str, list[float]] = {name: [] for name in CASES}
    for _ in range(args.runs):
        for name, fn in CASES.items():  # back to back so drift hits every case alike
            root = Path(tempfile.mkdtemp(prefix="op-bench-"))
            try:
                w, c = fn(root, args.nodes)
            finally:
                shutil.rmtree(root, ignore_errors=True)
            wall[name].append(w / args.nodes * 1e6)
            cpu[name].append(c / args.nodes * 1e6)
    med = statistics.median
    print(
        f"sqlite {sqlite3.sqlite_version}, python {sys.version.split()[0]}, "
        f"{args.nodes} nodes x {args.runs} runs; median µs per node (ratio to floor)"
    )
    print(f"  {'case':34s} {'wall µs':>9s} {'ratio':>6s} {'cpu µs':>9s} {'ratio':>6s}")
    worst = worst_cpu = 0.0
    for name in CASES:
        w_ratio = med([a / b for a, b in zip(wall[name], wall[FLOOR], strict=True)])
        c_ratio = med([a / b for a, b in zip(cpu[name], cpu[FLOOR], strict=True)])
        print(
            f"  {name:34s} {med(wall[name]):9.1f} {w_ratio:5.2f}x "
            f"{med(cpu[name]):9.1f} {c_ratio:5.2f}x"
        )
        if name in TARGETS:
            worst = max(worst, w_ratio)
            worst_cpu = max(worst_cpu, c_ratio)
    for label, value in (("wall", worst), ("cpu", worst_cpu)):
        verdict = "PASS" if value <= 2.0 else "FAIL"
        print(f"{verdict}  target <= 2.00x floor ({label}): worst {value:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
