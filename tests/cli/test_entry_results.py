"""An entry's result follows the rule of step results (JSON values, or the run fails with
the step's clear error); a direct call returns the function's own value; the session DAG
and ``show --format json`` hold valid JSON whatever a call returned; SIGTERM stops
``openprogram run`` as Ctrl-C does; an interrupted run of an entry that is not resumable
ends failed ("run it again"). Real CLI subprocesses, SQLite stores."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from cli_programs import OPENPROGRAM, cli, cli_json, env, python, spawn_interruptible

PROGRAM = """
import dataclasses
import datetime
import decimal
import os
import time

from pydantic import BaseModel

from openprogram import agentic_function, step
from openprogram.durable import resumable

HERE = os.path.dirname(os.path.abspath(__file__))


class Model(BaseModel):
    name: str
    when: datetime.date


@dataclasses.dataclass
class Point:
    x: int


def model():
    return Model(name="a", when=datetime.date(2024, 1, 2))


def point():
    return Point(1)


def day():
    return datetime.date(2024, 1, 2)


def money():
    return {"d": decimal.Decimal("1.10")}


def numbers():
    return (i for i in range(3))


def nan():
    return {"v": float("nan")}


def infinite():
    return [float("inf")]


def tuple_keys():
    return {(1, 2): "a"}


def circular():
    a = []
    a.append(a)
    return a


def deep():
    x = []
    for _ in range(5000):
        x = [x]
    return x


def fine():
    return {"n": [1, 2.5, None, True, "x"]}


def one():
    return 1


def circular_list(n):
    a = [n]
    a.append(a)
    return a


@resumable
def step_circular():
    return step("loop", circular_list, 1)


@agentic_function
def inner_nan() -> dict:
    return {"v": float("nan"), "w": [float("-inf")]}


@agentic_function
def inner_circular() -> list:
    return circular()


def records_odd_values():
    inner_nan()
    inner_circular()
    return "done"


def wait(tag):
    with open(os.path.join(HERE, "calls.log"), "a", encoding="utf-8") as f:
        f.write(tag + "\\n")
    while os.path.exists(os.path.join(HERE, "block_" + tag)):
        time.sleep(0.01)
    return tag


@resumable
def durable(n: int = 1) -> int:
    step("first", one)
    step("slow", wait, "slow")
    return n


def plain() -> str:
    return wait("plain")


PROGRAM_ENTRIES = [
    "model", "point", "day", "money", "numbers", "nan", "infinite", "tuple_keys", "circular",
    "deep", "fine", "step_circular", "records_odd_values", "durable", "plain",
]
"""


def _strict_json(text: str) -> Any:
    """``json.loads`` refusing what is not JSON (NaN, Infinity)."""

    def refuse(constant: str) -> Any:
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture()
def work(tmp_path: Path) -> Path:
    (tmp_path / "prog.py").write_text(PROGRAM, encoding="utf-8")
    return tmp_path


def _runs(work: Path) -> list[dict[str, Any]]:
    proc = cli("runs", "--json", "--store", "st", cwd=work)
    data = json.loads(proc.stdout)
    return data["runs"] if isinstance(data, dict) else data


@pytest.mark.parametrize(
    ("entry", "type_name", "reason"),
    [
        ("model", "Model", "Object of type Model is not JSON serializable"),
        ("point", "Point", "Object of type Point is not JSON serializable"),
        ("day", "date", "Object of type date is not JSON serializable"),
        ("money", "dict", "Object of type Decimal is not JSON serializable"),
        ("numbers", "generator", "Object of type generator is not JSON serializable"),
        ("nan", "dict", "Out of range float values are not JSON compliant"),
        ("infinite", "list", "Out of range float values are not JSON compliant"),
        ("tuple_keys", "dict", "keys must be str, int, float, bool or None, not tuple"),
        ("circular", "list", "it contains a circular reference"),
        ("deep", "list", "it is nested too deeply to encode"),
    ],
)
def test_an_entry_result_that_is_not_json_fails_the_run_as_a_step_result_does(
    work: Path, entry: str, type_name: str, reason: str
) -> None:
    """It became its repr string (a dataclass, a pydantic model, a date, a generator:
    "<generator object ...>", exit 0), NaN was printed as invalid JSON, a circular or
    5,000-deep result failed with a bare RecursionError."""
    proc = cli("run", f"prog.py:{entry}", "--store", "st", "--json", cwd=work)
    [line] = proc.stdout.splitlines()
    out = _strict_json(line)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert out["status"] == "failed" and "result" not in out
    assert out["error"].startswith(
        f"StepUsageError: entry '{entry}' returned a {type_name}, which is not JSON ({reason}); "
        "entry results must be JSON values"
    ), out["error"]
    [run] = _runs(work)
    assert (run["status"], run["error"]) == ("failed", out["error"])


def test_a_step_result_names_a_circular_reference(work: Path) -> None:
    """Steps and entries share the one rule and its messages."""
    code, out = cli_json("run", "prog.py:step_circular", "--store", "st", cwd=work)
    assert code == 1
    assert out["error"].startswith(
        "StepUsageError: step 'loop' returned a list, which is not JSON (it contains a "
        "circular reference); step results must be JSON values"
    ), out["error"]


def test_a_json_result_is_printed_as_it_was_returned(work: Path) -> None:
    code, out = cli_json("run", "prog.py:fine", "--store", "st", cwd=work)
    assert (code, out["status"], out["result"]) == (
        0,
        "completed",
        {"n": [1, 2.5, None, True, "x"]},
    )


def test_the_dag_and_show_json_hold_valid_json_whatever_a_call_returned(work: Path) -> None:
    """A nested call returning NaN was recorded as NaN (``show --format json`` printed
    invalid JSON); one returning a circular list failed the whole run (RecursionError)."""
    code, out = cli_json("run", "prog.py:records_odd_values", "--store", "st", cwd=work)
    assert (code, out["status"], out["result"]) == (0, "completed", "done"), out
    shown = cli("show", out["run_id"], "--store", "st", "--format", "json", cwd=work)
    assert shown.returncode == 0, shown.stderr
    nodes = _strict_json(shown.stdout)["nodes"]
    outputs = {n["name"]: n["output"] for n in nodes}
    assert outputs["inner_nan"] == {"v": "nan", "w": ["-inf"]}
    assert outputs["inner_circular"] == ["<circular reference>"]


DIRECT = """
import datetime
import json

from openprogram import step
from openprogram.durable import resumable
from openprogram.durable.errors import StepUsageError


def one():
    return 1


@resumable
def pair():
    return (step("one", one), 2)


@resumable
def keyed():
    return {1: "x"}


@resumable
def day():
    return datetime.date(2024, 1, 2)


if __name__ == "__main__":
    for f in (pair, keyed):
        value = f()
        print(type(value).__name__, repr(value))
    try:
        day()
    except StepUsageError as exc:
        print("refused:", exc)
"""


def test_a_direct_call_returns_the_functions_own_value(tmp_path: Path) -> None:
    """It returned the stored JSON form (a tuple came back a list, {1: "x"} as {"1": "x"},
    a date as the string "datetime.date(2024, 1, 2)")."""
    (tmp_path / "direct.py").write_text(DIRECT, encoding="utf-8")
    proc = python("direct.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[:2] == ["tuple (1, 2)", "dict {1: 'x'}"]
    assert lines[2].startswith(
        "refused: entry 'day' returned a date, which is not JSON (Object of type date is "
        "not JSON serializable); entry results must be JSON values"
    ), lines[2]
    runs = json.loads(cli("runs", "--json", "--store", "st", cwd=tmp_path).stdout)
    runs = runs["runs"] if isinstance(runs, dict) else runs
    assert [r["status"] for r in runs] == ["completed", "completed", "failed"]


# -- SIGTERM and Ctrl-C ------------------------------------------------------------------
def _signal_in(work: Path, entry: str, tag: str, sig: int) -> tuple[int, str, str]:
    """``openprogram run prog.py:ENTRY --json`` sent ``sig`` while it waits in ``tag``."""
    (work / f"block_{tag}").touch()
    proc = spawn_interruptible("run", f"prog.py:{entry}", "--store", "st", "--json", cwd=work)
    try:
        log = work / "calls.log"
        while not (log.exists() and tag in log.read_text(encoding="utf-8").split()):
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, stdout, stderr


def test_sigterm_saves_the_run_as_ctrl_c_does_and_prints_its_json(work: Path) -> None:
    """SIGTERM (docker stop, systemd, a CI timeout) ended ``run --json`` with exit 143, an
    empty stdout and the run left running (then interrupted)."""
    code, stdout, stderr = _signal_in(work, "durable", "slow", signal.SIGTERM)
    assert code == 143, stdout + stderr
    [line] = stdout.splitlines()
    out = json.loads(line)
    rid = out["run_id"]
    assert out == {
        "run_id": rid,
        "status": "paused",
        "error": f"run {rid} was interrupted (SIGTERM) at step 'slow'",
        "paused_step": "slow",
    }
    assert f"resume with: openprogram resume {rid} --rerun-uncertain" in stderr
    [run] = _runs(work)
    assert (run["status"], run["pause_reason"], run["paused_step"]) == (
        "paused",
        "requested",
        "slow",
    )
    (work / "block_slow").unlink()
    code, done = cli_json("resume", rid, "--rerun-uncertain", "--store", "st", cwd=work)
    assert (code, done["status"], done["result"]) == (0, "completed", 1)


@pytest.mark.parametrize(("sig", "how", "exit_code"), [(signal.SIGINT, "Ctrl-C", 130),
                                                       (signal.SIGTERM, "SIGTERM", 143)])  # fmt: skip
def test_an_interrupted_run_of_an_entry_that_is_not_resumable_ends_failed(
    work: Path, sig: int, how: str, exit_code: int
) -> None:
    """Ctrl-C said "resume with: openprogram resume ID", which refused ("not declared
    resumable; run it again"), and the run stayed ``paused (requested)`` for ever."""
    code, stdout, stderr = _signal_in(work, "plain", "plain", sig)
    assert code == exit_code, stdout + stderr
    out = json.loads(stdout)
    rid = out["run_id"]
    error = f"run {rid} was interrupted ({how}); its entry is not declared resumable: run it again"
    assert out == {"run_id": rid, "status": "failed", "error": error}
    assert stderr.strip() == f"openprogram: error: interrupted: {error}"
    [run] = _runs(work)
    assert (run["status"], run["error"]) == ("failed", error)


def test_a_killed_run_of_an_entry_that_is_not_resumable_is_failed_once(work: Path) -> None:
    """Every ``resume --all-interrupted`` reported it failed again (exit 1) while ``runs``
    still said interrupted."""
    (work / "block_plain").touch()
    proc = subprocess.Popen(
        [OPENPROGRAM, "run", "prog.py:plain", "--store", "st"],
        cwd=work,
        env=env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        log = work / "calls.log"
        while not log.exists():
            assert proc.poll() is None
            time.sleep(0.05)
    finally:
        proc.kill()
        proc.wait()
    [run] = _runs(work)
    assert run["interrupted"] is True
    code, first = cli_json("resume", "--all-interrupted", "--store", "st", cwd=work)
    assert code == 1 and [r["status"] for r in first["runs"]] == ["failed"], first
    [run] = _runs(work)
    assert run["status"] == "failed"
    assert run["error"] == (
        f"run {run['run_id']} was interrupted; its entry is not declared resumable: run it again"
    )
    code, again = cli_json("resume", "--all-interrupted", "--store", "st", cwd=work)
    assert (code, again) == (0, {"runs": []})


def test_cancel_kill_of_a_json_run_prints_it_cancelled(work: Path) -> None:
    """``cancel --kill`` sends SIGTERM: the run's ``--json`` object says what the store
    says, cancelled."""
    code, stdout, stderr = (0, "", "")
    (work / "block_plain").touch()
    proc = spawn_interruptible("run", "prog.py:plain", "--store", "st", "--json", cwd=work)
    try:
        log = work / "calls.log"
        while not log.exists():
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        [run] = _runs(work)
        code, cancelled = cli_json("cancel", run["run_id"], "--kill", "--store", "st", cwd=work)
        assert (code, cancelled["status"], cancelled["cancel"]) == (0, "cancelled", "cancelled")
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 143, stdout + stderr
    out = json.loads(stdout)
    assert (out["run_id"], out["status"]) == (run["run_id"], "cancelled")
    [after] = _runs(work)
    assert after["status"] == "cancelled"
    # the calls SIGTERM stopped say so ("error: Terminated:" said nothing after the colon)
    shown = cli("show", run["run_id"], "--store", "st", cwd=work)
    stopped = [ln for ln in shown.stdout.splitlines() if "[cancelled]" in ln]
    assert stopped and all(ln.endswith("error: Terminated: stopped by SIGTERM") for ln in stopped)
