"""``[tool.openprogram.execution] code_change_policy`` is the project default for runs and
resumes; ``--policy`` overrides it (issue 11, item 11). Real subprocesses, a SQLite store."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from cli_programs import OPENPROGRAM, cli, cli_json, env

from openprogram.durable import wait_run

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


GATED = """
import os
import time

from openprogram import step, workflow

HERE = os.path.dirname(os.path.abspath(__file__))


def act(name: str, value: int) -> int:
    with open(os.path.join(HERE, "calls.log"), "a", encoding="utf-8") as f:
        f.write(name + "\\n")
    if os.path.exists(os.path.join(HERE, "fail_" + name)):
        raise RuntimeError("injected failure in " + name)
    return value


def gate(tag: str) -> str:
    while os.path.exists(os.path.join(HERE, "block_" + tag)):
        time.sleep(0.01)
    return tag


def main(n: int = 1) -> dict:
    a = step("a", act, "a", n)
    workflow("gate", gate, "gate")
    c = step("c", act, "c", a + 1)
    return {"version": 1, "total": c}


main.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["main"]
"""


def _worker(folder: Path, *extra: str) -> subprocess.Popen[str]:
    """``openprogram worker`` on ``folder/st`` with one-second leases (a killed worker's
    run is taken over a second after its last heartbeat)."""
    return subprocess.Popen(
        [OPENPROGRAM, "worker", "--store", "st", "--poll", "0.05", *extra],
        cwd=folder,
        env={**env(), "OPENPROGRAM_LEASE_S": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _interrupted_submitted_run(folder: Path) -> str:
    """A run submitted under the project's default ``keep_original``, whose worker was
    killed (SIGKILL) after step ``a``, while the run waits at its gate; then the Program
    is edited (version 2) and the project default becomes ``use_latest``."""
    _project(folder, None)
    (folder / "prog.py").write_text(GATED, encoding="utf-8")
    (folder / "block_gate").touch()
    sub = cli("submit", "prog.py:main", "--store", "st", cwd=folder)
    assert sub.returncode == 0, sub.stderr
    rid = sub.stdout.strip()
    first = _worker(folder)
    try:
        log = folder / "calls.log"
        while not (log.exists() and "a" in log.read_text(encoding="utf-8").split()):
            assert first.poll() is None, first.communicate()
            time.sleep(0.05)
    finally:
        first.kill()
        first.communicate()
    (folder / "block_gate").unlink()
    _project(folder, "use_latest")  # (it writes PROGRAM: the gated one is written after)
    (folder / "prog.py").write_text(_bump(GATED), encoding="utf-8")
    assert _policy_of(folder, rid) == "keep_original"
    return rid


def test_a_worker_taking_over_an_interrupted_run_applies_the_project_default(
    tmp_path: Path,
) -> None:
    """A worker that took over a run whose worker died applied the run's recorded policy
    (``keep_original``: the saved version 1), where ``openprogram resume`` applies the
    project default first (``use_latest``: version 2). Now the takeover is a resume: the
    same rule (``policy_for_resume``), so both give version 2."""
    rid = _interrupted_submitted_run(tmp_path)
    second = _worker(tmp_path, "--exit-when-idle")
    out, err = second.communicate(timeout=120)
    assert second.returncode == 0, err
    assert f"run {rid} completed" in out, (out, err)
    outcome = wait_run(rid, store=str(tmp_path / "st"))
    assert outcome.result == {"version": 2, "total": 2}, outcome


def test_resume_of_the_same_interrupted_run_applies_the_project_default(tmp_path: Path) -> None:
    """The reference the worker's takeover agrees with: ``resume`` of such a run."""
    rid = _interrupted_submitted_run(tmp_path)
    code, out = cli_json("resume", rid, "--store", "st", cwd=tmp_path)
    assert code == 0 and out["result"] == {"version": 2, "total": 2}, out


def test_a_submitted_run_keeps_the_policy_it_was_submitted_with(tmp_path: Path) -> None:
    """A queued run is not a resume: a worker starting it uses the policy recorded at
    submit (here ``keep_original``: the source saved then), though the project default
    became ``use_latest`` since."""
    _project(tmp_path, None)
    sub = cli("submit", "prog.py:main", "--store", "st", cwd=tmp_path)
    assert sub.returncode == 0, sub.stderr
    rid = sub.stdout.strip()
    source = (tmp_path / "prog.py").read_text(encoding="utf-8")
    _project(tmp_path, "use_latest")
    (tmp_path / "prog.py").write_text(_bump(source), encoding="utf-8")
    worker = _worker(tmp_path, "--exit-when-idle")
    out, err = worker.communicate(timeout=120)
    assert worker.returncode == 0 and f"run {rid} completed" in out, (out, err)
    outcome = wait_run(rid, store=str(tmp_path / "st"))
    assert outcome.result == {"version": 1, "total": 2}, outcome


def test_a_worker_taking_over_with_the_latest_source_adopts_it_as_resume_does(
    tmp_path: Path,
) -> None:
    """A resume that runs the latest source adopts it as the run's saved source, so a
    later ``keep_original`` resume keeps running the code its steps were recorded with; a
    worker's takeover did not: here the worker ran version 2 until step c failed, and the
    next resume under ``keep_original`` ran version 1 again. Now it runs version 2."""
    rid = _interrupted_submitted_run(tmp_path)
    (tmp_path / "fail_c").touch()
    second = _worker(tmp_path, "--exit-when-idle")
    out, err = second.communicate(timeout=120)
    assert second.returncode == 0 and f"run {rid} failed" in out, (out, err)
    (tmp_path / "fail_c").unlink()
    _project(tmp_path, None)  # the project default is keep_original again
    (tmp_path / "prog.py").write_text(_bump(_bump(GATED)), encoding="utf-8")  # version 3
    code, done = cli_json("resume", rid, "--store", "st", cwd=tmp_path)
    assert code == 0 and done["result"] == {"version": 2, "total": 2}, done


MALFORMED = '[project]\nname = "p"\n\n[tool.openprogram.execution]\ncode_change_polcy = "x"\n'


def _status_of(folder: Path, run_id: str) -> dict:
    proc = cli("runs", "--json", "--store", "st", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    (run,) = [r for r in json.loads(proc.stdout) if r["run_id"] == run_id]
    return dict(run)


def test_a_malformed_project_config_leaves_a_taken_over_run_interrupted(tmp_path: Path) -> None:
    """A worker taking over an interrupted run whose project's ``pyproject.toml`` is
    malformed failed the run with the config error, where ``resume`` stops (exit 2)
    before changing it. Now the worker gives the run back, interrupted, says why on
    stderr (the file and the key) and exits 2; once the file is fixed a worker resumes
    it."""
    rid = _interrupted_submitted_run(tmp_path)
    (tmp_path / "pyproject.toml").write_text(MALFORMED, encoding="utf-8")
    resume = cli("resume", rid, "--store", "st", cwd=tmp_path)  # the reference
    assert resume.returncode == 2 and "code_change_polcy" in resume.stderr, resume.stderr
    second = _worker(tmp_path, "--exit-when-idle")
    out, err = second.communicate(timeout=120)
    assert second.returncode == 2, (out, err)
    assert f"run {rid}" not in out, out  # it did not end
    assert str(tmp_path / "pyproject.toml") in err and "'code_change_polcy'" in err, err
    assert f"cannot resume run {rid}" in err and "left interrupted" in err, err
    shown = _status_of(tmp_path, rid)
    assert shown["status"] == "running" and shown["interrupted"], shown
    assert shown["error"] is None, shown
    _project(tmp_path, "use_latest")
    (tmp_path / "prog.py").write_text(_bump(GATED), encoding="utf-8")
    third = _worker(tmp_path, "--exit-when-idle")
    out, err = third.communicate(timeout=120)
    assert third.returncode == 0 and f"run {rid} completed" in out, (out, err)


def test_a_malformed_project_config_leaves_a_submitted_run_queued(tmp_path: Path) -> None:
    """The same for a submitted run a worker would start: it stays queued."""
    _project(tmp_path, None)
    sub = cli("submit", "prog.py:main", "--store", "st", cwd=tmp_path)
    assert sub.returncode == 0, sub.stderr
    rid = sub.stdout.strip()
    invalid = '[project]\nname = "p"\n\n[tool.openprogram.execution\n'  # no closing ]
    (tmp_path / "pyproject.toml").write_text(invalid, encoding="utf-8")
    worker = _worker(tmp_path, "--exit-when-idle")
    out, err = worker.communicate(timeout=120)
    assert worker.returncode == 2 and f"run {rid}" not in out, (out, err)
    assert "pyproject.toml: invalid TOML" in err and f"cannot start run {rid}" in err, err
    assert _status_of(tmp_path, rid)["status"] == "queued"
    _project(tmp_path, None)
    worker = _worker(tmp_path, "--exit-when-idle")
    out, err = worker.communicate(timeout=120)
    assert worker.returncode == 0 and f"run {rid} completed" in out, (out, err)
