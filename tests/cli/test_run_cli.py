"""``openprogram run/resume/runs/cancel/pause`` in real subprocesses: exit codes, ``--json``."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from cli_programs import OPENPROGRAM, calls, cli, cli_json, env, python, write_program


@pytest.fixture()
def work(tmp_path: Path) -> Path:
    write_program(tmp_path)
    return tmp_path


def test_run_completes_without_a_model_and_json_contract(work: Path) -> None:
    code, out = cli_json("run", "prog.py:main", "--args", '{"n": 2}', "--store", "st", cwd=work)
    assert code == 0
    assert set(out) == {"run_id", "status", "result"}
    assert out["status"] == "completed" and out["result"] == {"total": 4}
    proc = cli("runs", "--json", "--store", "st", cwd=work)
    (listed,) = json.loads(proc.stdout)
    assert listed["run_id"] == out["run_id"] and listed["status"] == "completed"


def test_text_output_and_module_entry(work: Path) -> None:
    proc = cli("run", "prog:plain", "--args", '{"x": 21}', "--store", "st", cwd=work)
    assert proc.returncode == 0, proc.stderr
    proc = cli("run", "no_such_module:plain", "--store", "st", cwd=work)
    assert proc.returncode == 2 and "cannot import Program module" in proc.stderr
    proc = cli("run", "prog.py:plain", "--args", '{"x": 21}', "--store", "st", cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert "completed" in proc.stdout and "42" in proc.stdout


def test_failed_then_resumed(work: Path) -> None:
    (work / "fail_c").touch()
    code, out = cli_json("run", "prog.py:main", "--store", "st", cwd=work)
    assert code == 1 and out["status"] == "failed"
    assert "injected failure in c" in out["error"]
    (work / "fail_c").unlink()
    code, again = cli_json("resume", out["run_id"], "--store", "st", cwd=work)
    assert code == 0 and again == {
        "run_id": out["run_id"],
        "status": "completed",
        "result": {"total": 3},
    }
    assert calls(work) == ["a 1", "slow 2", "c 3", "c 3"]
    code, done = cli_json("resume", out["run_id"], "--store", "st", cwd=work)
    assert code == 2 and "completed" in done["error"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--args", "{not json"], "not valid JSON"),
        (["--args", "[1, 2]"], "must be a JSON object"),
        (["--args", '{"nope": 1}'], "unknown argument 'nope'"),
    ],
)
def test_bad_args_exit_2(work: Path, args: list[str], message: str) -> None:
    proc = cli("run", "prog.py:main", *args, "--store", "st", cwd=work)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "prog.py:main", "--bogus"], "unrecognized arguments: --bogus"),
        (["runs", "--status", "bogus"], "argument --status: invalid choice: 'bogus'"),
        (["resume", "x", "--policy", "newest"], "argument --policy: invalid choice"),
        (["run"], "the following arguments are required"),
        (["cancel"], "the following arguments are required: RUN_ID"),
        (["resume", "--all-interrupted", "--queue", "q"], "--queue hands one RUN_ID"),
        (["resume", "0123456789abcdef", "--queue", ""], "argument --queue: a queue name cannot"),
    ],
)
def test_a_usage_error_is_one_error_line_and_with_json_one_object(
    work: Path, args: list[str], message: str
) -> None:
    proc = cli(*args, "--store", "st", cwd=work)
    assert proc.returncode == 2 and proc.stdout == ""
    [line] = proc.stderr.splitlines()
    assert line.startswith("openprogram: error: ") and message in line, line
    proc = cli(*args, "--store", "st", "--json", cwd=work)
    assert proc.returncode == 2 and [proc.stderr] == [line + "\n"]
    out = json.loads(proc.stdout)
    assert out["status"] == "error" and message in out["error"], out
    assert not (work / "st").exists()  # nothing was created


QUEUE_COMMANDS = [
    ("submit", "prog.py:main"),
    ("worker", "--exit-when-idle"),
    ("runs",),
    ("resume", "0123456789abcdef"),
    ("approve", "0123456789abcdef"),
    ("deny", "0123456789abcdef"),
]


@pytest.mark.parametrize("queue", ["", "  "], ids=["empty", "blank"])
@pytest.mark.parametrize("command", QUEUE_COMMANDS, ids=lambda c: c[0])
def test_an_empty_or_blank_queue_name_is_refused(
    work: Path, command: tuple[str, ...], queue: str
) -> None:
    """``submit --queue ''`` was accepted: the run sat on a queue ``runs`` showed as ``-``
    (no queue) and ``--json`` as ``""``. Every command that takes ``--queue`` refuses an
    empty or blank name before it touches the store."""
    proc = cli(*command, "--queue", queue, "--store", "st", cwd=work)
    assert proc.returncode == 2 and proc.stdout == "", (proc.returncode, proc.stdout)
    [line] = proc.stderr.splitlines()
    assert line.startswith(f"openprogram: error: {command[0]}: argument --queue: "), line
    assert "a queue name cannot be empty or blank" in line, line
    assert not (work / "st").exists()  # nothing was created


@pytest.mark.parametrize("queue", [" q ", "q ", "\tq"], ids=["both", "trailing", "leading"])
@pytest.mark.parametrize("command", QUEUE_COMMANDS, ids=lambda c: c[0])
def test_a_queue_name_with_surrounding_whitespace_is_refused(
    work: Path, command: tuple[str, ...], queue: str
) -> None:
    """``submit --queue " q "`` was accepted: the run sat on a queue of its own, ``" q "``,
    that no worker of ``q`` claimed and that ``runs`` showed as ``q``. Every command that
    takes ``--queue`` refuses such a name before it touches the store, naming the fix."""
    proc = cli(*command, "--queue", queue, "--store", "st", cwd=work)
    assert proc.returncode == 2 and proc.stdout == "", (proc.returncode, proc.stdout)
    [line] = proc.stderr.splitlines()
    assert line.startswith(f"openprogram: error: {command[0]}: argument --queue: "), line
    assert "a queue name cannot start or end with whitespace" in line, line
    assert "did you mean 'q'?" in line, line
    assert not (work / "st").exists()  # nothing was created


def test_the_python_api_refuses_a_queue_name_with_surrounding_whitespace(work: Path) -> None:
    from openprogram.durable.approvals import approve_run
    from openprogram.durable.runner import requeue_run, submit_run
    from openprogram.durable.worker import run_worker
    from openprogram.errors import ConfigError

    store = str(work / "st")
    message = "a queue name cannot start or end with whitespace"
    with pytest.raises(ConfigError, match=message):
        submit_run(f"{work / 'prog.py'}:main", {"n": 1}, store=store, queue=" q ")
    with pytest.raises(ConfigError, match=message):
        run_worker(store, queue="q ", exit_when_idle=True)
    with pytest.raises(ConfigError, match=message):
        requeue_run("0123456789abcdef", store=store, queue=" q")
    with pytest.raises(ConfigError, match=message):
        approve_run("0123456789abcdef", store=store, queue="q\n")
    assert not (work / "st").exists()


def test_the_python_api_refuses_an_empty_queue_name(work: Path) -> None:
    from openprogram.durable.approvals import approve_run
    from openprogram.durable.runner import requeue_run, submit_run
    from openprogram.durable.worker import run_worker
    from openprogram.errors import ConfigError

    store = str(work / "st")
    for queue in ("", " \t"):
        with pytest.raises(ConfigError, match="a queue name cannot be empty or blank"):
            submit_run(f"{work / 'prog.py'}:main", {"n": 1}, store=store, queue=queue)
        with pytest.raises(ConfigError, match="a queue name cannot be empty or blank"):
            run_worker(store, queue=queue, exit_when_idle=True)
        with pytest.raises(ConfigError, match="a queue name cannot be empty or blank"):
            requeue_run("0123456789abcdef", store=store, queue=queue)
        with pytest.raises(ConfigError, match="a queue name cannot be empty or blank"):
            approve_run("0123456789abcdef", store=store, queue=queue)
    assert not (work / "st").exists()


def test_a_run_a_worker_cannot_load_says_it_cannot_start_not_resume(work: Path) -> None:
    """A submitted run whose Program the worker cannot load (the file moved after
    ``submit``; a module not importable where the worker runs) failed with ``cannot
    resume run ...``: it had never started. A run that has recorded steps still says
    ``cannot resume``."""
    moved = cli("submit", "prog.py:main", "--args", '{"n": 1}', "--store", "st", cwd=work)
    assert moved.returncode == 0, moved.stderr
    moved_id = moved.stdout.strip()
    module = cli("submit", "prog:main", "--args", '{"n": 1}', "--store", "st", cwd=work)
    assert module.returncode == 0, module.stderr
    module_id = module.stdout.strip()
    (work / "prog.py").rename(work / "moved.py")
    elsewhere = work / "elsewhere"
    elsewhere.mkdir()
    worker = cli("worker", "--exit-when-idle", "--store", str(work / "st"), cwd=elsewhere)
    assert worker.returncode == 0, worker.stderr
    assert sorted(worker.stdout.splitlines()) == sorted(
        [
            f"run {moved_id} failed: cannot start run {moved_id}: its Program file "
            f"{work / 'prog.py'} no longer exists",
            f"run {module_id} failed: cannot start run {module_id}: cannot import Program "
            "module 'prog': No module named 'prog'",
        ]
    ), worker.stdout

    (work / "moved.py").rename(work / "prog.py")
    (work / "fail_c").touch()
    failed = cli("run", "prog.py:main", "--args", '{"n": 1}', "--store", "st", cwd=work)
    assert failed.returncode == 1, failed.stderr
    (work / "prog.py").rename(work / "moved.py")
    resumed = cli("resume", moved_id, "--store", "st", cwd=work)  # it never started either
    assert resumed.returncode == 2 and resumed.stderr.startswith(
        f"openprogram: error: cannot start run {moved_id}: "
    )
    [run_id] = [
        r["run_id"]
        for r in json.loads(cli("runs", "--json", "--store", "st", cwd=work).stdout)
        if r["run_id"] not in (moved_id, module_id)
    ]
    resumed = cli("resume", run_id, "--store", "st", cwd=work)
    assert resumed.returncode == 2
    assert resumed.stderr.startswith(
        f"openprogram: error: cannot resume run {run_id}: its Program file"
    ), resumed.stderr


def test_missing_required_parameter(work: Path) -> None:
    proc = cli("run", "prog.py:plain", "--store", "st", cwd=work)
    assert proc.returncode == 2
    assert "missing required argument 'x' (int)" in proc.stderr


def test_unknown_entry_lists_entries(work: Path) -> None:
    code, out = cli_json("run", "prog.py:nothing", "--store", "st", cwd=work)
    assert code == 2
    assert "entries: main, plain, waiting" in out["error"]


def test_program_output_goes_to_stderr_with_json(work: Path) -> None:
    (work / "noisy.py").write_text(
        "def noisy():\n    print('hello from the program')\n    return 1\n\n"
        "PROGRAM_ENTRIES = ['noisy']\n"
    )
    proc = cli("run", "noisy.py:noisy", "--json", "--store", "st", cwd=work)
    assert proc.returncode == 0
    assert json.loads(proc.stdout) == {
        "run_id": json.loads(proc.stdout)["run_id"],
        "status": "completed",
        "result": 1,
    }
    assert "hello from the program" in proc.stderr


def test_paused_exit_3_and_cancel(work: Path) -> None:
    (work / "fail_c").touch()
    code, out = cli_json("run", "prog.py:main", "--store", "st", cwd=work)
    # make the program incompatible: rename step "a"
    prog = work / "prog.py"
    prog.write_text(prog.read_text().replace('step("a", act', 'step("first", act'))
    proc = cli("resume", out["run_id"], "--policy", "use_latest", "--store", "st", cwd=work)
    assert proc.returncode == 3, proc.stderr
    assert out["run_id"] in proc.stdout and "'a'" in proc.stdout
    code, paused = cli_json(
        "resume", out["run_id"], "--policy", "use_latest", "--store", "st", cwd=work
    )
    assert code == 3 and paused["status"] == "paused" and paused["paused_step"] == "a"
    proc = cli("runs", "--status", "paused", "--store", "st", cwd=work)
    assert out["run_id"] in proc.stdout
    proc = cli("cancel", out["run_id"], "--store", "st", cwd=work)
    assert proc.returncode == 0
    proc = cli("runs", "--status", "cancelled", "--json", "--store", "st", cwd=work)
    assert [r["run_id"] for r in json.loads(proc.stdout)] == [out["run_id"]]
    assert cli("cancel", out["run_id"], "--store", "st", cwd=work).returncode == 2
    assert cli("cancel", "unknown-id", "--store", "st", cwd=work).returncode == 2


def test_determinism_refusal_cites_rule(work: Path) -> None:
    (work / "bad.py").write_text(
        "import random\n\nfrom openprogram import step\n\n\n"
        "def pick(x: int) -> int:\n    return x\n\n\n"
        "def main() -> int:\n    n = random.randint(1, 9)\n    return step('pick', pick, n)\n\n\n"
        "main.__agent_options__ = {'resumable': True}\nPROGRAM_ENTRIES = ['main']\n"
    )
    proc = cli("run", "bad.py:main", "--store", "st", cwd=work)
    assert proc.returncode == 2
    assert "bad.py:11:" in proc.stderr and "OP205" in proc.stderr
    assert cli("runs", "--json", "--store", "st", cwd=work).stdout.strip() == "[]"


def test_a_json_error_about_a_given_run_carries_its_id(work: Path) -> None:
    code, done = cli_json("run", "prog.py:main", "--store", "st", cwd=work)
    assert code == 0
    rid = done["run_id"]
    for command in ("resume", "approve", "deny", "pause"):
        code, out = cli_json(command, rid, "--store", "st", cwd=work)
        assert code == 2, (command, out)
        assert out["run_id"] == rid and out["status"] == "error", (command, out)
        assert rid in out["error"]


@pytest.mark.parametrize("lease", ["abc", "0", "-5", "nan", "inf"])
def test_a_bad_lease_length_is_a_clear_error(work: Path, lease: str) -> None:
    assert cli("run", "prog.py:main", "--store", "st", cwd=work).returncode == 0  # a store
    commands = [
        ["run", "prog.py:main", "--store", "st"],
        ["worker", "--exit-when-idle", "--store", "st"],
    ]
    for args in commands:
        proc = subprocess.run(
            [OPENPROGRAM, *args],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=work,
            env={**env(), "OPENPROGRAM_LEASE_S": lease},
        )
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        (line,) = proc.stderr.strip().splitlines()
        assert line.startswith("openprogram: error: OPENPROGRAM_LEASE_S=")
        assert repr(lease) in line and "seconds > 0" in line
    assert calls(work) == ["a 1", "slow 2", "c 3"]  # the bad runs started nothing


def waiting_at_the_gate(work: Path, *args: str) -> subprocess.Popen[str]:
    """``openprogram run prog.py:waiting ARGS --store st --json`` in a subprocess, once it
    waits inside its workflow (between its steps) while the file ``block_gate`` exists."""
    (work / "block_gate").touch()
    before = calls(work).count("wait gate")
    executing = subprocess.Popen(
        [OPENPROGRAM, "run", "prog.py:waiting", *args, "--store", "st", "--json"],
        cwd=work, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while calls(work).count("wait gate") == before:
        assert executing.poll() is None, executing.communicate()
        assert time.monotonic() < deadline, "the run never reached its workflow"
        time.sleep(0.01)
    return executing


PLAIN_GATED = """
from prog import act, wait_here
from openprogram import step, workflow


def plain_waiting(n: int = 1) -> dict:
    a = step("a", act, "a", n)
    wait_here("gate")
    c = step("c", act, "c", a["value"] + 1)
    return {"total": c["value"]}


PROGRAM_ENTRIES = ["plain_waiting"]
"""


def _plain_run_at_its_gate(work: Path) -> tuple[subprocess.Popen[str], str]:
    """``openprogram run`` of ``PLAIN_GATED`` (an entry that is not resumable), waiting at
    its gate between two steps; and its run id."""
    (work / "plain.py").write_text(PLAIN_GATED, encoding="utf-8")
    (work / "block_gate").touch()
    executing = subprocess.Popen(
        [OPENPROGRAM, "run", "plain.py:plain_waiting", "--store", "st", "--json"],
        cwd=work, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    while "wait gate" not in calls(work):
        assert executing.poll() is None, executing.communicate()
        time.sleep(0.01)
    _, runs = cli_json("runs", "--store", "st", cwd=work)
    [rid] = [r["run_id"] for r in runs]
    return executing, rid


def test_pausing_a_run_whose_entry_is_not_resumable_is_refused(work: Path) -> None:
    """``openprogram pause`` of a live run whose entry is not resumable said ``pause
    requested`` (exit 0) and the run went on to complete: such a run never pauses. Now
    the pause is refused (exit 2), saying why and how to end the run; the run is
    untouched and completes."""
    executing, rid = _plain_run_at_its_gate(work)
    try:
        proc = cli("pause", rid, "--store", "st", cwd=work)
        assert proc.returncode == 2 and proc.stdout == "", (proc.stdout, proc.stderr)
        [line] = proc.stderr.splitlines()
        assert f"run {rid} cannot be paused: its entry is not declared resumable" in line
        assert f"`openprogram cancel --kill {rid}`" in line, line
        code, out = cli_json("pause", rid, "--store", "st", cwd=work)
        assert code == 2 and out["status"] == "error", out
        assert "cannot be paused: its entry is not declared resumable" in out["error"]
        code, runs = cli_json("runs", "--store", "st", cwd=work)
        assert [(r["status"], r["pause_requested"]) for r in runs] == [("running", False)]
    finally:
        (work / "block_gate").unlink()
        stdout, _ = executing.communicate(timeout=120)
    assert executing.returncode == 0, stdout
    assert json.loads(stdout)["result"] == {"total": 2}


def test_cancelling_a_live_run_whose_entry_is_not_resumable_needs_kill(work: Path) -> None:
    """``openprogram cancel`` of a live run whose entry is not resumable said ``cancel
    requested`` and the run went on to complete: it has no step at which to read the
    request. Now it is refused (exit 2) naming ``--kill``, the run untouched; ``--kill``
    ends it and records it cancelled."""
    executing, rid = _plain_run_at_its_gate(work)
    try:
        proc = cli("cancel", rid, "--store", "st", cwd=work)
        assert proc.returncode == 2 and proc.stdout == "", (proc.stdout, proc.stderr)
        [line] = proc.stderr.splitlines()
        assert f"run {rid} cannot be cancelled at a safe point" in line, line
        assert f"`openprogram cancel --kill {rid}`" in line, line
        _, runs = cli_json("runs", "--store", "st", cwd=work)
        assert [r["status"] for r in runs] == ["running"]
        proc = cli("cancel", "--kill", rid, "--store", "st", cwd=work)
        assert proc.returncode == 0, (proc.stdout, proc.stderr)
        executing.communicate(timeout=120)
        _, runs = cli_json("runs", "--store", "st", cwd=work)
        assert [r["status"] for r in runs] == ["cancelled"]
    finally:
        (work / "block_gate").unlink(missing_ok=True)
        if executing.poll() is None:
            executing.kill()
            executing.communicate()


def test_cancel_json_says_whether_the_cancel_took_effect(work: Path) -> None:
    """``cancel --json``: one object, ``"cancel": "requested"`` for a run another live process
    executes (it stops at its next step), ``"cancelled"`` when done; errors as JSON."""
    executing = waiting_at_the_gate(work)
    try:
        code, runs = cli_json("runs", "--store", "st", cwd=work)
        [running] = [r["run_id"] for r in runs]
        code, out = cli_json("cancel", running, "--store", "st", cwd=work)
        assert code == 0
        assert out == {"run_id": running, "status": "running", "cancel": "requested"}
    finally:
        (work / "block_gate").unlink()
        stdout, _ = executing.communicate(timeout=120)
    assert executing.returncode == 1 and json.loads(stdout)["status"] == "cancelled"
    assert "c 2" not in calls(work)  # stopped before its next step

    code, out = cli_json("cancel", running, "--store", "st", cwd=work)
    assert code == 2 and out["run_id"] == running and out["status"] == "error"
    assert f"run {running} is already cancelled" in out["error"]

    (work / "fail_c").touch()
    code, failed = cli_json("run", "prog.py:main", "--store", "st", cwd=work)
    assert code == 1 and failed["status"] == "failed"
    code, out = cli_json("cancel", failed["run_id"], "--store", "st", cwd=work)
    assert code == 0
    assert out == {"run_id": failed["run_id"], "status": "cancelled", "cancel": "cancelled"}
    code, listed = cli_json("runs", "--status", "cancelled", "--store", "st", cwd=work)
    assert sorted(r["run_id"] for r in listed) == sorted([running, failed["run_id"]])

    code, out = cli_json("cancel", "0123456789abcdef", "--store", "st", cwd=work)
    assert code == 2 and out["run_id"] == "0123456789abcdef" and out["status"] == "error"
    assert "no run '0123456789abcdef'" in out["error"]


def test_pause_from_the_command_line_then_resume(work: Path) -> None:
    """``openprogram pause``: a run another process executes is requested to pause and
    pauses before its next step (that process exits 3); pausing it again says it is
    paused; ``resume`` continues after the finished steps; a run whose process was killed
    is paused at once; finished and unknown runs are refused (exit 2)."""
    executing = waiting_at_the_gate(work)
    try:
        code, runs = cli_json("runs", "--store", "st", cwd=work)
        [rid] = [r["run_id"] for r in runs]
        proc = cli("pause", rid[:8], "--store", "st", cwd=work)  # a prefix, as for cancel
        assert proc.returncode == 0, proc.stderr
        requested = "pause requested; the process executing it pauses it before its next step"
        assert proc.stdout.strip() == f"run {rid}: {requested}"
    finally:
        (work / "block_gate").unlink()
        stdout, _ = executing.communicate(timeout=120)
    assert executing.returncode == 3, stdout
    out = json.loads(stdout)
    assert out["status"] == "paused" and out["paused_step"] == "c", out
    assert calls(work) == ["a 1", "wait gate"]  # paused before step c

    code, out = cli_json("pause", rid, "--store", "st", cwd=work)
    assert code == 0 and out == {"run_id": rid, "status": "paused", "pause": "paused"}
    code, listed = cli_json("runs", "--status", "paused", "--store", "st", cwd=work)
    assert [r["run_id"] for r in listed] == [rid]
    code, done = cli_json("resume", rid, "--store", "st", cwd=work)
    assert code == 0 and done["result"] == {"total": 2}, done
    assert calls(work) == ["a 1", "wait gate", "c 2"]  # step a and the workflow replayed

    code, out = cli_json("pause", rid, "--store", "st", cwd=work)
    assert code == 2 and out["run_id"] == rid and out["status"] == "error"
    assert f"run {rid} is completed and cannot be paused" in out["error"]
    proc = cli("pause", "0123456789abcdef", "--store", "st", cwd=work)
    assert proc.returncode == 2 and "no run" in proc.stderr, proc

    killed = waiting_at_the_gate(work, "--args", '{"n": 5}')
    try:
        killed.kill()
        killed.communicate(timeout=60)
    finally:
        (work / "block_gate").unlink()
    code, runs = cli_json("runs", "--store", "st", cwd=work)
    [second] = [r["run_id"] for r in runs if r["run_id"] != rid]
    proc = cli("pause", second, "--store", "st", cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == (
        f"run {second} paused; continue it with: openprogram resume {second}"
    )
    code, done = cli_json("resume", second, "--store", "st", cwd=work)
    assert code == 0 and done["result"] == {"total": 6}, done


def test_a_busy_worker_takes_its_next_run_as_one_ends_not_at_its_next_poll(work: Path) -> None:
    # one slot, a poll of ten minutes: each run must start as the one before it ends
    ids = []
    for n in (1, 2, 3):
        proc = cli(
            "submit", "prog.py:main", "--args", json.dumps({"n": n}), "--store", "st", cwd=work
        )
        assert proc.returncode == 0, proc.stderr
        ids.append(proc.stdout.strip())
    try:
        proc = subprocess.run(
            [OPENPROGRAM, "worker", "--exit-when-idle", "--poll", "600", "--store", "st"],
            capture_output=True, text=True, timeout=60, cwd=work, env=env(),
        )  # fmt: skip
    except subprocess.TimeoutExpired as exc:  # waiting out a poll between two runs
        pytest.fail(f"the worker waited for its poll between runs: {exc.stdout!r}")
    assert proc.returncode == 0, proc.stderr
    assert sorted(proc.stdout.splitlines()) == sorted(f"run {i} completed" for i in ids)


# Steps append "<name> <value>" to calls.log and fail while a file fail_<name> exists.
ACT = """
import os

from openprogram import Agent, step

HERE = os.path.dirname(os.path.abspath(__file__))


def act(name: str, value: int) -> int:
    with open(os.path.join(HERE, "calls.log"), "a", encoding="utf-8") as f:
        f.write(name + " " + str(value) + "\\n")
    if os.path.exists(os.path.join(HERE, "fail_" + name)):
        raise RuntimeError("injected failure in " + name)
    return value + 1


"""

CLASS_LEVEL = (
    ACT
    + '''
class Bot(Agent):
    method_options = {"go": {"resumable": True}}

    @{decorator}
    def go({receiver}n: int = 1) -> int:
        """Two steps."""
        a = step("a", act, "a", n)
        return step("c", act, "c", a)


go = Bot.go
PROGRAM_ENTRIES = ["go"]
'''
)


@pytest.mark.parametrize(
    ("decorator", "receiver"), [("staticmethod", ""), ("classmethod", "cls, ")]
)
def test_a_resumable_static_or_class_method_entry_runs_and_resumes(
    tmp_path: Path, decorator: str, receiver: str
) -> None:
    """An Agent's resumable @staticmethod / @classmethod exported as ``go = Bot.go`` was
    refused: "OP403 entry 'go' is a BoundScoped, not a function or bound Agent method".
    It runs, and resumes from its saved source (keep_original) past its completed step."""
    prog = tmp_path / "prog.py"
    prog.write_text(
        CLASS_LEVEL.replace("{decorator}", decorator).replace("{receiver}", receiver),
        encoding="utf-8",
    )
    (tmp_path / "fail_c").touch()
    code, out = cli_json("run", "prog.py:go", "--args", '{"n": 2}', "--store", "st", cwd=tmp_path)
    assert code == 1 and out["status"] == "failed", out
    assert "injected failure in c" in out["error"]
    (tmp_path / "fail_c").unlink()
    # the saved source runs on resume, not this edit
    prog.write_text(prog.read_text().replace('step("c", act, "c", a)', "a * 100"))
    code, again = cli_json("resume", out["run_id"], "--store", "st", cwd=tmp_path)
    assert code == 0 and again["status"] == "completed" and again["result"] == 4, again
    assert calls(tmp_path) == ["a 2", "c 3", "c 3"]
    shown = cli("show", out["run_id"], "--store", "st", cwd=tmp_path)
    assert "code go [completed]" in shown.stdout, shown.stdout


@pytest.mark.parametrize(
    ("decorator", "receiver"), [("staticmethod", ""), ("classmethod", "cls, ")]
)
def test_a_direct_call_of_a_resumable_static_or_class_method_runs_durably(
    tmp_path: Path, decorator: str, receiver: str
) -> None:
    """``Bot.go(n=2)`` from Python is a durable run (it raised the same OP403 error)."""
    (tmp_path / "prog.py").write_text(
        CLASS_LEVEL.replace("{decorator}", decorator).replace("{receiver}", receiver),
        encoding="utf-8",
    )
    (tmp_path / "call.py").write_text("from prog import Bot\n\nprint(Bot.go(n=2))\n")
    proc = python("call.py", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip() == "4", proc.stderr
    listed = json.loads(cli("runs", "--json", "--store", "st", cwd=tmp_path).stdout)
    assert [r["status"] for r in listed] == ["completed"], listed


INHERITED_CLASSMETHOD = (
    ACT
    + '''
class Base(Agent):
    method_options = {"go": {"resumable": True}}
    scale = 1

    @classmethod
    def go(cls, n: int = 1) -> int:
        """Two steps, the second scaled by the class the entry was reached through."""
        a = step("a", act, "a", n)
        return step("c", act, "c", a) * cls.scale


class Child(Base):
    scale = 10


go = Child.go
PROGRAM_ENTRIES = ["go"]
'''
)


def test_an_inherited_classmethod_entry_resumes_bound_to_the_class_it_was_reached_through(
    tmp_path: Path,
) -> None:
    """``go = Child.go`` where ``go`` is a classmethod of ``Base``: the first run binds
    ``cls`` to ``Child``; the resume from the saved source bound it to ``Base`` (the
    method's ``__qualname__``), so ``cls.scale`` changed between run and resume."""
    (tmp_path / "prog.py").write_text(INHERITED_CLASSMETHOD, encoding="utf-8")
    code, first = cli_json("run", "prog.py:go", "--args", '{"n": 2}', "--store", "st", cwd=tmp_path)
    assert code == 0 and first["result"] == 40, first
    (tmp_path / "fail_c").touch()
    code, out = cli_json("run", "prog.py:go", "--args", '{"n": 2}', "--store", "st", cwd=tmp_path)
    assert code == 1 and out["status"] == "failed", out
    (tmp_path / "fail_c").unlink()
    code, again = cli_json("resume", out["run_id"], "--store", "st", cwd=tmp_path)
    assert code == 0 and again["status"] == "completed", again
    assert again["result"] == 40, again
