"""Programs and helpers for the crash / auto-resume end-to-end tests (real processes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

OPENPROGRAM = str(Path(sys.executable).parent / "openprogram")

PROGRAM = '''
import os
import time

from openprogram import parallel, step, workflow

HERE = os.path.dirname(os.path.abspath(__file__))


def act(name: str, value: int) -> dict:
    """Record a call; block while block_<name> exists."""
    with open(os.path.join(HERE, "calls.log"), "a", encoding="utf-8") as f:
        f.write(name + " " + str(value) + "\\n")
    while os.path.exists(os.path.join(HERE, "block_" + name)):
        time.sleep(0.01)
    return {"name": name, "value": value}


def wait_here(tag: str) -> str:
    """A workflow body that blocks while block_<tag> exists (not a step: not uncertain)."""
    with open(os.path.join(HERE, "calls.log"), "a", encoding="utf-8") as f:
        f.write("wait " + tag + "\\n")
    while os.path.exists(os.path.join(HERE, "block_" + tag)):
        time.sleep(0.01)
    return tag


def effect(i: int) -> int:
    """Side effect of step i (one line in effects.log), then a little work (odd steps)."""
    with open(os.path.join(HERE, "effects.log"), "a", encoding="utf-8") as f:
        f.write(str(i) + "\\n")
    if i % 2:
        time.sleep(0.001)
    return i


def main(n: int = 1) -> dict:
    a = step("a", act, "a", n)
    b = step("slow", act, "slow", a["value"] + 1)
    c = step("c", act, "c", b["value"] + 1)
    return {"total": c["value"]}


def waiting(n: int = 1) -> dict:
    a = step("a", act, "a", n)
    workflow("pause-point", wait_here, "gate")
    c = step("c", act, "c", a["value"] + 1)
    return {"total": c["value"]}


def chain(n: int = 200) -> int:
    total = 0
    for i in range(n):
        total += step("s", effect, i)
    return total


def lane(name: str, count: int) -> int:
    total = 0
    for i in range(count):
        total += step("item", act, name, i)["value"]
    return total


def branches() -> dict:
    return parallel({"left": (lane, ("left", 3), {}), "right": (lane, ("right", 3), {})})


main.__agent_options__ = {"resumable": True}
waiting.__agent_options__ = {"resumable": True}
chain.__agent_options__ = {"resumable": True}
branches.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["main", "waiting", "chain", "branches"]
'''


def write_program(folder: Path) -> Path:
    path = folder / "prog.py"
    path.write_text(PROGRAM, encoding="utf-8")
    return path


def lines(folder: Path, name: str = "calls.log") -> list[str]:
    log = folder / name
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def env() -> dict[str, str]:
    out = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENPROGRAM_", "OPENAI_", "ANTHROPIC_"))
    }
    out["PYTHONUNBUFFERED"] = "1"
    return out


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [OPENPROGRAM, *args], capture_output=True, text=True, timeout=120, cwd=cwd, env=env()
    )


def cli_json(*args: str, cwd: Path) -> tuple[int, Any]:
    proc = cli(*args, "--json", cwd=cwd)
    assert proc.stdout.count("\n") == 1, (proc.stdout, proc.stderr)
    return proc.returncode, json.loads(proc.stdout)


def start(*args: str, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [OPENPROGRAM, *args],
        cwd=cwd,
        env=env(),
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def wait_for_line(folder: Path, line: str, proc: subprocess.Popen[str], limit: float = 60) -> None:
    """Wait (bounded) until ``line`` appears in calls.log; fail if the process exits first."""
    deadline = time.monotonic() + limit
    while line not in lines(folder):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"{line!r} never appeared"
        time.sleep(0.01)


def kill(proc: subprocess.Popen[str]) -> None:
    proc.kill()  # SIGKILL
    proc.communicate()


def only_run_id(folder: Path) -> str:
    code, runs = cli_json("runs", "--store", "st", cwd=folder)
    assert code == 0
    return str(runs[-1]["run_id"])


#: A resumable Program whose one step asks the model (``asker(q)``): which model a run
#: uses (tests of ``submit --model``, ``resume --model``).
ASK = """
from openprogram import step
from openprogram.agentic_programming import llm


def ask(q: str) -> str:
    return llm(q)


def asker(q: str) -> str:
    return step("ask", ask, q)


asker.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["asker"]
"""
