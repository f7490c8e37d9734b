"""Calling a resumable function or method directly from Python runs it durably: a run in
the configured store, its result returned, ``RunPaused`` (run id, step) when it pauses,
resumable with ``openprogram resume`` (issue 11, item 12). Real subprocesses, SQLite."""

from __future__ import annotations

import json
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
        c = step("c", act, "c", a * 10)
        return {"report": c}


if __name__ == "__main__":
    which, n = sys.argv[1], int(sys.argv[2])
    try:
        result = total(n) if which == "function" else Reporter().report(n=n)
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
