"""The CLI given bad input answers with one line and the documented exit code, never a
traceback: Program files in other encodings, deeply nested values, empty rule
selections, multi-line error messages, NUL bytes, format/option combinations, and
read-only commands on an empty store. Real ``openprogram`` / ``openprogram-lint``
subprocesses."""

from __future__ import annotations

from pathlib import Path

from cli_programs import cli, cli_json

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
