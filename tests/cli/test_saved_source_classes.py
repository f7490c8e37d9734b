"""The saved source of a resumable Agent method (``keep_original``) runs as its class body
made it: zero-argument ``super()`` and private ``self.__x()`` names work when a worker
executes a submitted run and when a run is resumed; a resumable method inherited from a
class of a helper module runs, resumes and is submitted; a saved function that reads a
global the module no longer defines says which and how to go on. Real subprocesses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_programs import calls, cli, cli_json, lint

from openprogram.store.runs import read_run_store

ACT = '''
import os

from openprogram import Agent, step

HERE = os.path.dirname(os.path.abspath(__file__))


def act(x: str) -> str:
    """Record a call; fail while fail_<first word of x> exists."""
    with open(os.path.join(HERE, "calls.log"), "a", encoding="utf-8") as f:
        f.write(x + "\\n")
    if os.path.exists(os.path.join(HERE, "fail_" + x.split("-")[0])):
        raise RuntimeError("injected failure in " + x)
    return x
'''

CLASSES = (
    ACT
    + '''

class Base(Agent):
    method_options = {"go": {"resumable": True}, "mangled": {"resumable": True}}

    def go(self, x: str) -> list:
        """Base go."""
        return [step("base", act, "base-" + x)]

    def tail(self, x: str) -> str:
        return "tail-" + x

    def __prefix(self) -> str:
        return "P"

    def mangled(self, x: str) -> list:
        """A private method."""
        a = step("first", act, "first-" + self.__prefix() + x)
        return [a, step("last", act, "last-" + self.__prefix())]


class Child(Base):
    def go(self, x: str) -> list:
        """super() in the entry and in a helper method it calls."""
        mid = super().go(x)
        return [mid, step("last", act, self.tail(x))]

    def tail(self, x: str) -> str:
        return "last-" + super().tail(x) + "-c1"


class Outer:
    class Inner(Base):
        def mangled(self, x: str) -> list:
            """A nested class: its own private name, and super()."""
            return [step("nested", act, "nested-" + self.__tag()), *super().mangled(x)]

        def __tag(self) -> str:
            return "T1"


class CBase(Agent):
    method_options = {"cgo": {"resumable": True}}

    @classmethod
    def cgo(cls, x: str) -> list:
        """Base classmethod."""
        return [step("cbase", act, "cbase-" + x)]


class CChild(CBase):
    @classmethod
    def cgo(cls, x: str) -> list:
        """super() and a private name in a classmethod."""
        return [*super().cgo(x), step("last", act, "last-" + cls.__mark() + "-m1")]

    @classmethod
    def __mark(cls) -> str:
        return "M"


go = Child().go
mangled = Base().mangled
nested = Outer.Inner().mangled
cgo = CChild.cgo
PROGRAM_ENTRIES = ["go", "mangled", "nested", "cgo"]
'''
)

#: Each entry's result for the argument "q", and an edit of code its saved source covers.
EXPECTED = {
    "go": ([["base-q"], "last-tail-q-c1"], ('"-c1"', '"-c2"')),
    "mangled": (["first-Pq", "last-P"], ('return "P"', 'return "Z"')),
    "nested": (["nested-T1", "first-Pq", "last-P"], ('"T1"', '"T2"')),
    "cgo": (["cbase-q", "last-M-m1"], ('"-m1"', '"-m2"')),
}


def _result(store: str, run_id: str) -> tuple[str, object]:
    runs = read_run_store(store)
    assert runs is not None
    with runs:
        record = runs.get_run(run_id)
    assert record is not None
    result = json.loads(record.result) if isinstance(record.result, str) else record.result
    return record.status, (result if record.status == "completed" else record.error)


def test_a_worker_runs_submitted_methods_using_super_and_private_names(
    tmp_path: Path, st: str
) -> None:
    """A worker compiles the saved source on a submitted run's first execution: a method
    using ``super()`` failed at once ("super(): __class__ cell not found ... (saved
    source)") and one calling ``self.__prefix()`` with "'Base' object has no attribute
    '__prefix'"."""
    (tmp_path / "prog.py").write_text(CLASSES, encoding="utf-8")
    ids = {}
    for entry in EXPECTED:
        code, out = cli_json(
            "submit", f"prog.py:{entry}", "--args", '{"x": "q"}', "--queue", "m", "--store", st,
            cwd=tmp_path,
        )  # fmt: skip
        assert code == 0, out
        ids[entry] = str(out["run_id"])
    proc = cli("worker", "--queue", "m", "--store", st, "--exit-when-idle", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    for entry, (expected, _) in EXPECTED.items():
        assert _result(st, ids[entry]) == ("completed", expected), (entry, proc.stderr)


@pytest.mark.parametrize("entry", sorted(EXPECTED))
def test_a_resume_runs_the_saved_methods_using_super_and_private_names(
    tmp_path: Path, entry: str
) -> None:
    """``run`` fails at its step 'last', the file is edited, a plain ``resume``
    (keep_original) runs the saved source: the edit is not seen, ``super()`` and the
    private names resolve as in the class (it failed as the worker did)."""
    prog = tmp_path / "prog.py"
    prog.write_text(CLASSES, encoding="utf-8")
    (tmp_path / "fail_last").touch()
    code, out = cli_json(
        "run", f"prog.py:{entry}", "--args", '{"x": "q"}', "--store", "st", cwd=tmp_path
    )
    assert code == 1 and "injected failure in last" in out["error"], out
    (tmp_path / "fail_last").unlink()
    expected, (old, new) = EXPECTED[entry]
    assert prog.read_text().count(old) == 1
    prog.write_text(prog.read_text().replace(old, new), encoding="utf-8")
    code, again = cli_json("resume", out["run_id"], "--store", "st", cwd=tmp_path)
    assert code == 0 and again["status"] == "completed", again
    assert again["result"] == expected, again
    assert calls(tmp_path)[-1] == calls(tmp_path)[-2]  # only the failed step ran again


BASEBOT = (
    ACT
    + '''
SUFFIX = "-base"


def finish(x: str) -> str:
    return "last-" + x + SUFFIX


class BaseBot(Agent):
    method_options = {"go": {"resumable": True}}

    def go(self, x: str) -> list:
        """Inherited resumable method."""
        return [step("first", act, "first-" + x), step("last", act, finish(x))]
'''
)

INHERITING = '''"""A Program whose resumable entry is a method inherited from a helper module."""
from basebot import BaseBot


class MyBot(BaseBot):
    instructions = "mine"


go = MyBot().go
PROGRAM_ENTRIES = ["go"]
'''


def test_a_resumable_method_inherited_from_a_helper_module_runs_resumes_and_is_submitted(
    tmp_path: Path,
) -> None:
    """``class MyBot(BaseBot)`` with ``BaseBot.go`` resumable in ``basebot.py``: run and
    submit exited 2 with "OP201 resumable function 'BaseBot.go' not found in prog.py".
    It is checked and saved from ``basebot.py``; lint agrees (nothing on either file)."""
    (tmp_path / "basebot.py").write_text(BASEBOT, encoding="utf-8")
    (tmp_path / "prog.py").write_text(INHERITING, encoding="utf-8")
    for name in ("prog.py", "basebot.py"):
        proc = lint(name, cwd=tmp_path)
        assert proc.returncode == 0 and "OP2" not in proc.stdout, proc.stdout
    (tmp_path / "fail_last").touch()
    code, out = cli_json("run", "prog.py:go", "--args", '{"x": "q"}', "--store", "st", cwd=tmp_path)
    assert code == 1 and "injected failure in last-q-base" in out["error"], out
    (tmp_path / "fail_last").unlink()
    basebot = tmp_path / "basebot.py"  # the saved finish() runs on resume, not this edit
    basebot.write_text(basebot.read_text().replace('"last-" + x', '"LAST-" + x'), "utf-8")
    code, again = cli_json("resume", out["run_id"], "--store", "st", cwd=tmp_path)
    assert code == 0 and again["result"] == ["first-q", "last-q-base"], again
    code, sub = cli_json(
        "submit", "prog.py:go", "--args", '{"x": "w"}', "--queue", "b", "--store", "st",
        cwd=tmp_path,
    )  # fmt: skip
    assert code == 0, sub
    proc = cli("worker", "--queue", "b", "--store", "st", "--exit-when-idle", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert _result(str(tmp_path / "st"), str(sub["run_id"])) == (
        "completed",
        ["first-w", "LAST-w-base"],
    )


REMOVED_GLOBAL = (
    ACT
    + """
from openprogram.durable import resumable

PREFIX = "v1"


def tag(x: str) -> str:
    return PREFIX + "-" + x


@resumable
def main() -> list:
    return [step("one", act, tag("one")), step("two", act, "two-" + tag("two"))]


PROGRAM_ENTRIES = ["main"]
"""
)


def test_a_saved_function_reading_a_removed_global_names_it_and_the_way_on(
    tmp_path: Path,
) -> None:
    """keep_original reads module globals as they are now: a global the saved source
    reads that the edit removed fails naming it and ``--policy use_latest``, which
    then runs the current code."""
    prog = tmp_path / "prog.py"
    prog.write_text(REMOVED_GLOBAL, encoding="utf-8")
    (tmp_path / "fail_two").touch()
    code, out = cli_json("run", "prog.py:main", "--store", "st", cwd=tmp_path)
    assert code == 1 and out["status"] == "failed", out
    (tmp_path / "fail_two").unlink()
    edited = prog.read_text().replace('PREFIX = "v1"\n', "").replace("PREFIX + ", '"v1" + ')
    prog.write_text(edited, encoding="utf-8")
    code, again = cli_json("resume", out["run_id"], "--store", "st", cwd=tmp_path)
    assert code == 1 and again["status"] == "failed", again
    assert "NameError: name 'PREFIX' is not defined" in again["error"], again
    assert "reads the global 'PREFIX', which its module no longer defines" in again["error"]
    assert "resume with --policy use_latest" in again["error"], again
    code, latest = cli_json(
        "resume", out["run_id"], "--policy", "use_latest", "--store", "st", cwd=tmp_path
    )
    assert code == 0 and latest["result"] == ["v1-one", "two-v1-two"], latest
