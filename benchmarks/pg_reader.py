"""The editor's reads of a PostgreSQL store: opened per read vs one kept reader (not a
timed test).

Starts a temporary PostgreSQL cluster (``tests/pgcluster.py``), submits ``--runs`` runs
and times, medians of ``--reads`` reads in each of ``--rounds`` rounds, the reads the
language server makes (``queries.list_runs``: the Runs view and the hints;
``queries.store_version``: the watcher's fingerprint every 0.5 s;
``run_index.runs_for_file``: the code lenses) two ways:

* ``per read`` — each read opens the store and closes it (``queries.READERS`` off: what
  a command does, and what the server did before it kept its readers);
* ``kept`` — ``READERS.keep`` on, as in the server: the first read opens the URL's
  reader, every later one reuses it (its first read is left out).

Usage::

    .venv/bin/python benchmarks/pg_reader.py [--runs 20] [--reads 30] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from pgcluster import Cluster, find_bindir

PROGRAM = """
from openprogram import step


def one(i: int) -> int:
    return step("s", lambda: i)


one.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["one"]
"""


def median_ms(read: Callable[[], Any], reads: int) -> float:
    times = []
    for _ in range(reads):
        t0 = time.perf_counter()
        read()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--reads", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    ns = parser.parse_args()
    bindir = find_bindir()
    if bindir is None:
        sys.exit("no PostgreSQL server binaries (initdb, pg_ctl) found")
    from openprogram.durable import queries
    from openprogram.durable.runner import submit_run
    from openprogram_lsp.run_index import GATE, runs_for_file

    cluster = Cluster(bindir).start()
    try:
        url = cluster.create_database()
        work = Path(tempfile.mkdtemp(prefix="pg-reader-"))
        program = work / "prog.py"
        program.write_text(PROGRAM)
        for i in range(ns.runs):
            submit_run(f"{program}:one", {"i": i}, store=url)
        reads: dict[str, Callable[[], Any]] = {
            "list_runs (Runs view, hints)": lambda: queries.list_runs(url),
            "store_version (watcher)": lambda: queries.store_version(url),
            "runs_for_file (code lenses)": lambda: runs_for_file(url, str(program)),
        }
        assert len(queries.list_runs(url)) == ns.runs
        while not GATE.readable(url):  # the server's probe (lenses read after it succeeds)
            time.sleep(0.05)
        rows: dict[str, dict[str, list[float]]] = {name: {} for name in reads}
        for _ in range(ns.rounds):
            for mode in ("per read", "kept"):
                queries.READERS.keep = mode == "kept"
                for name, read in reads.items():
                    read()  # the kept reader's opening read (and a warm-up per read)
                    rows[name].setdefault(mode, []).append(median_ms(read, ns.reads))
                queries.READERS.close()
        print(f"{ns.runs} runs; median of {ns.reads} reads, median of {ns.rounds} rounds (ms)")
        print(f"{'read':32} {'per read':>9} {'kept':>9} {'ratio':>7}")
        for name, by_mode in rows.items():
            per, kept = (statistics.median(by_mode[m]) for m in ("per read", "kept"))
            print(f"{name:32} {per:9.2f} {kept:9.2f} {per / kept:6.1f}x")
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
