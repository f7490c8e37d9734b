"""Nesting as deep as Python allows is analysed; deeper is Python's own syntax error, in
``openprogram-lint`` and ``openprogram run`` alike (real subprocesses). A Program with
180 nested lists compiled, but lint reported "OP001 file is too deeply nested to analyse
(recursion limit)" and run failed with "the determinism check failed internally:
RecursionError"; 201 brackets read "too deeply nested to analyse (more than 400 levels)"
in lint, "too many nested parentheses" in run."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_programs import cli
from cli_programs import lint as lint_cli


def _compiles(depth: int) -> bool:
    try:
        compile("x = " + "[" * depth + "]" * depth, "<depth>", "exec")
    except SyntaxError:
        return False
    return True


def _python_limit() -> int:
    """The most nested brackets this Python compiles."""
    depth = 1
    while _compiles(depth + 1):
        depth += 1
    return depth


LIMIT = _python_limit()


def _program(depth: int) -> str:
    return (
        "import time\n"
        "from openprogram.durable import resumable\n"
        "\n"
        f"TABLE = {'[' * depth}{']' * depth}\n"
        "\n"
        "\n"
        "@resumable\n"
        "def main() -> float:\n"
        "    return time.time()\n"
        "\n"
        "\n"
        'PROGRAM_ENTRIES = ["main"]\n'
    )


def _lint_and_run(tmp_path: Path, depth: int) -> tuple[str, str]:
    (tmp_path / "prog.py").write_text(_program(depth), encoding="utf-8")
    lint = lint_cli("prog.py", cwd=tmp_path)
    assert lint.returncode == 1, (lint.stdout, lint.stderr)
    run = cli("run", "prog.py:main", "--store", "st", cwd=tmp_path)
    assert run.returncode == 2, (run.stdout, run.stderr)
    return lint.stdout, run.stderr


@pytest.mark.parametrize("depth", [LIMIT * 9 // 10, LIMIT - 1, LIMIT], ids=["90%", "-1", "limit"])
def test_nesting_python_compiles_is_analysed(tmp_path: Path, depth: int) -> None:
    assert LIMIT >= 180  # the reported file: 180 nested lists
    lint, run = _lint_and_run(tmp_path, depth)
    finding = "prog.py:9:12: OP205 non-deterministic call time.time() in resumable function 'main'"
    assert finding in lint and "OP001" not in lint, lint
    assert finding in run and "RecursionError" not in run, run


def test_nesting_python_refuses_is_its_syntax_error(tmp_path: Path) -> None:
    assert not _compiles(LIMIT + 1)
    lint, run = _lint_and_run(tmp_path, LIMIT + 1)
    column = len("TABLE = ") + LIMIT + 1
    assert f"prog.py:4:{column}: OP001 file does not parse: too many nested parentheses" in lint
    assert "prog.py:4: syntax error: too many nested parentheses" in run
