"""What ``openprogram runs`` and ``show`` tell a user about a run that did not complete,
in real subprocesses on a real SQLite store: the state, the step it stopped in, and why.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_programs import (
    OPENPROGRAM,
    calls,
    cli,
    ctrl_c_in_step_slow,
    env,
    write_program,
)


@pytest.fixture()
def work(tmp_path: Path) -> Path:
    write_program(tmp_path)
    return tmp_path


def table_rows(work: Path) -> list[list[str]]:
    """The rows of ``openprogram runs`` (header first), split into their columns."""
    proc = cli("runs", "--store", "st", cwd=work)
    assert proc.returncode == 0, proc.stderr
    return [re.split(r"\s{2,}", line.strip()) for line in proc.stdout.splitlines()]


def only_run(work: Path) -> dict[str, object]:
    proc = cli("runs", "--json", "--store", "st", cwd=work)
    assert proc.returncode == 0, proc.stderr
    [run] = json.loads(proc.stdout)
    return dict(run)


@pytest.fixture()
def blocked_in_slow(work: Path) -> Iterator[subprocess.Popen[str]]:
    """``openprogram run prog.py:main`` executing its step 'slow' (blocked there)."""
    (work / "block_slow").touch()
    proc = subprocess.Popen(
        [OPENPROGRAM, "run", "prog.py:main", "--store", "st"],
        cwd=work,
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        while "slow 2" not in calls(work):
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def test_a_run_whose_process_was_killed_is_shown_interrupted_at_its_step(
    work: Path, blocked_in_slow: subprocess.Popen[str]
) -> None:
    """A killed ``openprogram run`` left its run ``running``: ``runs`` and ``show`` said
    "running" (nothing executes it; the editor's Runs view says "interrupted") and named
    no step."""
    blocked_in_slow.send_signal(signal.SIGKILL)
    blocked_in_slow.wait(timeout=60)
    run = only_run(work)
    assert run["status"] == "running"  # the stored state (what --status filters on)
    assert run["interrupted"] is True and run["interrupted_step"] == "slow"
    assert table_rows(work)[1][:4] == [run["run_id"], "interrupted", "main", "slow"]
    listed = cli("runs", "--status", "interrupted", "--json", "--store", "st", cwd=work)
    assert [r["run_id"] for r in json.loads(listed.stdout)] == [run["run_id"]]
    shown = cli("show", str(run["run_id"]), "--store", "st", cwd=work)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[0].endswith("; run interrupted at step 'slow'")


def test_a_resumed_run_shows_no_call_of_its_killed_execution_as_running(
    work: Path, blocked_in_slow: subprocess.Popen[str]
) -> None:
    """After a killed ``openprogram run`` was resumed to completion, ``show`` listed the
    killed execution's calls ("code main", "code slow") as ``[running]`` forever, in a
    completed run. They are closed when the run is taken over, as errors that say why."""
    blocked_in_slow.send_signal(signal.SIGKILL)
    blocked_in_slow.wait(timeout=60)
    (work / "block_slow").unlink()
    rid = str(only_run(work)["run_id"])
    resumed = cli("resume", rid, "--rerun-uncertain", "--store", "st", cwd=work)
    assert resumed.returncode == 0, resumed.stderr
    shown = cli("show", rid, "--store", "st", cwd=work)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[0].endswith("; run completed"), shown.stdout
    assert "[running]" not in shown.stdout, shown.stdout
    closed = [line for line in shown.stdout.splitlines() if "[error]" in line]
    assert [line.split("[")[0].strip(" │├└─") for line in closed] == ["code main", "code slow"]
    assert all("interrupted: the process executing this call ended" in ln for ln in closed)
    assert calls(work).count("c 3") == 1  # the run went on from the re-run step: once


@pytest.mark.parametrize("verb", ["cancel", "pause", "resume --all-interrupted"])
def test_a_killed_run_cancelled_or_paused_here_shows_no_call_as_running(
    work: Path, blocked_in_slow: subprocess.Popen[str], verb: str
) -> None:
    """A killed run cancelled or paused from the command line kept its killed calls
    ``[running]`` in ``show`` (only a resume closed them): they are closed at the cancel or
    the pause, as errors that say why."""
    blocked_in_slow.send_signal(signal.SIGKILL)
    blocked_in_slow.wait(timeout=60)
    rid = str(only_run(work)["run_id"])
    argv = [*verb.split(), *([] if "--all-interrupted" in verb else [rid])]
    done = cli(*argv, "--store", "st", cwd=work)
    assert done.returncode in (0, 1, 3), done.stderr
    shown = cli("show", rid, "--store", "st", cwd=work)
    assert shown.returncode == 0, shown.stderr
    assert "[running]" not in shown.stdout, shown.stdout
    closed = [line for line in shown.stdout.splitlines() if "[error]" in line]
    assert [line.split("[")[0].strip(" │├└─") for line in closed] == ["code main", "code slow"]


def test_a_run_that_executes_is_shown_running(
    work: Path, blocked_in_slow: subprocess.Popen[str]
) -> None:
    run = only_run(work)
    assert run["status"] == "running" and run["interrupted"] is False
    assert run["interrupted_step"] is None
    assert table_rows(work)[1][:4] == [run["run_id"], "running", "main", "-"]
    listed = cli("runs", "--status", "interrupted", "--json", "--store", "st", cwd=work)
    assert json.loads(listed.stdout) == []
    shown = cli("show", str(run["run_id"]), "--store", "st", cwd=work)
    assert shown.stdout.splitlines()[0].endswith("; run running")


def test_ctrl_c_in_a_step_names_the_step_and_how_to_resume(work: Path) -> None:
    """Ctrl-C inside step 'slow' paused the run with no PAUSED_STEP (``runs`` showed "-",
    ``show`` no step) and an error line that did not say how to go on."""
    returncode, _, stderr = ctrl_c_in_step_slow(work)
    assert returncode == 130, stderr
    run = only_run(work)
    rid = run["run_id"]
    [line] = stderr.strip().splitlines()
    assert line == (
        f"openprogram: error: interrupted: run {rid} was interrupted (Ctrl-C) at step 'slow'; "
        "the step may or may not have taken effect: check it, then resume with: "
        f"openprogram resume {rid} --rerun-uncertain"
    )
    assert (run["status"], run["pause_reason"], run["paused_step"]) == (
        "paused",
        "requested",
        "slow",
    )
    assert run["paused_occurrence"] == 0  # the record's, as the editor's pausedOccurrence
    assert table_rows(work)[1][1:4] == ["paused (requested)", "main", "slow"]
    shown = cli("show", str(rid), "--store", "st", cwd=work)
    assert shown.stdout.splitlines()[0].endswith("; run paused (requested) at step 'slow'")
    # the command the line names is the one that goes on (a plain resume pauses as
    # uncertain: the hint used to name that one)
    (work / "block_slow").unlink()
    plain = cli("resume", str(rid), "--store", "st", cwd=work)
    assert plain.returncode == 3 and "--rerun-uncertain" in plain.stdout, plain.stdout
    hinted = line.rpartition("resume with: ")[2].split()
    done = cli(*hinted[1:], "--store", "st", cwd=work)
    assert done.returncode == 0, done.stdout + done.stderr


def test_show_names_each_sessions_own_head(work: Path) -> None:
    """The header said ``head 01a23378`` for every session: the first 8 hex digits of a
    node id are its creation time, the same for every node made in the same minute."""
    heads = []
    for x in ("1", "2"):
        proc = cli("run", "prog.py:plain", "--args", '{"x": ' + x + "}", "--store", "st", cwd=work)
        assert proc.returncode == 0, proc.stderr
    for run in json.loads(cli("runs", "--json", "--store", "st", cwd=work).stdout):
        rid = run["run_id"]
        stored = json.loads(cli("show", rid, "--format", "json", "--store", "st", cwd=work).stdout)
        head = stored["session"]["head_id"]
        first = cli("show", rid, "--store", "st", cwd=work).stdout.splitlines()[0]
        assert f", head {head[-8:]};" in first  # its random part, not its time
        heads.append(head)
    assert len(set(heads)) == 2


def test_a_requested_cancel_is_shown_until_the_process_records_it(
    work: Path, blocked_in_slow: subprocess.Popen[str]
) -> None:
    """``cancel`` of a run another process executes is a request; ``runs`` and ``show``
    kept saying plain "running" (only ``--json`` had ``cancel_requested``)."""
    rid = str(only_run(work)["run_id"])
    proc = cli("cancel", rid, "--store", "st", cwd=work)
    assert proc.returncode == 0 and "cancel requested" in proc.stdout, proc.stderr
    assert table_rows(work)[1][:3] == [rid, "running (cancel requested)", "main"]
    shown = cli("show", rid, "--store", "st", cwd=work)
    assert shown.stdout.splitlines()[0].endswith("; run running (cancel requested)")
    (work / "block_slow").unlink()
    assert blocked_in_slow.wait(timeout=60) == 1
    assert table_rows(work)[1][:3] == [rid, "cancelled", "main"]


def test_a_requested_pause_is_shown_until_the_process_pauses(
    work: Path, blocked_in_slow: subprocess.Popen[str]
) -> None:
    """``pause`` of a run another process executes is a request: ``runs``, ``runs --json``
    and ``show`` say so until that process pauses the run before its next step."""
    rid = str(only_run(work)["run_id"])
    proc = cli("pause", rid, "--store", "st", cwd=work)
    assert proc.returncode == 0 and "pause requested" in proc.stdout, proc.stderr
    assert table_rows(work)[1][:3] == [rid, "running (pause requested)", "main"]
    assert (only_run(work)["pause_requested"], only_run(work)["cancel_requested"]) == (True, False)
    shown = cli("show", rid, "--store", "st", cwd=work)
    assert shown.stdout.splitlines()[0].endswith("; run running (pause requested)")
    (work / "block_slow").unlink()
    assert blocked_in_slow.wait(timeout=60) == 3
    assert table_rows(work)[1][:4] == [rid, "paused (requested)", "main", "c"]
    assert only_run(work)["pause_requested"] is False


def test_a_failed_run_says_which_step_failed_and_where(work: Path) -> None:
    """A failed run said only ``RuntimeError: injected failure in c``: not the step that
    raised it nor the line (``show`` was the only way to find the step)."""
    (work / "fail_c").touch()
    source = (work / "prog.py").read_text(encoding="utf-8").splitlines()
    line = 1 + next(i for i, text in enumerate(source) if "raise RuntimeError" in text)
    proc = cli("run", "prog.py:main", "--store", "st", cwd=work)
    assert proc.returncode == 1
    rid = only_run(work)["run_id"]
    error = f"RuntimeError: injected failure in c (in step 'c', at prog.py:{line} in act)"
    assert proc.stderr.strip() == f"run {rid} failed: {error}"
    assert only_run(work)["error"] == error


def test_a_failure_outside_any_step_names_the_line_only(work: Path) -> None:
    (work / "prog.py").write_text(
        (work / "prog.py").read_text(encoding="utf-8")
        + '\n\ndef broken(n: int) -> int:\n    step("a", act, "a", n)\n    return n + "1"\n\n'
        'broken.__agent_options__ = {"resumable": True}\nPROGRAM_ENTRIES = ["broken"]\n',
        encoding="utf-8",
    )
    line = len((work / "prog.py").read_text(encoding="utf-8").splitlines()) - 3
    proc = cli("run", "prog.py:broken", "--args", '{"n": 1}', "--store", "st", "--json", cwd=work)
    assert proc.returncode == 1
    out = json.loads(proc.stdout)
    assert out["error"] == (
        "TypeError: unsupported operand type(s) for +: 'int' and 'str' "
        f"(at prog.py:{line} in broken)"
    )


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        (
            "prog2.py:main",
            "prog2.py: importing the Program failed: KeyError('k') (at helper.py:2 in lookup)",
        ),
        (
            "prog2:main",
            "cannot import Program module 'prog2': importing it raised KeyError('k') "
            "(at helper.py:2 in lookup)",
        ),
        (
            "prog3.py:main",
            "prog3.py: importing the Program failed: "
            "ModuleNotFoundError(\"No module named 'no_such_module_here'\") (at prog3.py:2)",
        ),
    ],
)
def test_a_program_whose_import_fails_says_the_line(work: Path, ref: str, message: str) -> None:
    """``importing the Program failed: KeyError('k')`` named no line: here the failing
    line is in a helper module the Program imports."""
    (work / "helper.py").write_text('def lookup():\n    return {}["k"]\n\nX = lookup()\n')
    (work / "prog2.py").write_text("import helper\n\ndef main():\n    return 1\n")
    (work / "prog3.py").write_text("\nimport no_such_module_here\n")
    proc = cli("run", ref, "--store", "st", cwd=work)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [f"openprogram: error: {message}"]


def test_the_call_a_cancel_unwound_is_shown_cancelled_not_failed(
    work: Path, blocked_in_slow: subprocess.Popen[str]
) -> None:
    """The cancelled run's own node was ``[error] RunCancelled: ...``."""
    rid = str(only_run(work)["run_id"])
    assert cli("cancel", rid, "--store", "st", cwd=work).returncode == 0
    (work / "block_slow").unlink()
    assert blocked_in_slow.wait(timeout=60) == 1
    stored = json.loads(cli("show", rid, "--format", "json", "--store", "st", cwd=work).stdout)
    [root] = [n for n in stored["nodes"] if n["caller_id"] is None]
    assert (root["name"], root["status"]) == ("main", "cancelled")
    assert [n["status"] for n in stored["nodes"] if n["status"] == "error"] == []


INHERITED = """
from openprogram import Agent, step


def grow(n: int) -> int:
    return n + 1


class Reporter(Agent):
    method_options = {"report": {"resumable": True}}

    def report(self, n: int) -> dict:
        return {"n": step("grow", grow, n)}


class FancyReporter(Reporter):
    instructions = "Fancy."


report = FancyReporter().report
PROGRAM_ENTRIES = ["report"]
"""


def test_runs_names_the_entry_that_ran_not_the_class_defining_its_method(
    tmp_path: Path,
) -> None:
    """``runs`` listed ``prog.py:report`` (a method FancyReporter inherits) as
    ``Reporter.report``: a name the user never ran, of a class that did not run."""
    (tmp_path / "fancy.py").write_text(INHERITED, encoding="utf-8")
    proc = cli("run", "fancy.py:report", "--args", '{"n": 1}', "--store", "st", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    [_, row] = table_rows(tmp_path)
    assert row[1:3] == ["completed", "report"]


def test_a_failure_in_saved_source_names_the_line_of_the_file_it_was_saved_from(
    work: Path,
) -> None:
    """A worker runs the source ``submit`` saved (``keep_original``): the line of a failure
    there is the one in the Program file (the saved source was compiled from line 1)."""
    (work / "fail_c").touch()
    source = (work / "prog.py").read_text(encoding="utf-8").splitlines()
    line = 1 + next(i for i, text in enumerate(source) if "raise RuntimeError" in text)
    proc = cli("submit", "prog.py:main", "--store", "st", cwd=work)
    assert proc.returncode == 0, proc.stderr
    worker = cli("worker", "--exit-when-idle", "--store", "st", cwd=work)
    assert worker.returncode == 0, worker.stderr
    rid = only_run(work)["run_id"]
    assert worker.stdout.strip() == (
        f"run {rid} failed: RuntimeError: injected failure in c "
        f"(in step 'c', at prog.py:{line} in act (saved source))"
    )


def test_listing_a_store_that_does_not_exist_says_so(work: Path) -> None:
    """``runs --store stt`` (a typo of ``st``) said "no runs", as for a store without runs."""
    assert (
        cli("run", "prog.py:plain", "--args", '{"x": 1}', "--store", "st", cwd=work).returncode == 0
    )
    assert cli("runs", "--store", "stt", cwd=work).stdout == "no runs (no store at stt)\n"
    assert cli("sessions", "--store", "stt", cwd=work).stdout == "No sessions (no store at stt).\n"
    assert cli("runs", "--status", "paused", "--store", "st", cwd=work).stdout == "no runs\n"


def test_runs_of_queues_show_their_queue_and_filter_by_it(work: Path) -> None:
    """A run submitted to a queue said nothing of it in the table (only ``--json``): a
    QUEUE column now appears when a listed run has a queue; ``--queue Q`` lists Q's."""
    assert (
        cli("run", "prog.py:plain", "--args", '{"x": 1}', "--store", "st", cwd=work).returncode == 0
    )
    assert table_rows(work)[0] == ["RUN_ID", "STATUS", "ENTRY", "PAUSED_STEP", "UPDATED"]
    ids = {}
    for queue in ("reports", "mail"):
        proc = cli(
            "submit", "prog.py:plain", "--args", '{"x": 2}', "--queue", queue, "--store", "st",
            cwd=work,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        ids[queue] = proc.stdout.strip()
    header, *rows = table_rows(work)
    assert header == ["RUN_ID", "STATUS", "ENTRY", "PAUSED_STEP", "QUEUE", "UPDATED"]
    assert sorted((r[1], r[4]) for r in rows) == [
        ("completed", "-"), ("queued", "mail"), ("queued", "reports"),
    ]  # fmt: skip
    proc = cli("runs", "--queue", "reports", "--store", "st", cwd=work)
    [only] = proc.stdout.splitlines()[1:]
    assert only.split()[:2] == [ids["reports"], "queued"] and "reports" in only.split()
    listed = json.loads(cli("runs", "--queue", "mail", "--json", "--store", "st", cwd=work).stdout)
    assert [(r["run_id"], r["queue"]) for r in listed] == [(ids["mail"], "mail")]
    none = cli("runs", "--queue", "nowhere", "--store", "st", cwd=work)
    assert none.returncode == 0 and none.stdout.startswith("no runs"), none


FAN = """\
import os
import time

from openprogram import parallel, step
from openprogram.durable import resumable

HERE = os.path.dirname(os.path.abspath(__file__))


def work(tag: str) -> str:
    with open(os.path.join(HERE, "calls.log"), "a") as f:
        f.write(tag + "\\n")
    while tag == "slow" and os.path.exists(os.path.join(HERE, "block")):
        time.sleep(0.05)
    return tag


def branch(tag: str) -> list:
    return [step("w", work, tag), step("w", work, tag + "-2")]


@resumable
def fan() -> dict:
    return parallel({"fast": (branch, ("fast",), {}), "slow": (branch, ("slow",), {})})


PROGRAM_ENTRIES = ["fan"]
"""


def test_an_uncertain_step_of_a_parallel_branch_is_named_with_its_branch(tmp_path: Path) -> None:
    """Both branches of a parallel have a step ``w #0``; killed in the slow one, the run
    said "step 'w' (occurrence 0) ... was started but its result was not saved" (on
    ``resume`` and on ``resume --all-interrupted``) without saying which. The message
    names the branch, as an incompatible resume does."""
    (tmp_path / "fan.py").write_text(FAN, encoding="utf-8")
    (tmp_path / "block").touch()
    proc = subprocess.Popen(
        [OPENPROGRAM, "run", "fan.py:fan", "--store", "st"],
        cwd=tmp_path,
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        log = tmp_path / "calls.log"
        while "slow" not in (log.read_text().split() if log.exists() else []):
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
    (tmp_path / "block").unlink()
    rid = str(only_run(tmp_path)["run_id"])
    named = re.compile(
        r"step 'w' \(occurrence 0\) of workflow/branch 'parallel#0/(fast|slow)#0' of run "
    )
    auto = cli("resume", "--all-interrupted", "--store", "st", cwd=tmp_path)
    assert auto.returncode in (0, 3), auto.stdout + auto.stderr
    assert named.search(str(only_run(tmp_path)["error"])), only_run(tmp_path)
    resumed = cli("resume", rid, "--store", "st", cwd=tmp_path)
    assert resumed.returncode == 3, resumed.stdout + resumed.stderr  # paused: uncertain
    assert named.search(resumed.stdout + resumed.stderr), resumed.stdout + resumed.stderr
