"""Runs on PostgreSQL, side by side in one run on one throwaway server (not a timed test).

Starts a temporary PostgreSQL cluster (``tests/pgcluster.py``: the installed server
binaries, ``fsync=on``) and measures on it, medians of ``--rounds`` (each round measures a
step beside its floor, in alternating order; the per-round ratios and their median are
printed too, since a shared host's load moves both between rounds):

* ``floor off/on`` — a bare psycopg insert of one node-shaped row, autocommit (the insert
  and its commit in one statement, one round trip, as a step's write is), with
  ``synchronous_commit`` off / on: what a step's one commit cannot beat;
* ``CPU per step`` — client plus server CPU (Linux ``/proc/PID/schedstat`` of the server's
  processes) per floor insert and per step, the latter between the starts of a run's
  second and last steps: the work a step costs, which the host's scheduling noise moves
  far less than wall time;
* ``floor in BEGIN/COMMIT`` — the same insert inside an explicit transaction (three round
  trips: ``BEGIN``, the insert, ``COMMIT``), for reference only: the floor this benchmark
  used until stop 28, which flattered the ratios by its extra two round trips;
* ``ours process/power`` — ``openprogram.step`` in a resumable Program started with
  ``start_run`` on the same server: per step ``(time(N) - time(0)) / N``. Targets:
  process <= 2x floor(off), power <= 1.5x floor(on);
* ``dbos`` — ``@DBOS.step`` on the same server, when ``dbos`` is installed (optional);
* ``resume`` — a 10,000-step run whose last step failed, resumed: time to the dispatch of
  its last step (target <= 0.5 s);
* ``throughput`` — 200 runs of 20 trivial steps executed by 1, 2 and 4 worker processes
  (``openprogram worker --exit-when-idle``, timed from their start, so their start-up is
  included): runs/s and the scaling factor;
* ``claim latency`` — one idle worker; runs submitted one at a time: submit to first step,
  p50/p95;
* with ``--flush-delay-us N`` — ``power`` beside its floor again, on a second server whose
  every WAL flush returns ``N`` µs later (``slow_flush.c``, built with the C compiler and
  loaded with ``LD_PRELOAD``: a disk whose cache flush is that slow). The power ratio
  depends on the disk: where a flush is fast (this machine: about 90 µs) a step's CPU sets
  it; the issue's figures were taken where ``floor(on)`` was 2.37 ms
  (``--flush-delay-us 2370``).

Usage::

    .venv/bin/python benchmarks/pg_scaleout.py [--steps 300] [--rounds 3] [--runs 200]
        [--no-throughput]   # step costs and resume only (skips throughput, claim latency)
        [--flush-delay-us 2370]   # also the step ratios with a slower WAL flush
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from pgcluster import Cluster, find_bindir

PROGRAM = '''
import os

from openprogram import step

HERE = os.path.dirname(os.path.abspath(__file__))


def tiny(i: int, last: int) -> dict:
    """A trivial step (fails at the last index while the file "stop" exists)."""
    if i == last and os.path.exists(os.path.join(HERE, "stop")):
        raise RuntimeError("stopped before the last step")
    return {"i": i, "ok": True}


def chain(n: int) -> int:
    total = 0
    for i in range(n):
        total += step("s", tiny, i, n - 1)["i"]
    return total


chain.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["chain"]
'''
OPENPROGRAM = str(Path(sys.executable).parent / "openprogram")


def server_cpu_s(cluster: Cluster) -> float | None:
    """CPU seconds the server's live processes have used (Linux ``schedstat``), or
    ``None`` where that cannot be read. Read while the measured connection is open: a
    backend that exits takes its count with it."""
    total = 0
    for pid in cluster.processes():
        try:
            total += int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])
        except FileNotFoundError:  # exited meanwhile (not the measured one)
            continue
        except (OSError, ValueError, IndexError):
            return None
    return total / 1e9


def _cpu(cluster: Cluster | None) -> tuple[float, float | None]:
    return time.process_time(), None if cluster is None else server_cpu_s(cluster)


def _cpu_us(
    start: tuple[float, float | None], end: tuple[float, float | None], n: int
) -> float | None:
    """Client plus server CPU µs per item between two :func:`_cpu` readings."""
    if start[1] is None or end[1] is None:
        return None
    return ((end[0] - start[0]) + (end[1] - start[1])) / n * 1e6


def floor(
    dsn: str, n: int, sync: str, *, transaction: bool = False, cluster: Cluster | None = None
) -> tuple[float, float | None]:
    """µs per bare node-shaped insert + commit: autocommit (one round trip), or inside
    an explicit ``BEGIN``/``COMMIT`` when ``transaction``; and CPU µs per insert, client
    plus server (with ``cluster``, on Linux)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"SET synchronous_commit = {sync}")
        conn.execute(
            "CREATE TABLE IF NOT EXISTS floor_nodes (id TEXT PRIMARY KEY, session_id TEXT, "
            "seq BIGINT, kind TEXT, name TEXT, caller_id TEXT, predecessor_id TEXT, "
            "input TEXT, output TEXT, status TEXT, metadata TEXT, created_at DOUBLE PRECISION, "
            "updated_at DOUBLE PRECISION)"
        )
        cpu = _cpu(cluster)
        t = time.perf_counter()
        for i in range(n):
            with conn.transaction() if transaction else nullcontext():
                conn.execute(
                    "INSERT INTO floor_nodes VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
                    (os.urandom(16).hex(), "s", i, "code", "s", None, None,
                     '{"args": [1, 2], "kwargs": {}}', '{"i": 1, "ok": true}', "completed",
                     "{}", time.time(), time.time()),
                    prepare=True,
                )  # fmt: skip
        wall = (time.perf_counter() - t) / n * 1e6
        return wall, _cpu_us(cpu, _cpu(cluster), n)


def ours(
    dsn: str, tmp: Path, n: int, mode: str, cluster: Cluster | None = None
) -> tuple[float, float | None]:
    """µs per step: ``(time(n) - time(0)) / n``; and CPU µs per step, client plus server,
    between the starts of the second and the last step of the ``n``-step run (with
    ``cluster``, on Linux: read while the run's connection is open)."""
    from openprogram.durable.runner import start_run

    ref = f"{tmp / 'prog.py'}:chain"
    times = {}
    marks: list[tuple[float, float | None]] = []
    spent = [0.0]  # reading the CPU counters is not the step's time

    def progress(event: str, key: str) -> None:
        if event == "start" and key in ("s#1", f"s#{n - 1}"):
            t = time.perf_counter()
            marks.append(_cpu(cluster))
            spent[0] += time.perf_counter() - t

    for label, steps in (("warm", 10), ("zero", 0), ("full", n)):
        watch = progress if label == "full" and cluster is not None else None
        t = time.perf_counter()
        out = start_run(ref, {"n": steps}, store=dsn, durability=mode, on_progress=watch)
        times[label] = time.perf_counter() - t - (spent[0] if watch else 0.0)
        assert out.status == "completed", out
    cpu = _cpu_us(marks[0], marks[1], n - 2) if len(marks) == 2 else None
    return (times["full"] - times["zero"]) / n * 1e6, cpu


def dbos_step(dsn: str, n: int) -> float | str:
    try:
        from dbos import DBOS
    except ImportError:
        return "skipped: pip install dbos"
    DBOS(  # its INFO lines (about 80 at launch) would bury the figures
        config={"name": "bench", "system_database_url": dsn, "log_level": "WARNING"}  # type: ignore[typeddict-unknown-key]
    )

    @DBOS.step()
    def tiny(i: int) -> dict[str, object]:
        return {"i": i, "ok": True}

    @DBOS.workflow()
    def chain(count: int) -> int:
        return sum(int(tiny(i)["i"]) for i in range(count))  # type: ignore[call-overload]

    DBOS.launch()
    try:
        chain(5)
        t = time.perf_counter()
        chain(0)
        zero = time.perf_counter() - t
        t = time.perf_counter()
        chain(n)
        return ((time.perf_counter() - t) - zero) / n * 1e6
    finally:
        DBOS.destroy()


def resume(dsn: str, tmp: Path, n: int, rounds: int) -> list[float]:
    """Seconds from ``resume_run`` to the dispatch of the last step of an ``n``-step run
    whose last step failed (its ``n - 1`` saved results loaded and replayed); the last
    step keeps failing, so the same run is resumed ``rounds`` times."""
    from openprogram.durable.runner import resume_run, start_run

    (tmp / "stop").touch()
    try:
        first = start_run(f"{tmp / 'prog.py'}:chain", {"n": n}, store=dsn)
        assert first.status == "failed", first
        out: list[float] = []
        started = [0.0]

        def progress(event: str, key: str) -> None:
            if event == "start" and key == f"s#{n - 1}":
                out.append(time.perf_counter() - started[0])

        for _ in range(rounds):
            started[0] = time.perf_counter()
            again = resume_run(first.run_id, store=dsn, on_progress=progress)
            assert again.status == "failed", again
        assert len(out) == rounds, out
        return out
    finally:
        (tmp / "stop").unlink()


def throughput(cluster: Cluster, tmp: Path, runs: int, steps: int, workers: int) -> float:
    from openprogram.durable.runner import submit_run

    dsn = cluster.create_database()
    for _ in range(runs):
        submit_run(f"{tmp / 'prog.py'}:chain", {"n": steps}, store=dsn)
    t = time.perf_counter()
    procs = [
        subprocess.Popen(
            [OPENPROGRAM, "worker", "--store", dsn, "--exit-when-idle", "--poll", "0.05"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,  # a line per claimed run: not the benchmark's output
        )
        for _ in range(workers)
    ]
    for p in procs:
        p.wait()
    return runs / (time.perf_counter() - t)


def claim_latency(cluster: Cluster, tmp: Path, samples: int) -> list[float]:
    from openprogram.durable.runner import submit_run
    from openprogram.store.runs import read_run_store

    dsn = cluster.create_database()
    worker = subprocess.Popen(
        [OPENPROGRAM, "worker", "--store", dsn, "--poll", "0.05"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    ids = []
    try:
        time.sleep(3)  # the worker is up and idle
        for _ in range(samples):
            ids.append(submit_run(f"{tmp / 'prog.py'}:chain", {"n": 1}, store=dsn))
            time.sleep(0.3)
        time.sleep(2)
    finally:
        worker.terminate()
        worker.wait()
    out = []
    runs = read_run_store(dsn)
    assert runs is not None
    with runs:
        for rid in ids:
            run = runs.get_run(rid)
            steps = runs.load_steps(rid)
            assert run is not None and steps, rid
            out.append((float(steps[0].started_at or 0) - run.created_at) * 1000)
    return out


#: Each durability measured, and the ``synchronous_commit`` of its floor.
MODES = (("process", "off"), ("power", "on"))


def step_rounds(
    cluster: Cluster,
    tmp: Path,
    steps: int,
    rounds: int,
    *,
    modes: tuple[tuple[str, str], ...] = MODES,
    references: bool = True,
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """µs per step and per floor insert (and their CPU µs), ``rounds`` of each: a step
    beside its floor, in alternating order (a drifting host load favours neither side);
    the ``references`` (the floors in ``BEGIN``/``COMMIT``) after them."""
    dsn = cluster.create_database()
    keys = [k for mode, sync in modes for k in (mode, "f_" + sync)]
    rows: dict[str, list[float]] = {k: [] for k in (*keys, "f_tx_off", "f_tx_on")}
    cpu: dict[str, list[float]] = {k: [] for k in keys}

    def keep(key: str, measured: tuple[float, float | None]) -> None:
        rows[key].append(measured[0])
        if measured[1] is not None and key in cpu:
            cpu[key].append(measured[1])

    for r in range(rounds):
        for mode, sync in modes:
            if r % 2 == 0:
                keep("f_" + sync, floor(dsn, steps, sync, cluster=cluster))
            keep(mode, ours(cluster.create_database(), tmp, steps, mode, cluster))
            if r % 2 == 1:
                keep("f_" + sync, floor(dsn, steps, sync, cluster=cluster))
        if references:
            keep("f_tx_off", floor(dsn, steps, "off", transaction=True))
            keep("f_tx_on", floor(dsn, steps, "on", transaction=True))
    return rows, cpu


def round_ratios(
    rows: dict[str, list[float]], modes: tuple[tuple[str, str], ...] = MODES
) -> dict[str, float]:
    """Per mode, the median of its rounds' step/floor ratios."""
    return {
        mode: statistics.median(a / b for a, b in zip(rows[mode], rows["f_" + sync], strict=True))
        for mode, sync in modes
    }


def build_slow_flush(into: Path) -> Path | None:
    """``slow_flush.c`` built as a shared library in ``into`` (readable by the server's
    user), or ``None`` without a C compiler."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        return None
    lib = into / "slow_flush.so"
    source = Path(__file__).resolve().parent / "slow_flush.c"
    subprocess.run(
        [compiler, "-O2", "-shared", "-fPIC", "-o", str(lib), str(source), "-ldl"], check=True
    )
    lib.chmod(0o755)
    return lib


def slow_flush_ratios(
    bindir: Path, tmp: Path, delay_us: int, steps: int, rounds: int
) -> tuple[dict[str, float], dict[str, float]] | str:
    """``power`` beside ``floor(on)`` on a server whose WAL flush is ``delay_us`` slower:
    medians (µs) and the round ratio. ``process`` commits without waiting for a flush, so
    its ratio is not what such a disk changes (its server's WAL writer flushes less often
    there, which moves both sides unevenly on two CPUs)."""
    cluster = Cluster(bindir, fsync=True)
    try:
        lib = build_slow_flush(cluster.base)
        if lib is None:
            return "skipped: no C compiler (cc) to build slow_flush.c"
        cluster.server_env = {"LD_PRELOAD": str(lib), "OPENPROGRAM_FLUSH_DELAY_US": str(delay_us)}
        cluster.start()
        power = (("power", "on"),)
        rows, _ = step_rounds(cluster, tmp, steps, rounds, modes=power, references=False)
    finally:
        cluster.stop()
    return {k: statistics.median(rows[k]) for k in ("f_on", "power")}, round_ratios(rows, power)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--resume-steps", type=int, default=10_000)
    parser.add_argument("--no-throughput", action="store_true")
    parser.add_argument(
        "--flush-delay-us",
        type=int,
        default=0,
        help="also measure the step ratios with every WAL flush this much slower (the "
        "issue's disk: 2370)",
    )
    args = parser.parse_args(argv)
    bindir = find_bindir()
    if bindir is None:
        print("skipped: no PostgreSQL server binaries (apt-get install postgresql)")
        return 0
    cluster = Cluster(bindir, fsync=True).start()
    tmp = Path(tempfile.mkdtemp(prefix="op-pg-bench-"))
    (tmp / "prog.py").write_text(PROGRAM, encoding="utf-8")
    try:
        rows, cpu = step_rounds(cluster, tmp, args.steps, args.rounds)
        med = {k: statistics.median(v) for k, v in rows.items()}
        paired = round_ratios(rows)
        cpu_med = {k: statistics.median(v) for k, v in cpu.items() if len(v) == args.rounds}
        dbos = dbos_step(cluster.create_database(), args.steps)
        res = statistics.median(
            resume(cluster.create_database(), tmp, args.resume_steps, args.rounds)
        )
        tput = {
            w: statistics.median(
                throughput(cluster, tmp, args.runs, 20, w) for _ in range(args.rounds)
            )
            for w in ((1, 2, 4) if not args.no_throughput else ())
        }
        lat = sorted(claim_latency(cluster, tmp, 20)) if not args.no_throughput else []
        print(f"PostgreSQL 15 (fsync=on), {os.cpu_count()} cpus; {args.steps} steps x "
              f"{args.rounds} rounds; median µs per step")  # fmt: skip
        print(f"  bare insert+commit synchronous_commit=off   {med['f_off']:8.1f}")
        print(f"  bare insert+commit synchronous_commit=on    {med['f_on']:8.1f}")
        print(f"  (reference) insert in BEGIN/COMMIT, off     {med['f_tx_off']:8.1f}")
        print(f"  (reference) insert in BEGIN/COMMIT, on      {med['f_tx_on']:8.1f}")
        print(f"  openprogram step (process)                  {med['process']:8.1f}")
        print(f"  openprogram step (power)                    {med['power']:8.1f}")
        print(f"  DBOS @DBOS.step                             "
              f"{dbos if isinstance(dbos, str) else f'{dbos:8.1f}'}")  # fmt: skip
        print(f"  resume of a {args.resume_steps}-step run to its last step: {res:.3f} s (median)")
        for w, v in tput.items():
            print(f"  throughput {args.runs} runs x 20 steps, {w} worker(s): {v:6.1f} runs/s "
                  f"(x{v / tput[1]:.2f})")  # fmt: skip
        if lat:
            p50 = lat[len(lat) // 2]
            p95 = lat[min(len(lat) - 1, int(len(lat) * 0.95))]
            print(f"  claim latency submit -> first step: p50 {p50:.0f} ms, p95 {p95:.0f} ms")
        checks = [
            ("process / floor(off)", med["process"] / med["f_off"], 2.0),
            ("power / floor(on)", med["power"] / med["f_on"], 1.5),
            (f"resume {args.resume_steps} steps (s)", res, 0.5),
        ]
        for label, value, target in checks:
            verdict = "PASS" if value <= target else "FAIL"
            print(f"  {verdict}  {label}: {value:.2f} (target <= {target})")
        for mode, sync in MODES:
            rounds = " ".join(
                f"{a:.0f}/{b:.0f}" for a, b in zip(rows[mode], rows["f_" + sync], strict=True)
            )
            print(f"  rounds, {mode} / floor({sync}) µs: {rounds}; median of the "
                  f"round ratios {paired[mode]:.2f}")  # fmt: skip
        if len(cpu_med) == 4:
            print(f"  CPU per step, client + server (µs): floor off {cpu_med['f_off']:.0f}, "
                  f"process {cpu_med['process']:.0f} ({cpu_med['process'] / cpu_med['f_off']:.2f}x); "
                  f"floor on {cpu_med['f_on']:.0f}, power {cpu_med['power']:.0f} "
                  f"({cpu_med['power'] / cpu_med['f_on']:.2f}x)")  # fmt: skip
        print(f"  (reference) process / BEGIN-COMMIT floor(off): "
              f"{med['process'] / med['f_tx_off']:.2f}; power / BEGIN-COMMIT floor(on): "
              f"{med['power'] / med['f_tx_on']:.2f}")  # fmt: skip
        slow: dict[str, object] = {}
        if args.flush_delay_us > 0:
            found = slow_flush_ratios(bindir, tmp, args.flush_delay_us, args.steps, args.rounds)
            if isinstance(found, str):
                print(f"  with a WAL flush {args.flush_delay_us} µs slower: {found}")
            else:
                s_med, s_paired = found
                slow = {
                    "delay_us": args.flush_delay_us,
                    "medians_us": s_med,
                    "round_ratios": s_paired,
                }
                value = s_med["power"] / s_med["f_on"]
                print(f"  with every WAL flush {args.flush_delay_us} µs slower (a second "
                      f"server), median µs: floor(on) {s_med['f_on']:.1f}, power "
                      f"{s_med['power']:.1f}")  # fmt: skip
                print(f"  {'PASS' if value <= 1.5 else 'FAIL'}  power / floor(on), slower "
                      f"flush: {value:.2f} (target <= 1.5; median of the round ratios "
                      f"{s_paired['power']:.2f})")  # fmt: skip
        print(json.dumps({"medians_us": med, "round_ratios": paired, "cpu_us": cpu_med,
                          "resume_s": res, "throughput": tput, "slow_flush": slow}))  # fmt: skip
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
