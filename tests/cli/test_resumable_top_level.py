"""``from openprogram import resumable`` is the decorator ``openprogram.durable`` exports
(the analyzer already read it so): a Program written that way lints clean, runs with
``openprogram run`` and, called directly from Python, runs durably (its completed step is
not called again on resume). Real CLI subprocesses, a SQLite store."""

from __future__ import annotations

import json
from pathlib import Path

from cli_programs import cli, lint, python

PROGRAM = """
import os

from openprogram import resumable, step

HERE = os.path.dirname(os.path.abspath(__file__))


def fetch(n: int) -> int:
    with open(os.path.join(HERE, "calls.log"), "a") as f:
        f.write("fetch\\n")
    return n * 2


def finish(x: int) -> int:
    if os.path.exists(os.path.join(HERE, "fail")):
        raise RuntimeError("finish failed")
    return x + 1


@resumable
def main(n: int) -> int:
    return step("finish", finish, step("fetch", fetch, n))


PROGRAM_ENTRIES = ["main"]
"""


def test_from_openprogram_import_resumable(tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(PROGRAM)
    assert lint("prog.py", cwd=tmp_path).returncode == 0
    ran = cli("run", "prog.py:main", "--args", '{"n": 2}', "--store", "st", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip().splitlines()[-1] == "5"

    (tmp_path / "calls.log").unlink()
    (tmp_path / "fail").touch()
    script = tmp_path / "direct.py"
    script.write_text(
        "import json, prog\n"
        "from openprogram import RunPaused\n"
        "try:\n"
        "    print(json.dumps(prog.main(3)))\n"
        "except Exception as exc:\n"
        "    print(json.dumps({'error': type(exc).__name__}))\n"
    )
    first = python("direct.py", cwd=tmp_path, store="direct-st")
    assert json.loads(first.stdout.strip().splitlines()[-1]) == {"error": "RuntimeError"}
    (tmp_path / "fail").unlink()
    runs = json.loads(cli("runs", "--store", "direct-st", "--json", cwd=tmp_path).stdout)
    [failed] = [r["run_id"] for r in runs if r["status"] == "failed"]
    resumed = cli("resume", failed, "--store", "direct-st", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert (tmp_path / "calls.log").read_text() == "fetch\n"  # replayed, not called again
