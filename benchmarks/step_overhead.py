"""Cost of one durable step: OpenProgram beside DBOS and LangGraph, in the same run.

Each case runs a workflow of N trivial steps (a step returning a small dict) on a SQLite
file in a fresh temp directory, and the same workflow with 0 steps; the cost per step is
``(time(N) - time(0)) / N``, so fixed per-run costs (loading the Program, starting the
workflow) cancel out. Cases, each in its own process per round, rounds interleaved:

* ``ours``        — ``openprogram.step`` in a resumable Program started with
                    ``start_run`` (default durability: WAL, synchronous=NORMAL; the step
                    record and its session-DAG node are written, as in production);
* ``ours-eager``  — ``OPENPROGRAM_DURABILITY=eager``: a step's result is committed as soon
                    as it returns (two commits per step instead of one);
* ``ours-power``  — ``OPENPROGRAM_DURABILITY=power``: the default with an fsync every step;
* ``dbos``        — ``@DBOS.step`` inside ``@DBOS.workflow`` with a SQLite system database;
* ``langgraph``   — ``@task`` inside ``@entrypoint`` with ``SqliteSaver`` (functional API);
* ``floor``       — a bare ``sqlite3`` insert+commit of one node-shaped row, WAL, NORMAL;
* ``floor-full``  — the same with synchronous=FULL;
* ``floor-bg``    — ``floor`` with its WAL checkpointed the way the store does it (on the
                    background thread of ``store/wal_checkpointer.py``, not inside the
                    commits): for reference, what the floor costs given the same help;
* ``floor-step``  — the rows one step writes, as bare ``sqlite3`` statements on the
                    store's own schema (WAL, NORMAL), one transaction per step: the
                    previous step's node exit with its result (an update) and the
                    step's running node with its dispatch record (an insert; schema v6
                    keeps a step's record in its node), both in the step log (schema
                    v8, ``store/step_log.py``) with its fold into ``nodes`` every
                    ``FOLD_AFTER`` steps, checkpointed as the store's own commits are —
                    what writing a step's records costs before any of OpenProgram's
                    code runs;
* ``store-step``  — the store's own step commit (``RunStore.write_step``, the call a
                    step makes: the previous step's result and this step's dispatch with
                    its running node) called in a plain loop, without the engine around
                    it — the statements as the store writes them (lease fence,
                    session-order check, metadata merge) plus the store's Python;
* ``resume``      — a 10,000-step run whose last step failed is resumed; the time from
                    ``resume_run()`` to the dispatch of step 10,000 (the first incomplete
                    one), i.e. loading 9,999 saved results and replaying them.

Figures are medians over rounds of wall-clock µs per step (and CPU µs of the measuring
process). Targets: ours <= 0.1x LangGraph and <= 0.04x DBOS; ours <= 2x the WAL+NORMAL
floor; ours-power <= 1.5x the WAL+FULL floor; resume <= 0.5 s. A missing peer prints a "skipped: pip install ..." line.

Usage::

    .venv/bin/python benchmarks/step_overhead.py [--steps 1000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

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

PEERS = {
    "dbos": ("dbos", "pip install dbos"),
    "langgraph": (
        "langgraph.checkpoint.sqlite",
        "pip install langgraph langgraph-checkpoint-sqlite",
    ),
}
Clock = tuple[float, float]
Timing = tuple[float, float]  # (wall s, cpu s)


def _clocks() -> Clock:
    return time.perf_counter(), time.process_time()


def _since(start: Clock) -> Timing:
    w, c = _clocks()
    return w - start[0], c - start[1]


# -- workers (each runs in its own process) -------------------------------------------
def work_ours(tmp: Path, n: int, mode: str) -> dict[str, Timing]:
    from openprogram.durable.runner import start_run

    (tmp / "prog.py").write_text(PROGRAM, encoding="utf-8")
    ref = f"{tmp / 'prog.py'}:chain"
    out: dict[str, Timing] = {}
    for label, steps in (("warm", 20), ("zero", 0), ("full", n)):
        store = tmp / f"store-{label}"
        t = _clocks()
        outcome = start_run(ref, {"n": steps}, store=store, durability=mode)
        out[label] = _since(t)
        assert outcome.status == "completed", outcome
        assert outcome.result == sum(range(steps)), outcome
    return out


def work_resume(tmp: Path, n: int) -> dict[str, Timing]:
    from openprogram.durable.runner import resume_run, start_run

    (tmp / "prog.py").write_text(PROGRAM, encoding="utf-8")
    (tmp / "stop").touch()
    store = tmp / "store"
    first = start_run(f"{tmp / 'prog.py'}:chain", {"n": n}, store=store)
    assert first.status == "failed", first
    (tmp / "stop").unlink()
    reached: list[Timing] = []
    last_key = f"s#{n - 1}"

    def progress(event: str, key: str) -> None:
        if event == "start" and key == last_key:
            reached.append(_since(t))

    t = _clocks()
    outcome = resume_run(first.run_id, store=store, on_progress=progress)
    assert outcome.status == "completed" and outcome.result == sum(range(n)), outcome
    assert len(reached) == 1
    return {"reach": reached[0]}


def work_dbos(tmp: Path, n: int) -> dict[str, Timing]:
    from dbos import DBOS

    DBOS(config={"name": "op-bench", "system_database_url": f"sqlite:///{tmp / 'dbos.sqlite'}"})

    @DBOS.step()
    def tiny(i: int) -> dict[str, object]:
        return {"i": i, "ok": True}

    @DBOS.workflow()
    def chain(count: int) -> int:
        total = 0
        for i in range(count):
            total += int(tiny(i)["i"])  # type: ignore[call-overload]
        return total

    DBOS.launch()
    out: dict[str, Timing] = {}
    try:
        for label, steps in (("warm", 20), ("zero", 0), ("full", n)):
            t = _clocks()
            result = chain(steps)
            out[label] = _since(t)
            assert result == sum(range(steps))
    finally:
        DBOS.destroy()
    return out


def work_langgraph(tmp: Path, n: int) -> dict[str, Timing]:
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.func import entrypoint, task

    conn = sqlite3.connect(tmp / "langgraph.sqlite", check_same_thread=False)
    saver = SqliteSaver(conn)

    @task
    def tiny(i: int) -> dict[str, object]:
        return {"i": i, "ok": True}

    @entrypoint(checkpointer=saver)
    def chain(count: int) -> int:
        total = 0
        for i in range(count):
            total += int(tiny(i).result()["i"])  # type: ignore[call-overload]
        return total

    out: dict[str, Timing] = {}
    for label, steps in (("warm", 20), ("zero", 0), ("full", n)):
        t = _clocks()
        result = chain.invoke(steps, {"configurable": {"thread_id": label}})
        out[label] = _since(t)
        assert result == sum(range(steps))
    conn.close()
    return out


BARE_TABLE = (
    "CREATE TABLE nodes (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, seq INTEGER NOT "
    "NULL, kind TEXT NOT NULL, name TEXT NOT NULL, caller_id TEXT, predecessor_id TEXT, "
    "input TEXT, output TEXT, status TEXT NOT NULL, metadata TEXT NOT NULL, created_at "
    "REAL NOT NULL, updated_at REAL NOT NULL)"
)


def work_floor(tmp: Path, n: int, sync: str, background: bool = False) -> dict[str, Timing]:
    from openprogram.store.wal_checkpointer import WalCheckpointer

    conn = sqlite3.connect(tmp / "bare.db", isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"PRAGMA synchronous = {sync}")
    conn.execute(BARE_TABLE)
    checkpointer = WalCheckpointer(tmp / "bare.db") if background else None
    sql = "INSERT INTO nodes VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)"
    out: dict[str, Timing] = {"zero": (0.0, 0.0)}
    t = _clocks()
    for i in range(n):
        now = time.time()
        row = (os.urandom(16).hex(), "s", i, "code", "s", None, None, '{"i": 1}', None,
               "completed", "{}", now, now)  # fmt: skip
        conn.execute(sql, row)
        if checkpointer is not None:
            checkpointer.committed()
    out["full"] = _since(t)
    if checkpointer is not None:
        checkpointer.close()
    conn.close()
    return out


def _running_run(tmp: Path) -> tuple[Any, str, str]:
    """A run store in ``tmp`` (the store's schema and pragmas: WAL, NORMAL) holding a
    running run ``r`` of this process: the store, the run's session id, its lease token."""
    from openprogram.store.lease import Owner
    from openprogram.store.runs import open_run_store

    runs = open_run_store(tmp / "store")
    sid = runs.store.create_session("bare")
    owner = Owner.this_process()
    runs.insert_run(
        run_id="r", entry="prog.py:chain", program_path=None, function_qualname="chain",
        args={}, policy="fail", model=None, source_snapshot=None, session_id=sid,
        owner=owner, lease_s=60.0,
    )  # fmt: skip
    return runs, sid, owner.token


def work_floor_step(tmp: Path, n: int) -> dict[str, Timing]:
    from openprogram.store.ids import new_id
    from openprogram.store.step_log import FOLD_AFTER

    runs, sid, _ = _running_run(tmp)
    conn = runs.backend.connection()
    checkpointer = runs.backend.checkpointer
    step_log = runs.backend.step_log
    done = '{"i": 1, "ok": true}'
    prev: str | None = None
    lid: int | None = None
    t = _clocks()
    for i in range(n):
        now = time.time()
        nid = new_id()  # the store's time-ordered ids
        conn.execute("BEGIN IMMEDIATE")
        if prev is not None:
            conn.execute(
                "UPDATE node_log SET output = ?1, status = 'completed', updated_at = ?2, "
                "step_status = 'completed', step_result = ?1, step_finished_at = ?2 "
                "WHERE lid = ?3",
                (done, now, lid),
            )
        if i and i % FOLD_AFTER == 0:
            step_log.fold(conn)  # the batch into nodes, as the store folds it
        lid = conn.execute(
            "INSERT INTO node_log (id, session_id, seq, kind, name, caller_id, predecessor_id, "
            "input, output, status, metadata, created_at, updated_at, run_id, step_key, "
            "step_scope, step_position, step_kind, step_occurrence, step_input_hash, "
            "step_status) VALUES (?, ?, ?, 'code', 's', NULL, ?, ?, NULL, 'running', '{}', "
            "?, ?, 'r', ?, '', ?, 'step', ?, ?, 'dispatched')",
            (nid, sid, i + 1, prev, f'{{"args":[{i},{n - 1}],"kwargs":{{}}}}', now, now,
             f"s#{i}", i, i, "0" * 64),
        ).lastrowid  # fmt: skip
        conn.execute("COMMIT")
        if checkpointer is not None:
            checkpointer.committed()  # as the store's own step commits do
        prev = nid
    full = _since(t)
    runs.close()
    return {"zero": (0.0, 0.0), "full": full}


def work_store_step(tmp: Path, n: int) -> dict[str, Timing]:
    from openprogram.store.runs import StepCall, StepDone, StepNode

    runs, sid, token = _running_run(tmp)
    done: StepDone | None = None
    t = _clocks()
    for i in range(n):
        call = StepCall(f"s#{i}", "", i, "step", "s", i, "0" * 64)
        node = StepNode(sid, "s", f'{{"args":[{i},{n - 1}],"kwargs":{{}}}}', None)
        dispatched, appended = runs.write_step("r", token, done, call, node)
        assert dispatched and appended is not None
        done = StepDone(call.key, '{"i": 1, "ok": true}', appended[0], 0.000001)
    runs.write_step("r", token, done, None)
    full = _since(t)
    runs.close()
    return {"zero": (0.0, 0.0), "full": full}


WORKERS: dict[str, Callable[[Path, int], dict[str, Timing]]] = {
    "ours": lambda tmp, n: work_ours(tmp, n, "process"),
    "ours-eager": lambda tmp, n: work_ours(tmp, n, "eager"),
    "ours-power": lambda tmp, n: work_ours(tmp, n, "power"),
    "dbos": work_dbos,
    "langgraph": work_langgraph,
    "floor": lambda tmp, n: work_floor(tmp, n, "NORMAL"),
    "floor-full": lambda tmp, n: work_floor(tmp, n, "FULL"),
    "floor-bg": lambda tmp, n: work_floor(tmp, n, "NORMAL", background=True),
    "floor-step": work_floor_step,
    "store-step": work_store_step,
    "resume": work_resume,
}


def run_worker(case: str, n: int) -> None:
    tmp = Path(tempfile.mkdtemp(prefix=f"op-step-{case}-"))
    try:
        result = WORKERS[case](tmp, n)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(result))


# -- driver ----------------------------------------------------------------------------
def _measure(case: str, n: int) -> dict[str, Timing] | str:
    env = dict(os.environ)
    env.pop("OPENPROGRAM_DURABILITY", None)
    env["PYTHONWARNINGS"] = "ignore"
    proc = subprocess.run(
        [sys.executable, __file__, "--worker", case, "--steps", str(n)],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return f"failed: {tail}"
    return {k: (v[0], v[1]) for k, v in json.loads(lines[-1]).items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--steps", type=int, default=1000, help="steps per workflow")
    parser.add_argument("--rounds", type=int, default=5, help="rounds (medians reported)")
    parser.add_argument("--resume-steps", type=int, default=10_000)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        run_worker(args.worker, args.steps)
        return 0

    cases = [
        "floor",
        "floor-full",
        "floor-bg",
        "floor-step",
        "store-step",
        "ours",
        "ours-eager",
        "ours-power",
        "dbos",
        "langgraph",
    ]
    notes: dict[str, str] = {}
    for peer, (module, hint) in PEERS.items():
        if importlib.util.find_spec(module.split(".")[0]) is None or (
            "." in module and importlib.util.find_spec(module) is None
        ):
            notes[peer] = f"skipped: {hint}"
            cases.remove(peer)
    wall: dict[str, list[float]] = {c: [] for c in cases}
    cpu: dict[str, list[float]] = {c: [] for c in cases}
    reach: list[float] = []
    for _ in range(args.rounds):
        for case in cases:  # interleaved so load drift hits every case alike
            got = _measure(case, args.steps)
            if isinstance(got, str):
                notes[case] = got
                continue
            wall[case].append((got["full"][0] - got["zero"][0]) / args.steps * 1e6)
            cpu[case].append((got["full"][1] - got["zero"][1]) / args.steps * 1e6)
        got = _measure("resume", args.resume_steps)
        if isinstance(got, str):
            notes["resume"] = got
        else:
            reach.append(got["reach"][0])

    med = statistics.median
    w = {c: med(v) for c, v in wall.items() if v}
    c_ = {c: med(v) for c, v in cpu.items() if v}
    print(
        f"sqlite {sqlite3.sqlite_version}, python {sys.version.split()[0]}, {os.cpu_count()} "
        f"cpus; {args.steps} steps x {args.rounds} rounds; median µs per completed step"
    )
    labels = {
        "floor": "bare insert+commit WAL+NORMAL",
        "floor-full": "bare insert+commit WAL+FULL",
        "floor-bg": "bare insert+commit, checkpoints as ours",
        "floor-step": "bare rows of one step WAL+NORMAL",
        "store-step": "the store's step commit, no engine",
        "ours": "openprogram step (default)",
        "ours-eager": "openprogram step (eager)",
        "ours-power": "openprogram step (power)",
        "dbos": "DBOS @DBOS.step (SQLite)",
        "langgraph": "LangGraph @task (SqliteSaver)",
    }
    print(f"  {'case':40s} {'wall µs':>9s} {'cpu µs':>9s}")
    for case, label in labels.items():
        if case in w:
            print(f"  {label:40s} {w[case]:9.1f} {c_[case]:9.1f}")
        else:
            print(f"  {label:40s} {notes.get(case, 'no result')}")
    checks: list[tuple[str, float | None, float]] = []
    ours = w.get("ours")
    if ours is not None and "langgraph" in w:
        checks.append(("ours / LangGraph", ours / w["langgraph"], 0.1))
    if ours is not None and "dbos" in w:
        checks.append(("ours / DBOS", ours / w["dbos"], 0.04))
    if "ours-eager" in w and "langgraph" in w:
        print(f"  (ours-eager / LangGraph: {w['ours-eager'] / w['langgraph']:.3f}x, for reference)")
    if "ours-power" in w and "floor-full" in w:
        checks.append(("ours-power / WAL+FULL floor", w["ours-power"] / w["floor-full"], 1.5))
    if ours is not None and "floor" in w:
        checks.append(("ours / WAL+NORMAL floor", ours / w["floor"], 2.0))
    if ours is not None and "floor-step" in w:
        print(f"  (ours / bare rows of one step: {ours / w['floor-step']:.2f}x; those rows / "
              f"WAL+NORMAL floor: {w['floor-step'] / w['floor']:.2f}x, for reference)")  # fmt: skip
    if ours is not None and "store-step" in w and "floor-step" in w:
        print(f"  (the store's step commit / bare rows of one step: "
              f"{w['store-step'] / w['floor-step']:.2f}x; ours / the store's step commit: "
              f"{ours / w['store-step']:.2f}x, for reference)")  # fmt: skip
    if ours is not None and "floor-bg" in w:
        print(f"  (ours / the floor checkpointed as ours: {ours / w['floor-bg']:.2f}x; that floor / "
              f"WAL+NORMAL floor: {w['floor-bg'] / w['floor']:.2f}x, for reference)")  # fmt: skip
    if reach:
        print(
            f"  resume of a {args.resume_steps}-step run to its first incomplete step: "
            f"{med(reach):.3f} s"
        )
        checks.append((f"resume to step {args.resume_steps}", med(reach), 0.5))
    for peer in PEERS:
        if peer in notes:
            print(f"  {peer}: {notes[peer]}")
    ok = True
    for name, value, target in checks:
        passed = value is not None and value <= target
        ok = ok and passed
        unit = " s" if name.startswith("resume") else "x"
        print(
            f"  {'PASS' if passed else 'FAIL'}  {name}: {value:.3f}{unit} (target <= {target}{unit})"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
