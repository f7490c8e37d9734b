"""Ownership of a run is a lease (real processes): two racing ``resume`` never both
execute, a silent owner loses the run after its lease expires (and a step of it that
returns then closes its node as an error), ``--force-takeover`` refuses a live process of
this machine, ``cancel`` of a run executing elsewhere is "requested", ``cancel --kill``."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from resume_programs import OPENPROGRAM, cli, env

from openprogram.store.runs import read_run_store

PROGRAM = '''
import os
import time

from openprogram import step

HERE = os.path.dirname(os.path.abspath(__file__))


def effect(i: int) -> int:
    """Side effect of step i: one line "i pid" in effects.log; blocks while block_<i>
    or block_<i>_<pid> exists, then fails if fail_<i>_<pid> exists."""
    with open(os.path.join(HERE, "effects.log"), "a", encoding="utf-8") as f:
        f.write(f"{i} {os.getpid()}\\n")
    mine = os.path.join(HERE, f"block_{i}_{os.getpid()}")
    while os.path.exists(os.path.join(HERE, f"block_{i}")) or os.path.exists(mine):
        time.sleep(0.01)
    time.sleep(0.005)
    if os.path.exists(os.path.join(HERE, f"fail_{i}_{os.getpid()}")):
        raise RuntimeError(f"step {i} failed in process {os.getpid()}")
    return i


def chain(n: int = 30) -> int:
    total = 0
    for i in range(n):
        total += step("s", effect, i)
    return total


def stuck() -> int:
    """An entry (not resumable: it may wait on the clock) stuck outside any step."""
    while os.path.exists(os.path.join(HERE, "block_entry")):
        time.sleep(0.01)
    return step("s", effect, 0)


chain.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["chain", "stuck"]
'''
STEPS = 30


def _effects(folder: Path) -> list[tuple[int, int]]:
    log = folder / "effects.log"
    if not log.exists():
        return []
    out = []
    for line in log.read_text(encoding="utf-8").splitlines():
        i, pid = line.split()
        out.append((int(i), int(pid)))
    return out


def _start(folder: Path, *args: str, extra: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [OPENPROGRAM, *args],
        cwd=folder,
        env={**env(), **(extra or {})},
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _wait(cond: object, what: str, limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while not cond():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def _only_run(folder: Path) -> tuple[str, str]:
    runs = read_run_store(folder / "st")
    assert runs is not None
    with runs:
        (run,) = runs.list_runs()
    return run.id, run.status


def _race_trial(folder: Path, seed: int) -> tuple[list[int], set[int], Counter[int]]:
    folder.mkdir()
    (folder / "prog.py").write_text(PROGRAM, encoding="utf-8")
    first = _start(folder, "run", "prog.py:chain", "--store", "st")
    kill_after = 3 + seed % 10
    _wait(lambda: len(_effects(folder)) >= kill_after or first.poll() is not None, "no step ran")
    first.kill()  # SIGKILL: the run stays "running" with a dead owner
    first.communicate()
    rid, status = _only_run(folder)
    assert status == "running"
    argv = [OPENPROGRAM, "resume", rid, "--rerun-uncertain", "--store", "st", "--json"]
    both = [
        subprocess.Popen(argv, cwd=folder, env=env(), text=True, stdout=subprocess.PIPE)
        for _ in range(2)
    ]
    codes = sorted(p.wait(timeout=120) for p in both)
    for p in both:
        p.communicate()
    resumers = {pid for _, pid in _effects(folder)} - {first.pid}
    return codes, resumers, Counter(i for i, _ in _effects(folder))


@pytest.mark.slow
def test_two_racing_resumes_never_both_execute(tmp_path: Path) -> None:
    trials = int(os.environ.get("OPENPROGRAM_RACE_TRIALS", "8"))
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(
            pool.map(_race_trial, [tmp_path / f"t{i}" for i in range(trials)], range(trials))
        )
    for codes, resumers, counts in results:
        assert codes == [0, 2], codes  # one completed, one refused (claimed or completed)
        assert len(resumers) == 1, resumers  # the steps after the kill ran in one process
        assert set(counts) == set(range(STEPS))
        # the step running at the kill may run twice (--rerun-uncertain); no other step
        assert sum(1 for c in counts.values() if c > 1) <= 1, counts
        assert max(counts.values()) <= 2, counts


@pytest.fixture()
def work(tmp_path: Path) -> Path:
    (tmp_path / "prog.py").write_text(PROGRAM, encoding="utf-8")
    return tmp_path


def test_silent_owner_loses_the_run_when_its_lease_expires(work: Path) -> None:
    # A live process that stopped renewing its lease (SIGSTOP: as a lost machine or a
    # reused PID would look) keeps the run only until the lease expires.
    owner = _start(
        work, "run", "prog.py:chain", "--store", "st", extra={"OPENPROGRAM_LEASE_S": "3"}
    )
    block = work / f"block_3_{owner.pid}"
    block.touch()
    try:
        _wait(lambda: any(i == 3 for i, _ in _effects(work)), "step 3 never started")
        rid, _ = _only_run(work)
        proc = cli("resume", rid, "--store", "st", cwd=work)
        assert proc.returncode == 2 and f"process {owner.pid} of this machine" in proc.stderr
        owner.send_signal(signal.SIGSTOP)
        time.sleep(4)  # the lease (3 s) expires: nobody renews it
        proc = cli("resume", rid, "--rerun-uncertain", "--store", "st", cwd=work)
        assert proc.returncode == 0, proc.stderr
        block.unlink()
        owner.send_signal(signal.SIGCONT)
        out, err = owner.communicate(timeout=60)
        assert owner.returncode == 1 and "no longer held by this process" in err, (out, err)
    finally:
        owner.kill()
    counts = Counter(i for i, _ in _effects(work))
    assert set(counts) == set(range(STEPS))
    assert [i for i, c in counts.items() if c > 1] == [3]  # only the step it was inside


def _interrupted(folder: Path, store: str = "st") -> bool:
    """Whether ``openprogram runs`` says the folder's one run is interrupted."""
    proc = cli("runs", "--store", store, "--json", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    (run,) = json.loads(proc.stdout)
    return bool(run["interrupted"])


def _take_over_inside_step_2(
    work: Path, owner: subprocess.Popen[str], store: str = "st"
) -> tuple[str, str, str]:
    """While ``owner`` (a run of ``chain`` on ``store``, with a short lease) is held inside
    step 2, it stops renewing its lease (SIGSTOP); once the lease expired, ``resume
    --rerun-uncertain`` completes the run; then ``owner`` goes on and its step 2 returns.
    Returns the run id and the owner's stdout and stderr."""
    block = work / f"block_2_{owner.pid}"
    block.touch()
    try:
        _wait(lambda: any(i == 2 for i, _ in _effects(work)), "step 2 never started")
        owner.send_signal(signal.SIGSTOP)
        _wait(lambda: _interrupted(work, store), "the lease never expired")
        proc = cli("resume", _run_id(work, store), "--rerun-uncertain", "--store", store, cwd=work)
        assert proc.returncode == 0, proc.stderr
        block.unlink()
        owner.send_signal(signal.SIGCONT)
        out, err = owner.communicate(timeout=60)
    finally:
        owner.kill()
    return _run_id(work, store), out, err


def _run_id(folder: Path, store: str) -> str:
    proc = cli("runs", "--store", store, "--json", cwd=folder)
    (run,) = json.loads(proc.stdout)
    return str(run["run_id"])


SHORT_LEASE = {"OPENPROGRAM_LEASE_S": "2"}


def test_force_takeover_refuses_a_live_process_of_this_machine(work: Path) -> None:
    # --force-takeover is for a run whose process is gone (on another machine); a live
    # process here keeps its run, and the message says what to do instead
    (work / "block_1").touch()
    owner = _start(work, "run", "prog.py:chain", "--args", '{"n": 3}', "--store", "st")
    try:
        _wait(lambda: any(i == 1 for i, _ in _effects(work)), "step 1 never started")
        rid, _ = _only_run(work)
        proc = cli("resume", rid, "--force-takeover", "--store", "st", cwd=work)
        assert proc.returncode == 2, proc.stderr
        assert f"run {rid} is running in process {owner.pid} of this machine" in proc.stderr
        assert f"openprogram pause {rid}" in proc.stderr, proc.stderr
        (work / "block_1").unlink()
        _, err = owner.communicate(timeout=60)
    finally:
        owner.kill()
    assert owner.returncode == 0, err
    assert _only_run(work) == (rid, "completed")
    assert [i for i, _ in _effects(work)] == [0, 1, 2]  # nothing ran twice


def test_a_taken_over_owner_stops_at_its_next_step(work: Path) -> None:
    owner = _start(work, "run", "prog.py:chain", "--store", "st", extra=SHORT_LEASE)
    _, _, err = _take_over_inside_step_2(work, owner)
    assert owner.returncode == 1 and "no longer held by this process" in err, err
    assert "stopping before step 's'" in err, err  # the step it stopped before, by name
    by_pid = Counter(pid for _, pid in _effects(work))
    assert by_pid[owner.pid] == 3 and len(by_pid) == 2  # steps 0-2, then it stopped
    counts = Counter(i for i, _ in _effects(work))
    assert [i for i, c in counts.items() if c > 1] == [2], counts


@pytest.mark.parametrize("durability", ["process", "eager"])
def test_a_step_that_returns_after_a_takeover_closes_its_node_as_an_error(
    work: Path, st: str, durability: str
) -> None:
    # its result is not saved (the new owner's record stays), and its session node says
    # so: an error (LeaseLost), not a completed step
    owner = _start(
        work, "run", "prog.py:chain", "--args", '{"n": 4}', "--store", st,
        extra={**SHORT_LEASE, "OPENPROGRAM_DURABILITY": durability},
    )  # fmt: skip
    rid, _, err = _take_over_inside_step_2(work, owner, st)
    assert owner.returncode == 1 and "no longer held by this process" in err, err
    shown = cli("show", rid, "--store", st, cwd=work)
    assert shown.returncode == 0, shown.stderr
    steps = [line.split("code ", 1)[1] for line in shown.stdout.splitlines() if "code s " in line]
    # the owner's steps 0-2, then the new owner's 2 (re-run) and 3
    assert [s.split(" [")[1].split("]")[0] for s in steps] == [
        "completed", "completed", "error", "completed", "completed",
    ], shown.stdout  # fmt: skip
    assert "LeaseLost: run" in steps[2] and "-> 2" not in steps[2], steps
    code, out = (lambda p: (p.returncode, json.loads(p.stdout)))(
        cli("resume", rid, "--store", st, "--json", cwd=work)
    )
    assert code == 2 and "completed" in out["error"], out


def test_cancel_of_a_run_in_another_process_is_requested_then_acknowledged(
    work: Path,
) -> None:
    (work / "block_1").touch()
    owner = _start(work, "run", "prog.py:chain", "--store", "st", "--json")
    _wait(lambda: any(i == 1 for i, _ in _effects(work)), "step 1 never started")
    rid, _ = _only_run(work)
    proc = cli("cancel", rid, "--store", "st", cwd=work)
    assert proc.returncode == 0
    assert "cancel requested" in proc.stdout and "next step" in proc.stdout
    assert _only_run(work)[1] == "running"  # not cancelled until the owner says so
    (work / "block_1").unlink()
    out, _ = owner.communicate(timeout=60)
    assert '"status": "cancelled"' in out
    assert _only_run(work)[1] == "cancelled"
    assert [i for i, _ in _effects(work)] == [0, 1]  # stopped at the next step


def test_cancel_kill_ends_an_entry_stuck_outside_any_step(work: Path) -> None:
    (work / "block_entry").touch()
    owner = _start(work, "run", "prog.py:stuck", "--store", "st")
    try:
        _wait(lambda: _has_run(work) or owner.poll() is not None, "no run")
        assert owner.poll() is None, owner.communicate()
        rid, _ = _only_run(work)
        # not resumable: it executes no step that would read a request, so only --kill
        proc = cli("cancel", rid, "--store", "st", cwd=work)
        assert proc.returncode == 2 and "cannot be cancelled at a safe point" in proc.stderr
        assert f"`openprogram cancel --kill {rid}`" in proc.stderr, proc.stderr
        assert _only_run(work)[1] == "running"
        proc = cli("cancel", rid, "--kill", "--store", "st", cwd=work)
        assert proc.returncode == 0 and f"run {rid} cancelled" in proc.stdout, proc.stderr
        assert owner.wait(timeout=30) != 0  # the process was ended
    finally:
        owner.kill()
    assert _only_run(work)[1] == "cancelled"
    assert _effects(work) == []


def _has_run(folder: Path) -> bool:
    runs = read_run_store(folder / "st")
    if runs is None:
        return False
    with runs:
        return bool(runs.list_runs())


def test_a_worker_whose_run_was_taken_over_says_so(work: Path) -> None:
    # It does not report the outcome the new owner produced as its own.
    rid = cli("submit", "prog.py:chain", "--args", '{"n": 4}', "--store", "st", cwd=work)
    assert rid.returncode == 0, rid.stderr
    run_id = rid.stdout.strip()
    worker = _start(work, "worker", "--exit-when-idle", "--store", "st", extra=SHORT_LEASE)
    rid, out, err = _take_over_inside_step_2(work, worker)
    assert (rid, _only_run(work)) == (run_id, (run_id, "completed"))
    assert worker.returncode == 0, err
    assert out.splitlines() == [f"run {run_id} taken over"], (out, err)


def test_an_owner_whose_step_fails_after_a_takeover_does_not_report_the_new_outcome(
    work: Path,
) -> None:
    owner = _start(
        work, "run", "prog.py:chain", "--args", '{"n": 4}', "--store", "st", "--json",
        extra=SHORT_LEASE,
    )  # fmt: skip
    (work / f"fail_2_{owner.pid}").touch()  # its step 2 fails once it is let go
    rid, out, err = _take_over_inside_step_2(work, owner)
    assert owner.returncode == 1, (out, err)
    reported = json.loads(out)
    assert reported["lease_lost"] is True and "result" not in reported, reported
    assert _only_run(work) == (rid, "completed")
    # its failing step changed no record of the run the new owner completed
    with sqlite3.connect(work / "st" / "openprogram.db") as db:
        steps = dict(db.execute("SELECT step_key, status FROM run_steps WHERE run_id = ?", (rid,)))
    assert steps["s#2"] == "completed", steps
