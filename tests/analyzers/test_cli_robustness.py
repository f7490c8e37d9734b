"""``openprogram-lint`` on hostile input, through real subprocesses: deep nesting, a worker
that really crashes, a file over the time limit, valid Python libcst rejects."""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

LINT = shutil.which("openprogram-lint", path=str(Path(sys.executable).parent))

BAD = (
    "from openprogram import Agent\n\n\nclass A(Agent):\n"
    '    method_options = {"f": {"expsoe": "io"}}\n\n'
    "    def f(self) -> str:\n        return 'x'\n"
)


def lint(
    *args: str, cwd: Path, stack_kb: int | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    def small_stack() -> None:  # a real native crash, in every process of the run
        if stack_kb is not None:
            resource.setrlimit(resource.RLIMIT_STACK, (stack_kb * 1024, stack_kb * 1024))

    assert LINT is not None
    return subprocess.run(
        [LINT, "--no-cache", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        input=stdin,
        timeout=300,
        preexec_fn=small_stack if stack_kb else None,
    )


def deep_program(depth: int) -> str:
    return "from openprogram import step\n\nx = " + "(" * depth + "1" + ")" * depth + "\n"


def test_two_thousand_parentheses_is_op001_not_a_segfault(tmp_path: Path) -> None:
    (tmp_path / "deep.py").write_text(deep_program(2000))
    r = lint("deep.py", "--format", "json", cwd=tmp_path)
    assert r.returncode == 1, r.stderr  # was -11 (SIGSEGV, exit 139 in a shell)
    [finding] = json.loads(r.stdout)
    assert finding["code"] == "OP001"
    assert finding["message"] == "file does not parse: too many nested parentheses"
    assert finding["line"] == 3


@pytest.mark.parametrize(
    "body",
    [
        "x = " + "lambda: " * 2000 + "y\n",  # libcst segfaulted at once
        "x = " + " + ".join(f"a{i}" for i in range(8000)) + "\n",  # 138 s, then SIGSEGV
        "x = " + " and ".join(f"a{i}" for i in range(3000)) + "\n",  # one node in ast
    ],
    ids=["lambdas", "sum", "and-chain"],
)
def test_deep_expressions_are_refused_quickly(tmp_path: Path, body: str) -> None:
    (tmp_path / "deep.py").write_text("from openprogram import step\n\n" + body)
    r = lint("deep.py", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert "OP001 file is too deeply nested to analyse" in r.stdout


def test_a_crashed_worker_costs_only_its_file(tmp_path: Path) -> None:
    # 390 nested lambdas pass the depth limit but overflow a 512 KiB C stack inside
    # libcst: the worker analysing that file really dies with SIGSEGV.
    (tmp_path / "crash.py").write_text(
        "from openprogram import step\n\nx = " + "lambda: " * 390 + "y\n"
    )
    for i in range(30):  # over the parallel threshold: several workers
        (tmp_path / f"bad{i:02}.py").write_text(BAD)
    r = lint(".", cwd=tmp_path, stack_kb=512)
    assert r.returncode == 2, r.stdout + r.stderr  # an internal error happened
    assert "crash.py: internal error: the analysis process was killed by SIGSEGV" in r.stderr
    assert r.stdout.count("OP102") == 30  # every other file's findings survive
    # a small run (one worker, no pool) too
    r = lint("crash.py", "bad00.py", cwd=tmp_path, stack_kb=512)
    assert r.returncode == 2
    assert r.stdout.count("OP102") == 1


def test_a_file_over_the_time_limit_is_a_finding_not_a_hang(tmp_path: Path) -> None:
    lines = "".join(f"    step('s{i}', f, {i})\n" for i in range(40000))
    (tmp_path / "big.py").write_text(f"from openprogram import step\n\n\ndef main():\n{lines}")
    (tmp_path / "bad.py").write_text(BAD)
    r = lint("big.py", "bad.py", "--file-time-limit", "2", "--format", "json", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    by_file = {f["path"]: f for f in json.loads(r.stdout)}
    assert by_file["bad.py"]["code"] == "OP102"
    assert by_file["big.py"]["code"] == "OP001"
    assert "time limit of 2 s" in by_file["big.py"]["message"]


def test_valid_python_libcst_rejects_is_info_not_a_parse_error(tmp_path: Path) -> None:
    src = "from openprogram import step\n\n(pars): bool = True\n"
    (tmp_path / "annotated.py").write_text(src)
    r = lint("annotated.py", "--format", "json", cwd=tmp_path)
    [finding] = json.loads(r.stdout)
    assert finding["code"] == "OP001"
    assert finding["severity"] == "info"
    assert finding["message"].startswith("cannot analyse this valid Python")
    assert "does not parse" not in finding["message"]


def test_invalid_python_is_located_by_pythons_parser(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("from openprogram import step\n\ndef f(:\n    pass\n")
    r = lint("broken.py", cwd=tmp_path)
    assert r.returncode == 1
    assert "broken.py:3:7: OP001 file does not parse: invalid syntax" in r.stdout


def test_too_deep_is_importable_for_the_server() -> None:
    from openprogram_analyzers.guard import too_deep

    assert too_deep(deep_program(2000))
    assert not too_deep(deep_program(50))
    assert not too_deep("def f(:\n")  # a syntax error is not "too deep"
    # the guard never imports libcst
    r = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from openprogram_analyzers.guard import too_deep; "
            "too_deep('x = 1'); print('libcst' in sys.modules)",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert r.stdout.strip() == "False"


def test_a_utf8_bom_is_not_a_syntax_error(tmp_path: Path) -> None:
    bad = BAD.encode()
    (tmp_path / "bom.py").write_bytes(b"\xef\xbb\xbf" + bad)
    r = lint("bom.py", "--fix", "--unsafe-fixes", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "bom.py").read_bytes() == b"\xef\xbb\xbf" + bad.replace(b"expsoe", b"expose")
