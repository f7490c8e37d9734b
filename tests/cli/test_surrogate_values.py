"""A str holding a lone surrogate (``os.listdir`` of a folder with a file name that is not
UTF-8 gives ``'caf\\udce9.txt'``) is a JSON value like any other: as a step result, a step
input and an entry's ``--args`` it is saved (as a ``\\udce9`` escape), shown, and read
back by a resume as the same str, with the same input hash. Real CLI subprocesses, on
both store backends."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cli_programs import cli, cli_json

PROGRAM = """
import os

from openprogram import step
from openprogram.durable import resumable

HERE = os.path.dirname(os.path.abspath(__file__))


def names(path: str) -> list:
    return sorted(os.listdir(path))


def echo(value, path):
    return value


def gate() -> str:
    if os.path.exists(os.path.join(HERE, "closed")):
        raise RuntimeError("gate closed")
    return "open"


@resumable
def main(path: str) -> dict:
    found = step("list", names, path)
    same = step("echo", echo, found[0], path)  # the surrogate in a step's input
    step("gate", gate)
    return {"found": found, "same": same}


PROGRAM_ENTRIES = ["main"]
"""

NAME = "caf\udce9.txt"  # os.listdir's str of the file name b"caf\xe9.txt"


@pytest.fixture()
def work(tmp_path: Path) -> Path:
    (tmp_path / "prog.py").write_text(PROGRAM, encoding="utf-8")
    folder = tmp_path / "files"
    folder.mkdir()
    with open(bytes(folder) + b"/caf\xe9.txt", "w", encoding="utf-8"):
        pass
    return tmp_path


def _steps_shown(work: Path, run_id: str, st: str) -> list[str]:
    proc = cli("show", run_id, "--store", st, cwd=work)
    assert proc.returncode == 0, proc.stderr
    return [line for line in proc.stdout.splitlines() if "code " in line]


def test_a_step_result_with_a_lone_surrogate_is_saved_and_resumed(work: Path, st: str) -> None:
    (work / "closed").touch()
    args = json.dumps({"path": str(work / "files")})
    code, out = cli_json("run", "prog.py:main", "--args", args, "--store", st, cwd=work)
    assert code == 1 and out["error"].startswith("RuntimeError: gate closed"), out
    run_id = out["run_id"]
    shown = _steps_shown(work, run_id, st)
    assert any("code list [completed]" in line and "caf\\udce9.txt" in line for line in shown)
    assert not any("[running]" in line for line in shown), shown

    (work / "closed").unlink()
    code, out = cli_json("resume", run_id, "--store", st, cwd=work)
    # list and echo replay (echo's input, holding the surrogate, hashes as before)
    assert (code, out["status"]) == (0, "completed"), out
    assert out["result"] == {"found": [NAME], "same": NAME}


def test_args_with_a_lone_surrogate_reach_the_steps(work: Path, st: str) -> None:
    (work / "closed").touch()
    folder = str(work / "files")
    # a path of a folder whose name is not UTF-8, as --args carries it: a \\udce9 escape
    odd = bytes(work / "files") + b"/sub\xe9"
    os.mkdir(odd)
    with open(odd + b"/caf\xe9.txt", "w", encoding="utf-8"):
        pass
    args = json.dumps({"path": folder + "/sub\udce9"})
    assert args.isascii() and "\\udce9" in args
    code, out = cli_json("run", "prog.py:main", "--args", args, "--store", st, cwd=work)
    assert code == 1 and out["error"].startswith("RuntimeError: gate closed"), out
    (work / "closed").unlink()
    code, out = cli_json("resume", out["run_id"], "--store", st, cwd=work)
    assert (code, out["status"]) == (0, "completed"), out
    assert out["result"] == {"found": [NAME], "same": NAME}
