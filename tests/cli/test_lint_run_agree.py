"""``openprogram-lint`` and ``openprogram run`` on the same Program report the same code and
message (SPEC §3: one shared check): a malformed ``__agent_options__`` (OP405, which
``run`` merged unchecked), a ``functools.partial`` or builtin entry (OP403, which lint did
not report) and a decision menu or ``response_format`` given to ``Runtime.exec`` /
``exec_full`` or to an aliased ``decision.make`` (OP306/OP307, which lint skipped)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from cli_programs import OPENPROGRAM, cli_json, env, lint


def run(entry: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [OPENPROGRAM, "run", f"prog.py:{entry}", "--args", '{"q": "x"}', "--store", "st"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={**env(), "OPENPROGRAM_MODEL": "scripted:echo"},
    )


def lint_messages(folder: Path, code: str) -> list[str]:
    """``CODE message`` of each ``code`` finding ``openprogram-lint prog.py`` prints."""
    linted = lint("prog.py", cwd=folder)
    return [ln.split(": ", 1)[1] for ln in linted.stdout.splitlines() if f": {code} " in ln]


def runs_recorded(folder: Path) -> str:
    listed = subprocess.run(
        [OPENPROGRAM, "runs", "--store", "st"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=folder,
        env=env(),
    )
    return listed.stdout.strip()


AGENT_OPTIONS = """\
def build(q: str) -> str:
    return q


build.__agent_options__ = {options}
PROGRAM_ENTRIES = ["build"]
"""


SETATTR_OPTIONS = """\
def build(q: str) -> str:
    return q


setattr(build, "__agent_options__", {options})
PROGRAM_ENTRIES = ["build"]
"""


@pytest.mark.parametrize("program", [AGENT_OPTIONS, SETATTR_OPTIONS])
@pytest.mark.parametrize(
    "options",
    [
        '{"resumable": "yes"}',  # truthy: ran resumable, refused with an OP205 lint never said
        '{"resumeable": True}',  # a typo: ran silently non-resumable
        '"resumable"',  # not a dict: accepted
        '{"expose": "public"}',
    ],
)
def test_malformed_agent_options_refused_by_run_as_lint_reports(
    tmp_path: Path, program: str, options: str
) -> None:
    """``f.__agent_options__ = {...}`` and ``setattr(f, "__agent_options__", {...})``."""
    (tmp_path / "prog.py").write_text(program.format(options=options), encoding="utf-8")
    (said,) = lint_messages(tmp_path, "OP405")
    ran = run("build", tmp_path)
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert ran.stderr.strip() == f"openprogram: error: prog.py: {said}", (ran.stderr, said)
    assert "run " not in runs_recorded(tmp_path)  # nothing recorded


ENTRIES = """\
import functools
from os import getcwd as where


def greet(q: str, greeting: str = "Hello") -> str:
    return f"{{greeting}}, {{q}}"


hola = functools.partial(greet, greeting="Hola")
PROGRAM_ENTRIES = ["greet", "{bad}"]
"""


@pytest.mark.parametrize("bad", ["hola", "where"])
def test_partial_or_builtin_entry_reported_by_lint_as_run_refuses_it(
    tmp_path: Path, bad: str
) -> None:
    (tmp_path / "prog.py").write_text(ENTRIES.format(bad=bad), encoding="utf-8")
    (said,) = lint_messages(tmp_path, "OP403")
    assert said.startswith(f"OP403 entry {bad!r} is a "), said
    ran = run(bad, tmp_path)
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert ran.stderr.strip() == f"openprogram: error: prog.py: {said}", (ran.stderr, said)
    # another entry's problem does not refuse the valid one (lint still reports it)
    ran = run("greet", tmp_path)
    assert ran.returncode == 0 and "Hello, x" in ran.stdout, ran.stdout + ran.stderr


OTHERS_BAD = """\
async def answer(q: str) -> str:
    return q


def _hidden(q: str) -> str:
    return q


def both(q: str) -> str:
    return "both " + q


def twice(q: str) -> str:
    return q


PROGRAM_ENTRIES = ["answer", "both", "missing", "_hidden", "twice", "twice"]
"""


def test_only_the_entry_run_is_refused_for_its_own_entry_finding(tmp_path: Path) -> None:
    """``run prog.py:both`` exited 2 with "OP403 entry 'answer' is an async function": one
    bad entry refused every entry of the module (while an OP212 finding of another
    entry's steps did not). Each entry is refused for its own finding only (OP402-OP404
    here), with lint's message; lint reports them all."""
    (tmp_path / "prog.py").write_text(OTHERS_BAD, encoding="utf-8")
    said = {code: lint_messages(tmp_path, code) for code in ("OP402", "OP403", "OP404")}
    assert len(said["OP403"]) == 2 and len(said["OP402"]) == 1 and len(said["OP404"]) == 1
    ran = run("both", tmp_path)
    assert ran.returncode == 0 and "both x" in ran.stdout, ran.stdout + ran.stderr
    for entry, code in (("answer", "OP403"), ("missing", "OP402"), ("_hidden", "OP403"),
                        ("twice", "OP404")):  # fmt: skip
        ran = run(entry, tmp_path)
        assert ran.returncode == 2, ran.stdout + ran.stderr
        message = ran.stderr.strip().removeprefix("openprogram: error: prog.py: ")
        assert message in said[code] and f"entry {entry!r}" in message, (entry, message)


REQUESTS = """\
from openprogram import Runtime, create_runtime, decision

rt = Runtime("scripted:echo")


def exec_format(q: str) -> object:
    return rt.exec(q, response_format={"age": int})


def exec_full_format(q: str) -> object:
    return create_runtime().exec_full(q, response_format={"age": int})


def exec_menu(q: str) -> object:
    return rt.exec(q, choices=["refund", "refund"])


def aliased_make(q: str) -> object:
    pick = decision.make
    return pick(q, ["refund", "refund"], runtime=rt)


def annotated(q: str, runtime: Runtime = rt) -> object:
    return runtime.exec(q, choices=["refund", "refund"])


PROGRAM_ENTRIES = ["exec_format", "exec_full_format", "exec_menu", "aliased_make", "annotated"]
"""


def test_runtime_requests_and_aliased_decision_linted_as_run_refuses_them(
    tmp_path: Path,
) -> None:
    (tmp_path / "prog.py").write_text(REQUESTS, encoding="utf-8")
    linted = lint("prog.py", cwd=tmp_path)
    by_line = {
        int(ln.split(":")[1]): ln.split(": ", 1)[1]
        for ln in linted.stdout.splitlines()
        if ln.startswith("prog.py:")
    }
    expected = {
        "exec_format": (7, "OP307"),
        "exec_full_format": (11, "OP307"),
        "exec_menu": (15, "OP306"),
        "aliased_make": (20, "OP306"),
        "annotated": (24, "OP306"),
    }
    assert sorted(by_line) == sorted(line for line, _ in expected.values()), linted.stdout
    for entry, (line, code) in expected.items():
        said = by_line[line]
        assert said.startswith(code + " "), said
        ran = run(entry, tmp_path)
        assert ran.returncode == 1, ran.stdout + ran.stderr
        (failed,) = [ln for ln in ran.stderr.splitlines() if " failed: " in ln]
        reason = failed.split("Violation: ", 1)[1]
        # the runtime adds where in the menu or format the problem is: "(in ...)"
        assert reason.split(" (in ", 1)[0] == said, (entry, reason, said)


CONSTANTS = """\
from openprogram import Runtime, decision, llm

rt = Runtime("scripted:echo")
AGE = {"age": int}
MENU = ["refund", "escalate", "refund"]


def fmt(q: str) -> object:
    return llm(q, response_format=AGE)


def menu(q: str) -> object:
    return decision.make(q, MENU, runtime=rt)


def exec_menu(q: str) -> object:
    return rt.exec(q, choices=MENU)


def shadowed(q: str) -> object:
    MENU = ["refund", "escalate"]
    return rt.exec(q, choices=MENU)


PROGRAM_ENTRIES = ["fmt", "menu", "exec_menu", "shadowed"]
"""


def test_menu_and_format_in_module_constants_linted_as_run_refuses_them(
    tmp_path: Path,
) -> None:
    """A ``response_format`` or menu held in a module constant is checked where it is
    written, once, with the message the runtime refuses each call with."""
    (tmp_path / "prog.py").write_text(CONSTANTS, encoding="utf-8")
    linted = lint("prog.py", cwd=tmp_path)
    by_line = {
        int(ln.split(":")[1]): ln.split(": ", 1)[1]
        for ln in linted.stdout.splitlines()
        if ln.startswith("prog.py:")
    }
    assert sorted(by_line) == [4, 5], linted.stdout
    assert by_line[4].startswith("OP307 "), by_line
    assert by_line[5].startswith("OP306 "), by_line
    for entry, line in (("fmt", 4), ("menu", 5), ("exec_menu", 5)):
        ran = run(entry, tmp_path)
        assert ran.returncode == 1, ran.stdout + ran.stderr
        (failed,) = [ln for ln in ran.stderr.splitlines() if " failed: " in ln]
        reason = failed.split("Violation: ", 1)[1]
        assert reason.split(" (in ", 1)[0] == by_line[line], (entry, reason)
    shadowed = run("shadowed", tmp_path)  # its local menu is fine (the echo model is no decider)
    assert "OP306" not in shadowed.stderr, shadowed.stderr


STEPS_IN_METHODS = """\
import os

from openprogram import step

HERE = os.path.dirname(os.path.abspath(__file__))


def act(name: str) -> str:
    if os.path.exists(os.path.join(HERE, "fail_" + name)):
        raise RuntimeError("injected failure in " + name)
    return name


class Source:
    def gather(self, q: str) -> str:
        return step("fetch", act, q)


def main(q: str) -> str:
    a = Source().gather("a")
    return step("write", act, a + "b")


main.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["main"]
"""


def test_op209_follows_steps_in_methods_as_resume_does(tmp_path: Path) -> None:
    """A step called in a method of an instance (``Source().gather(q)``) is part of the
    step sequence a paused run resumes, for ``openprogram-lint --store`` (OP209) as for
    ``openprogram resume``: renaming the step after it is reported at the rename, and the
    unchanged source is no broken run."""
    prog = tmp_path / "prog.py"
    prog.write_text(STEPS_IN_METHODS, encoding="utf-8")
    (tmp_path / "fail_ab").touch()
    code, failed = cli_json(
        "run", "prog.py:main", "--args", '{"q": "x"}', "--policy", "use_latest",
        "--store", "st", cwd=tmp_path,
    )  # fmt: skip
    assert code == 1 and failed["status"] == "failed", failed
    prog.write_text(STEPS_IN_METHODS.replace('step("write"', 'step("publish"'), encoding="utf-8")
    code, paused = cli_json("resume", failed["run_id"], "--store", "st", cwd=tmp_path)
    assert code == 3 and paused["paused_step"] == "write", paused
    assert "step 'publish'" in paused["error"] and "recorded step 'write'" in paused["error"]
    linted = lint("--store", "st", "prog.py", cwd=tmp_path)
    assert linted.stdout.splitlines()[:-1] == [
        "prog.py:21:12: OP209 step 'publish' replaces step 'write' recorded for 'main': "
        "this edit breaks 1 unfinished run"
    ], linted.stdout
    prog.write_text(STEPS_IN_METHODS, encoding="utf-8")
    (tmp_path / "fail_ab").unlink()
    linted = lint("--store", "st", "prog.py", cwd=tmp_path)
    assert linted.returncode == 0, linted.stdout
    code, done = cli_json("resume", failed["run_id"], "--store", "st", cwd=tmp_path)
    assert code == 0 and done == {"run_id": failed["run_id"], "status": "completed", "result": "ab"}
