"""Calling a resumable function or method directly from Python runs it durably: a run in
the configured store, its result returned, ``RunPaused`` (run id, step) when it pauses,
resumable with ``openprogram resume`` (issue 11, item 12). Real subprocesses, SQLite."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from cli_programs import calls, cli, cli_json, env

SCRIPT = """
import json
import os
import sys

from openprogram import Agent, RunPaused, step
from openprogram.durable import current_run_id, pause_run, resumable

HERE = os.path.dirname(os.path.abspath(__file__))


def act(name: str, value: int) -> int:
    with open(os.path.join(HERE, "calls.log"), "a", encoding="utf-8") as f:
        f.write(name + " " + str(value) + "\\n")
    if os.path.exists(os.path.join(HERE, "pause_after_" + name)):
        pause_run(current_run_id())  # stops the run before its next step
    if os.path.exists(os.path.join(HERE, "fail_" + name)):
        raise RuntimeError("injected failure in " + name)
    return value


@resumable
def total(n: int) -> dict:
    a = step("a", act, "a", n)
    c = step("c", act, "c", a + 1)
    return {"total": c}


class Reporter(Agent):
    method_options = {"report": {"resumable": True}}

    def report(self, n: int) -> dict:
        a = step("a", act, "a", n)
        c = step("c", act, "c", a * self.scale())
        return {"report": c}

    def scale(self) -> int:
        return 10


class BigReporter(Reporter):
    # inherits the resumable report; overrides the helper it calls

    def scale(self) -> int:
        return 100


if __name__ == "__main__":
    which, n = sys.argv[1], int(sys.argv[2])
    try:
        if which == "function":
            result = total(n)
        else:
            result = (BigReporter if which == "subclass" else Reporter)().report(n=n)
    except RunPaused as paused:
        print(json.dumps({"paused": paused.run_id, "step": paused.step, "text": str(paused)}))
    except RuntimeError as exc:
        print(json.dumps({"failed": str(exc)}))
    else:
        print(json.dumps({"result": result}))
"""


def _call(folder: Path, which: str, n: int) -> dict[str, str]:
    environment = env()
    environment["OPENPROGRAM_STORE"] = str(folder / "st")
    proc = subprocess.run(
        [sys.executable, "script.py", which, str(n)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=folder,
        env=environment,
    )
    assert proc.returncode == 0, proc.stderr
    out: dict[str, str] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def _runs(folder: Path) -> list[dict[str, str]]:
    proc = cli("runs", "--json", "--store", "st", cwd=folder)
    runs: list[dict[str, str]] = json.loads(proc.stdout)
    return runs


def test_direct_call_creates_a_completed_run(tmp_path: Path) -> None:
    (tmp_path / "script.py").write_text(SCRIPT, encoding="utf-8")
    assert _call(tmp_path, "function", 2) == {"result": {"total": 3}}
    assert _call(tmp_path, "method", 2) == {"result": {"report": 20}}
    runs = _runs(tmp_path)
    assert [(r["function"], r["status"]) for r in runs] == [
        ("total", "completed"),
        ("Reporter.report", "completed"),
    ]


def test_direct_call_raises_run_paused_and_resumes_from_the_cli(tmp_path: Path) -> None:
    (tmp_path / "script.py").write_text(SCRIPT, encoding="utf-8")
    (tmp_path / "pause_after_a").touch()
    out = _call(tmp_path, "function", 5)
    rid = out["paused"]
    assert out["step"] == "c"
    assert f"run {rid} paused at step 'c'" in out["text"]
    assert f"openprogram resume {rid}" in out["text"]
    (tmp_path / "pause_after_a").unlink()
    code, resumed = cli_json("resume", rid, "--store", "st", cwd=tmp_path)
    assert code == 0 and resumed["result"] == {"total": 6}
    assert calls(tmp_path) == ["a 5", "c 6"]  # step a was not run again


def test_failed_method_call_reraises_and_resumes_on_a_new_instance(tmp_path: Path) -> None:
    (tmp_path / "script.py").write_text(SCRIPT, encoding="utf-8")
    (tmp_path / "fail_c").touch()
    assert _call(tmp_path, "method", 3) == {"failed": "injected failure in c"}
    (run,) = _runs(tmp_path)
    assert run["status"] == "failed" and run["function"] == "Reporter.report"
    (tmp_path / "fail_c").unlink()
    code, resumed = cli_json("resume", run["run_id"], "--store", "st", cwd=tmp_path)
    assert code == 0 and resumed["result"] == {"report": 30}
    assert calls(tmp_path) == ["a 3", "c 30", "c 30"]


def test_inherited_method_resumes_on_the_class_it_was_called_on(tmp_path: Path) -> None:
    # BigReporter().report: a resume runs it on a new BigReporter(), with its override of
    # the helper, under either policy (not on the Reporter that defines the method).
    (tmp_path / "script.py").write_text(SCRIPT, encoding="utf-8")
    (tmp_path / "fail_c").touch()
    for _ in range(2):
        assert _call(tmp_path, "subclass", 3) == {"failed": "injected failure in c"}
    (tmp_path / "fail_c").unlink()
    for run, policy in zip(_runs(tmp_path), ("keep_original", "use_latest"), strict=True):
        assert run["status"] == "failed"
        code, resumed = cli_json(
            "resume", run["run_id"], "--policy", policy, "--store", "st", cwd=tmp_path
        )
        assert code == 0, (policy, resumed)
        assert resumed["result"] == {"report": 300}, policy
    assert calls(tmp_path) == ["a 3", "c 300", "a 3", "c 300", "c 300", "c 300"]


def test_a_direct_method_call_records_one_root_node_as_openprogram_run_does(
    tmp_path: Path,
) -> None:
    """``Reporter().report(n=2)`` from Python recorded a wrapper root above the method's
    own node (``code Reporter.report`` -> ``code report`` -> the steps), where ``openprogram
    run`` of the same method records one root with the steps under it."""
    (tmp_path / "script.py").write_text(SCRIPT, encoding="utf-8")
    assert _call(tmp_path, "method", 2) == {"result": {"report": 20}}
    (run,) = _runs(tmp_path)
    shown = cli("show", run["run_id"], "--store", "st", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    tree = [ln.split(" [")[0] for ln in shown.stdout.splitlines()[1:]]
    assert tree == ["code Reporter.report", "├── code a", "├── code scale", "└── code c"], (
        shown.stdout
    )


LISTED_METHOD = """
import os

from openprogram import Agent, step
from openprogram.durable import current_run_id, pause_run

HERE = os.path.dirname(os.path.abspath(__file__))


def act(name: str, value: int) -> int:
    if os.path.exists(os.path.join(HERE, "pause_after_" + name)):
        pause_run(current_run_id())  # stops the run before its next step
    return value


class Smart(Agent):
    method_options = {"report": {"resumable": True}}

    def __init__(self, scale: int) -> None:
        super().__init__()
        self.scale = scale

    def report(self, n: int) -> dict:
        a = step("a", act, "a", n)
        c = step("c", act, "c", a * self.scale)
        return {"report": c}


smart = Smart(scale=7).report
PROGRAM_ENTRIES = ["smart"]
"""

CALL_SMART = """
import json

from openprogram import RunPaused

import prog

try:
    print(json.dumps({"result": prog.smart(n=2)}))
except RunPaused as paused:
    print(json.dumps({"paused": paused.run_id}))
"""


def test_a_direct_call_of_a_listed_bound_method_is_recorded_under_its_entry(
    tmp_path: Path,
) -> None:
    """``smart = Smart(scale=7).report`` listed as ``smart``: calling ``prog.smart(n=2)``
    from Python recorded the run under ``Smart.report`` (not the listed ``smart`` that
    ``openprogram run prog.py:smart`` records), so ``resume`` built a new ``Smart()`` —
    which needs its ``scale``: exit 2, the run stuck. It is recorded as ``smart`` now and
    resumes on the listed instance (scale 7), as a run of ``openprogram run`` does."""
    (tmp_path / "prog.py").write_text(LISTED_METHOD, encoding="utf-8")
    (tmp_path / "script.py").write_text(CALL_SMART, encoding="utf-8")
    (tmp_path / "pause_after_a").touch()
    rid = _call(tmp_path, "-", 0)["paused"]
    code, by_cli = cli_json("run", "prog.py:smart", "--args", '{"n": 2}', "--store", "st",
                            cwd=tmp_path)  # fmt: skip
    assert code == 3, by_cli
    direct, run = sorted(_runs(tmp_path), key=lambda r: r["run_id"] != rid)
    assert direct["run_id"] == rid
    assert (direct["entry"], direct["function"]) == ("prog:smart", "Smart.report"), direct
    assert run["entry"].endswith("prog.py:smart") and run["function"] == "Smart.report", run
    table = cli("runs", "--store", "st", cwd=tmp_path).stdout
    rows = [re.split(r"\s{2,}", line.strip()) for line in table.splitlines()]
    assert [dict(zip(rows[0], row, strict=True))["ENTRY"] for row in rows[1:]] == [
        "smart",
        "smart",
    ], table
    (tmp_path / "pause_after_a").unlink()
    code, resumed = cli_json("resume", rid, "--store", "st", cwd=tmp_path)
    assert code == 0 and resumed["result"] == {"report": 14}, resumed
