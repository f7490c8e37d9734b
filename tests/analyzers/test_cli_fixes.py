"""``openprogram-lint --fix`` keeps files intact, through real subprocesses: encodings,
line endings, no duplicate keys, unsafe guesses only on request, fixes until stable;
file-level suppressions by code; stdin with a coding cookie."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

LINT = shutil.which("openprogram-lint", path=str(Path(sys.executable).parent))

HEAD = "from openprogram import Agent\n\n\nclass A(Agent):\n"


def lint(*args: str, cwd: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    assert LINT is not None
    return subprocess.run(
        [LINT, "--no-cache", *args], cwd=cwd, input=stdin, capture_output=True, timeout=300
    )


def program(options: str, tail: str = "") -> str:
    return (
        f"{HEAD}    method_options = {options}{tail}\n\n"
        "    def f(self) -> str:\n        return 'x'\n"
    )


def test_fix_keeps_a_latin1_file_with_a_coding_cookie_and_crlf(tmp_path: Path) -> None:
    text = "# -*- coding: latin-1 -*-\n" + program(
        '{"f": {"expose": "io"}}', "  # noqa: OP203"
    ).replace("return 'x'", "return 'café'")
    data = text.replace("\n", "\r\n").encode("latin-1")
    (tmp_path / "prog.py").write_bytes(data)
    r = lint("--fix", "prog.py", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    after = (tmp_path / "prog.py").read_bytes()
    assert after == data.replace(b"  # noqa: OP203", b"")  # only the unused suppression
    assert "'café'".encode("latin-1") in after and b"\r\n" in after and b"\n\n" not in after


def test_did_you_mean_is_unsafe_and_needs_unsafe_fixes(tmp_path: Path) -> None:
    src = program('{"f": {"tol": True}}')
    (tmp_path / "prog.py").write_text(src)
    r = lint("prog.py", cwd=tmp_path)
    assert b"OP102 unknown method_options key 'tol'" in r.stdout  # no [*]: not safe
    assert b"1 more with --fix --unsafe-fixes" in r.stdout
    r = lint("--fix", "prog.py", cwd=tmp_path)
    assert r.returncode == 1 and (tmp_path / "prog.py").read_text() == src
    r = lint("--fix", "--unsafe-fixes", "prog.py", cwd=tmp_path)
    assert r.returncode == 0, r.stdout
    assert (tmp_path / "prog.py").read_text() == src.replace('"tol"', '"tool"')


def test_a_fix_never_creates_a_duplicate_dict_key(tmp_path: Path) -> None:
    src = program('{"f": {"expose": "full", "expsoe": "io"}}')
    (tmp_path / "prog.py").write_text(src)
    r = lint("--fix", "--unsafe-fixes", "prog.py", "--format", "json", cwd=tmp_path)
    assert (tmp_path / "prog.py").read_text() == src  # not {"expose": ..., "expose": ...}
    [finding] = json.loads(r.stdout)
    assert finding["code"] == "OP102"
    assert finding["fix"]["description"].startswith("suppress")  # the rename is not offered


def test_fix_repeats_until_nothing_changes(tmp_path: Path) -> None:
    # Two unused codes in one comment: their removals overlap, one pass removes one.
    src = program('{"f": {"expose": "io"}}', "  # noqa: OP203, OP205")
    (tmp_path / "prog.py").write_text(src)
    r = lint("--fix", "prog.py", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "prog.py").read_text() == program('{"f": {"expose": "io"}}')
    assert b"Fixed 2 findings in prog.py" in r.stderr


def test_file_level_noqa_with_codes_suppresses_only_those(tmp_path: Path) -> None:
    src = (
        "# openprogram: noqa: OP404\n"
        + program('{"f": {"expsoe": "io"}}')
        + '\n\ndef main() -> str:\n    return "ok"\n\n\nPROGRAM_ENTRIES = ["main", "main"]\n'
    )
    (tmp_path / "prog.py").write_text(src)
    r = lint("prog.py", "--format", "json", cwd=tmp_path)
    assert [f["code"] for f in json.loads(r.stdout)] == ["OP102"]  # OP404 hidden, not OP102
    (tmp_path / "prog.py").write_text(src.replace("noqa: OP404", "noqa"))
    r = lint("prog.py", "--format", "json", cwd=tmp_path)
    assert json.loads(r.stdout) == []  # a bare file-level noqa hides everything


def test_stdin_honours_a_coding_cookie(tmp_path: Path) -> None:
    text = "# coding: latin-1\n" + program('{"f": {"expsoe": "io"}}', "  # café")
    data = text.encode("latin-1")
    r = lint("-", "--stdin-filename", "p.py", "--format", "json", cwd=tmp_path, stdin=data)
    assert [f["code"] for f in json.loads(r.stdout)] == ["OP102"], r.stdout
    r = lint("-", "--fix", "--unsafe-fixes", cwd=tmp_path, stdin=data)
    assert r.returncode == 0
    assert r.stdout == data.replace(b'"expsoe"', b'"expose"')  # written back in latin-1


def test_removing_an_unused_code_keeps_the_rest_of_the_comment_a_comment(tmp_path: Path) -> None:
    # OP900's safe fix once removed only '# noqa: OP203' and left the explanation as code:
    # syntax errors, or ``LIMIT = 4, see #12`` (silently a tuple).
    src = (
        "from openprogram import step\n\n"
        "RETRIES = 3  # noqa: OP203 kept for the old runner\n"
        "LIMIT = 4  # noqa: OP203, see #12\n"
        'MODE = "a"  # noqa: OP203: legacy\n'
        "A = 1\t# noqa: OP203 # second comment\n"
        "B = 2  # openprogram: ignore[OP203] explanation here\n"
        "C = 3  # noqa: OP203, E501 too long\n"
        "# noqa: OP203\n"
        "D = 4  # noqa: OP203\n"
    )
    (tmp_path / "prog.py").write_text(src)
    r = lint("--fix", "prog.py", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "prog.py").read_text() == (
        "from openprogram import step\n\n"
        "RETRIES = 3  # kept for the old runner\n"
        "LIMIT = 4  # see #12\n"
        'MODE = "a"  # legacy\n'
        "A = 1\t# second comment\n"
        "B = 2  # explanation here\n"
        "C = 3  # noqa: E501 too long\n"
        "D = 4\n"
    )
    assert b"Fixed 8 findings in prog.py" in r.stderr
