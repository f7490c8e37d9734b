"""What the determinism check says of standard-library modules, the same in
``openprogram-lint`` and in the pre-run check of ``openprogram run``:

- calling a function of an imported module whose name looks like a list method
  (``os.remove(p)``, ``sys.path.insert(0, d)``, ``os.environ.pop("X")``) does not make
  the module a mutated global (OP203): every use of ``os`` / ``sys`` was refused; a list
  the module mutates and a module attribute it reassigns still are;
- file-system and database I/O in the orchestration body (``os.listdir``, ``glob.glob``,
  ``sqlite3.connect`` and the connection's ``execute`` / ``commit``) is OP206: it ran;
- ``time.sleep`` (however imported) is no non-deterministic call (OP205): it returns
  nothing, and a resumed run that waits again sees no other value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_programs import cli, lint

HEAD = """import glob
import json
import os
import sqlite3
import sys
import time
import time as t
from time import sleep

from openprogram import step

HERE = os.path.dirname(os.path.abspath(__file__))
"""
TAIL = """

main.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["main"]
"""

ACCEPTED = {
    "os.remove in a step": """
def cleanup(name: str) -> bool:
    path = os.path.join(HERE, name)
    if os.path.exists(path):
        os.remove(path)
        return True
    return False


def main(q: str) -> bool:
    return step("cleanup", cleanup, q)""",
    "sys.path.insert at module level": """
sys.path.insert(0, HERE)


def work(q: str) -> str:
    print("working", q, file=sys.stderr)
    return q.upper()


def main(q: str) -> str:
    return step("work", work, q)""",
    "os.environ changed in a step": """
os.environ["OP_TEST_FLAG"] = "1"


def work(q: str) -> str:
    os.environ.pop("OP_TEST_FLAG", None)
    os.environ.setdefault("OP_TEST_OTHER", q)
    return os.environ["OP_TEST_OTHER"]


def main(q: str) -> str:
    return step("work", work, q)""",
    "time.sleep between steps": """
def main(q: str) -> str:
    time.sleep(0)
    t.sleep(0)
    sleep(0)
    name = os.path.basename(os.path.join("a", q))
    return step("upper", str.upper, name)""",
}


@pytest.mark.parametrize("body", ACCEPTED.values(), ids=ACCEPTED.keys())
def test_lint_and_run_accept(tmp_path: Path, body: str) -> None:
    (tmp_path / "main.py").write_text(HEAD + body + TAIL, encoding="utf-8")
    (tmp_path / "x").touch()
    linted = lint("main.py", cwd=tmp_path)
    assert linted.returncode == 0, linted.stdout + linted.stderr
    ran = cli(
        "run", "main.py:main", "--args", '{"q": "x"}', "--store", "st", "--json", cwd=tmp_path
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert json.loads(ran.stdout)["status"] == "completed"


REFUSED = {
    "a list mutated by a step": (
        """
CACHE: list[str] = []


def keep(q: str) -> int:
    CACHE.append(q)
    return len(CACHE)


def main(q: str) -> int:
    return step("keep", keep, q)""",
        [
            "main.py:18:5: OP203 step dependency 'keep' uses module global 'CACHE', which is "
            "rebound or mutated in this module"
        ],
    ),
    "a module attribute reassigned": (
        """
def patch() -> None:
    json.dumps = repr


def dump(q: str) -> str:
    return json.dumps(q)


def main(q: str) -> str:
    patch()
    return step("dump", dump, q)""",
        [
            "main.py:15:5: OP203 helper 'patch' uses module global 'json', which is rebound or "
            "mutated in this module",
            "main.py:19:12: OP203 step dependency 'dump' uses module global 'json', which is "
            "rebound or mutated in this module",
        ],
    ),
    "file-system and database I/O in the body": (
        """
def main(q: str) -> str:
    names = sorted(os.listdir(HERE)) + glob.glob(os.path.join(HERE, "*.py"))
    con = sqlite3.connect(os.path.join(HERE, "side.db"))
    con.execute("create table if not exists t(x)")
    con.commit()
    return step("upper", str.upper, q + str(len(names)))""",
        [
            "main.py:15:20: OP206 file I/O (os.listdir) directly in resumable function 'main'",
            "main.py:15:40: OP206 file I/O (glob.glob) directly in resumable function 'main'",
            "main.py:16:11: OP206 file I/O (sqlite3.connect) directly in resumable function 'main'",
            "main.py:17:5: OP206 file I/O (con.execute) directly in resumable function 'main'",
            "main.py:18:5: OP206 file I/O (con.commit) directly in resumable function 'main'",
        ],
    ),
}


@pytest.mark.parametrize(("body", "lines"), REFUSED.values(), ids=REFUSED.keys())
def test_lint_and_run_refuse_the_same_lines(tmp_path: Path, body: str, lines: list[str]) -> None:
    (tmp_path / "main.py").write_text(HEAD + body + TAIL, encoding="utf-8")
    linted = lint("main.py", cwd=tmp_path)
    assert linted.returncode == 1, linted.stdout + linted.stderr
    ran = cli("run", "main.py:main", "--args", '{"q": "x"}', "--store", "st", cwd=tmp_path)
    assert ran.returncode == 2, ran.stdout + ran.stderr
    for line in lines:
        assert line in linted.stdout, linted.stdout
        assert line in ran.stderr, ran.stderr
    assert not (tmp_path / "side.db").exists()  # refused before the body ran
    assert cli("runs", "--json", "--store", "st", cwd=tmp_path).stdout.strip() == "[]"
