"""``[tool.openprogram.execution] code_change_policy`` is the project default for runs and
resumes; ``--policy`` overrides it (issue 11, item 11). Real subprocesses, a SQLite store."""

from __future__ import annotations

import json
from pathlib import Path

from cli_programs import cli, cli_json

PROGRAM = """
import os

from openprogram import step

HERE = os.path.dirname(os.path.abspath(__file__))


def act(name: str, value: int) -> int:
    if os.path.exists(os.path.join(HERE, "fail_" + name)):
        raise RuntimeError("injected failure in " + name)
    return value


def main(n: int = 1) -> dict:
    a = step("a", act, "a", n)
    c = step("c", act, "c", a + 1)
    return {"version": 1, "total": c}


main.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["main"]
"""


def _project(folder: Path, policy: str | None) -> None:
    table = f'[tool.openprogram.execution]\ncode_change_policy = "{policy}"\n' if policy else ""
    (folder / "pyproject.toml").write_text(f'[project]\nname = "p"\n\n{table}', encoding="utf-8")
    (folder / "prog.py").write_text(PROGRAM, encoding="utf-8")


def _bump(source: str) -> str:
    """The Program with its result's version increased by one (a code change)."""
    for old in range(1, 10):
        if f'"version": {old}' in source:
            return source.replace(f'"version": {old}', f'"version": {old + 1}')
    raise AssertionError("no version in the Program")


def _failed_run(folder: Path, *extra: str) -> str:
    (folder / "fail_c").touch()
    code, out = cli_json("run", "prog.py:main", "--store", "st", *extra, cwd=folder)
    assert code == 1 and out["status"] == "failed", out
    (folder / "fail_c").unlink()
    source = (folder / "prog.py").read_text(encoding="utf-8")
    (folder / "prog.py").write_text(_bump(source), "utf-8")
    return str(out["run_id"])


def _policy_of(folder: Path, run_id: str) -> str:
    proc = cli("runs", "--json", "--store", "st", cwd=folder)
    (run,) = [r for r in json.loads(proc.stdout) if r["run_id"] == run_id]
    return str(run["policy"])


def test_project_default_use_latest_applies_to_run_and_resume(tmp_path: Path) -> None:
    _project(tmp_path, "use_latest")
    rid = _failed_run(tmp_path)
    assert _policy_of(tmp_path, rid) == "use_latest"
    code, out = cli_json("resume", rid, "--store", "st", cwd=tmp_path)
    assert code == 0 and out["result"] == {"version": 2, "total": 2}


def test_resume_policy_flag_overrides_the_project_default(tmp_path: Path) -> None:
    _project(tmp_path, "use_latest")
    rid = _failed_run(tmp_path)
    code, out = cli_json("resume", rid, "--policy", "keep_original", "--store", "st", cwd=tmp_path)
    assert code == 0 and out["result"] == {"version": 1, "total": 2}


def test_run_policy_flag_overrides_and_default_is_keep_original(tmp_path: Path) -> None:
    _project(tmp_path, None)  # no execution table: keep_original
    rid = _failed_run(tmp_path)
    assert _policy_of(tmp_path, rid) == "keep_original"
    code, out = cli_json("resume", rid, "--store", "st", cwd=tmp_path)
    assert code == 0 and out["result"] == {"version": 1, "total": 2}
    rid = _failed_run(tmp_path, "--policy", "use_latest")
    assert _policy_of(tmp_path, rid) == "use_latest"
    code, out = cli_json("resume", rid, "--store", "st", cwd=tmp_path)
    assert code == 0 and out["result"] == {"version": 3, "total": 2}


def test_invalid_project_policy_is_a_usage_error_naming_the_file(tmp_path: Path) -> None:
    _project(tmp_path, "newest")
    proc = cli("run", "prog.py:main", "--store", "st", cwd=tmp_path)
    assert proc.returncode == 2
    assert "pyproject.toml: [tool.openprogram.execution] code_change_policy" in proc.stderr
    assert "'keep_original', 'use_latest'" in proc.stderr and "'newest'" in proc.stderr
