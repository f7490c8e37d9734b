"""The CLI given bad input answers with one line and the documented exit code, never a
traceback: Program files in other encodings, deeply nested values, empty rule
selections, multi-line error messages, NUL bytes, format/option combinations, and
read-only commands on an empty store. Real ``openprogram`` / ``openprogram-lint``
subprocesses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_programs import cli, cli_json, lint

LATIN1_PROGRAM = b"""# -*- coding: latin-1 -*-
# caf\xe9
from openprogram import step
from openprogram.durable import resumable


def f(x):
    return x


@resumable
def main(x: int) -> str:
    step("f", f, x)
    return "caf\xe9"


PROGRAM_ENTRIES = ["main"]
"""


def test_resumable_entry_in_a_latin1_file_with_a_coding_cookie_runs(tmp_path: Path) -> None:
    (tmp_path / "cookie.py").write_bytes(LATIN1_PROGRAM)
    proc = cli("run", "cookie.py:main", "--args", '{"x": 1}', "--store", "st", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert '"café"' in proc.stdout


def test_resumable_entry_in_a_file_python_cannot_decode_is_one_line_exit_2(
    tmp_path: Path,
) -> None:
    # no coding cookie: the latin-1 byte in the comment on line 2 is not UTF-8 (Python 3.11
    # imports the file; it cannot be read as text)
    source = LATIN1_PROGRAM.replace(b"-*- coding: latin-1 -*-", b"no cookie")
    (tmp_path / "bad.py").write_bytes(source.replace(b'"caf\xe9"', b'"cafe"'))
    proc = cli("run", "bad.py:main", "--args", '{"x": 1}', "--store", "st", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    assert proc.stderr.startswith("openprogram: error: bad.py:2: ")
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    code, out = cli_json("run", "bad.py:main", "--args", '{"x": 1}', "--store", "st", cwd=tmp_path)
    assert code == 2
    assert out["status"] == "error" and out["error"].startswith("bad.py:2: ")


DEEP_PROGRAM = """
from openprogram import step
from openprogram.durable import resumable


def nest(n):
    v = []
    for _ in range(n - 1):
        v = [v]
    return v


def echo(v):
    return len(v)


@resumable
def build(n: int) -> int:
    step("nest", nest, n)
    return n


@resumable
def take(v: list) -> int:
    return step("echo", echo, v)


PROGRAM_ENTRIES = ["build", "take"]
"""


def _nested(levels: int) -> str:
    """``{"v": [[...]]}`` with ``levels`` levels in all (the object counts as one)."""
    return '{"v": ' + "[" * (levels - 1) + "]" * (levels - 1) + "}"


def test_show_format_json_prints_a_value_nested_500_deep_as_valid_json(tmp_path: Path) -> None:
    (tmp_path / "deep.py").write_text(DEEP_PROGRAM, encoding="utf-8")
    code, out = cli_json(
        "run", "deep.py:build", "--args", '{"n": 500}', "--store", "st", cwd=tmp_path
    )
    assert code == 0, out
    proc = cli("show", out["run_id"], "--format", "json", "--store", "st", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-500:]
    shown = json.loads(proc.stdout)
    assert [n["name"] for n in shown["nodes"]] == ["build", "nest"]
    value, levels = shown["nodes"][1]["output"], 1
    while value:
        [value] = value
        levels += 1
    assert levels == 500  # the step's result, exactly


def test_args_nested_deeper_than_the_json_limit_are_refused_and_run_json_prints_one_object(
    tmp_path: Path,
) -> None:
    (tmp_path / "deep.py").write_text(DEEP_PROGRAM, encoding="utf-8")
    code, out = cli_json(
        "run", "deep.py:take", "--args", _nested(100), "--store", "st", cwd=tmp_path
    )
    assert (code, out["status"], out["result"]) == (0, "completed", 1)
    for levels in (101, 500, 988):  # 988: json.loads read it, json.dumps of it crashed
        proc = cli(
            "run",
            "deep.py:take",
            "--args",
            _nested(levels),
            "--store",
            "st",
            "--json",
            cwd=tmp_path,
        )
        assert proc.returncode == 2, proc.stderr[-500:]
        [line] = proc.stdout.splitlines()
        assert json.loads(line)["error"] == (
            "--args cannot be read: it is nested too deeply (more than 100 levels)"
        )
        assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "option", ["--select=", "--select=,", "--select= , ", "--ignore=", "--extend-select=,"]
)
def test_lint_refuses_a_rule_selection_that_names_no_rule(tmp_path: Path, option: str) -> None:
    """``--select ''`` selected nothing and exited 0: a clean report of no check at all."""
    (tmp_path / "prog.py").write_text("def main() -> int:\n    return 1\n", encoding="utf-8")
    proc = lint(option, "prog.py", cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stdout == ""
    assert proc.stderr == (
        "openprogram-lint: command line: empty rule selector: name a rule code or prefix "
        "(OP1), or ALL\n"
    )
    assert lint("--select=OP1,", "prog.py", cwd=tmp_path).returncode == 0  # a trailing comma


def test_a_run_failed_line_stays_one_line_when_the_error_has_newlines(tmp_path: Path) -> None:
    """``run … failed: RuntimeError: first`` was followed by the message's second line raw."""
    (tmp_path / "esc.py").write_text(
        "def plain(x: int) -> int:\n"
        '    raise RuntimeError("first\\r\\nsecond \\x1b[31mred\\nthird")\n\n'
        'PROGRAM_ENTRIES = ["plain"]\n',
        encoding="utf-8",
    )
    proc = cli("run", "esc.py:plain", "--args", '{"x": 1}', "--store", "st", cwd=tmp_path)
    assert proc.returncode == 1
    [line] = proc.stderr.splitlines()
    assert line.endswith(
        r"failed: RuntimeError: first\x0d\nsecond \x1b[31mred\nthird (at esc.py:2 in plain)"
    ), line


def test_a_nul_byte_in_a_program_is_a_syntax_error_naming_its_line(tmp_path: Path) -> None:
    """It read ``nul.py:None: syntax error: ...`` (Python gives no line for a NUL byte)."""
    (tmp_path / "nul.py").write_bytes(
        b'def main(x: int) -> int:\n    return x\0\nPROGRAM_ENTRIES = ["main"]\n'
    )
    (tmp_path / "cookie.py").write_bytes(b'# coding: nothing\nPROGRAM_ENTRIES = ["main"]\n')
    proc = cli("run", "nul.py:main", "--args", '{"x": 1}', "--store", "st", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == (
        "openprogram: error: nul.py:2: syntax error: source code string cannot contain null bytes\n"
    )
    proc = cli("run", "cookie.py:main", "--store", "st", cwd=tmp_path)  # no line: none said
    assert proc.stderr == "openprogram: error: cookie.py: syntax error: unknown encoding: nothing\n"


def test_lint_list_rules_honours_format_json_and_refuses_a_format_it_has_not(
    tmp_path: Path,
) -> None:
    proc = lint("--list-rules", "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rules = json.loads(proc.stdout)
    assert {"code": "OP001", "name": "file-does-not-parse"}.items() <= rules[0].items()
    assert {r["fix"] for r in rules} <= {None, "safe", "unsafe"}
    for args, said in [
        (("--list-rules", "--format", "sarif"), "--list-rules has no --format sarif"),
        (("--statistics", "--format", "sarif", "."), "--statistics has no --format sarif"),
        (("--statistics", "--format", "junit", "."), "--statistics has no --format junit"),
    ]:
        proc = lint(*args, cwd=tmp_path)
        assert (proc.returncode, proc.stdout) == (2, ""), args
        assert proc.stderr.startswith(f"openprogram-lint: {said} "), proc.stderr


@pytest.mark.parametrize("fmt", ["json", "sarif", "junit", "gitlab"])
def test_lint_machine_report_of_a_missing_path_is_not_clean(tmp_path: Path, fmt: str) -> None:
    """It printed an empty, clean report (``[]``) on stdout with exit 2."""
    proc = lint("--format", fmt, "nonexist.py", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == "openprogram-lint: nonexist.py: no such file or directory\n"
    assert "nonexist.py" in proc.stdout and "no such file or directory" in proc.stdout
    if fmt == "json":
        [finding] = json.loads(proc.stdout)
        assert (finding["code"], finding["severity"]) == ("OP001", "error")


@pytest.mark.parametrize("value", ["-1", "-0.5", "nan", "inf"])
def test_lint_refuses_a_file_time_limit_that_is_not_a_duration(tmp_path: Path, value: str) -> None:
    """``--file-time-limit -1`` was accepted (and every file ran without a limit)."""
    (tmp_path / "prog.py").write_text("x = 1\n", encoding="utf-8")
    proc = lint(f"--file-time-limit={value}", "prog.py", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.splitlines()[-1] == (
        "openprogram-lint: error: argument --file-time-limit: must be a number of seconds "
        f"above 0 (0: no limit), got {value!r}"
    )
    assert lint("--file-time-limit=0", "prog.py", cwd=tmp_path).returncode == 0  # no limit


def test_json_error_of_a_broken_store_is_the_one_error_object_for_every_command(
    tmp_path: Path,
) -> None:
    """``runs --json`` prints an array and ``resume --all-interrupted --json`` an object
    of runs; an error is the documented error object, ``run_id`` null without a RUN_ID
    and the RUN_ID as given with one."""
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "openprogram.db").write_bytes(b"not a database\n" * 10)
    for command, run_id in [
        (("runs",), None),
        (("sessions",), None),
        (("resume", "--all-interrupted"), None),
        (("resume", "abcdef12"), "abcdef12"),
        (("cancel", "0123456789abcdef"), "0123456789abcdef"),
    ]:
        code, out = cli_json(*command, "--store", "junk", cwd=tmp_path)
        assert code == 2, command
        assert set(out) == {"run_id", "status", "error"}, command
        assert (out["run_id"], out["status"]) == (run_id, "error"), command
        assert "is not a readable OpenProgram store" in out["error"]


def test_reading_commands_leave_an_empty_store_file_as_it_is(tmp_path: Path) -> None:
    """``sessions --store empt`` turned a 0-byte openprogram.db into a database with the
    schema; ``runs``, ``sessions`` and ``show`` open the store read-only."""
    (tmp_path / "empt").mkdir()
    db = tmp_path / "empt" / "openprogram.db"
    db.write_bytes(b"")
    for command in (["sessions"], ["sessions", "--json"], ["runs"], ["runs", "--json"]):
        proc = cli(*command, "--store", "empt", cwd=tmp_path)
        assert proc.returncode == 0, (command, proc.stderr)
    assert cli("runs", "--json", "--store", "empt", cwd=tmp_path).stdout.strip() == "[]"
    proc = cli("show", "abcdef12", "--store", "empt", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.startswith("openprogram: error: no session ")
    assert db.read_bytes() == b""
    assert sorted(p.name for p in db.parent.iterdir()) == ["openprogram.db"]


@pytest.mark.parametrize(
    ("command", "code"),
    [
        (["openprogram-lint", "--list-rules", "--format", "json"], 1),
        (["openprogram-lint", "--no-cache", "bad.py"], 1),
        (["openprogram", "runs", "--store", "st", "--json"], 0),
    ],
)
def test_a_reader_that_goes_away_gets_no_traceback(
    tmp_path: Path, command: list[str], code: int
) -> None:
    """``openprogram-lint --list-rules --format json | head`` ended in a BrokenPipeError
    traceback. The reader gone, a command stops quietly; the linter's code is 1 (its
    findings were not all read: never a pass)."""
    import subprocess

    from cli_programs import LINT, OPENPROGRAM, env

    (tmp_path / "bad.py").write_text(
        "import random\nfrom openprogram.durable import resumable\n\n\n"
        "@resumable\ndef main() -> float:\n    return random.random()\n"
    )
    exe = {"openprogram-lint": LINT, "openprogram": OPENPROGRAM}[command[0]]
    proc = subprocess.Popen(
        [exe, *command[1:]], cwd=tmp_path, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # before the command writes: its first write finds no reader
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == code, err
    assert "Traceback" not in err and "BrokenPipe" not in err, err
