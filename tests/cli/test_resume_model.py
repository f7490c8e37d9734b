"""Which model a run executes with: one rule for ``openprogram resume`` and a worker. The
model the run was started or submitted with (``run --model``, ``submit --model``) wins
over the ``OPENPROGRAM_MODEL`` of the process executing it; ``resume --model M`` overrides
it for that resume. ``resume`` used to prefer its shell's ``OPENPROGRAM_MODEL``, so a run
that a worker executed with its submitted model continued on another one. Real CLI and
worker subprocesses on a real SQLite store, a loopback server speaking the OpenAI wire
format (it tells which model each request named)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

from cli_programs import cli, env, write_program

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
from loopback import OpenAIServer
from loopback import openai_server as openai_server
from resume_programs import ASK

OPENPROGRAM = str(Path(sys.executable).parent / "openprogram")


def _cli(
    folder: Path, server: OpenAIServer, *args: str, model: str
) -> subprocess.CompletedProcess[str]:
    """``openprogram ARGS`` in a shell whose ``OPENPROGRAM_MODEL`` is ``model``."""
    environment = {**env(), "OPENAI_BASE_URL": server.base_url, "OPENPROGRAM_MODEL": model}
    return subprocess.run(
        [OPENPROGRAM, *args, "--store", "st"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=folder,
        env=environment,
    )


def _models(server: OpenAIServer) -> list[str]:
    return [r.json["model"] for r in server.requests]


def test_a_worker_and_a_resume_use_the_run_s_submitted_model(
    tmp_path: Path, openai_server: OpenAIServer
) -> None:
    """Submitted with ``--model``, executed by a worker whose own model is another one, the
    run fails at its model call (the server has no reply queued: HTTP 418); the user
    resumes it from a shell with yet another ``OPENPROGRAM_MODEL``: the resume asks the
    submitted model, as the worker did."""
    (tmp_path / "ask.py").write_text(ASK, encoding="utf-8")
    sub = _cli(
        tmp_path,
        openai_server,
        *("submit", "ask.py:asker", "--args", '{"q": "hi"}', "--model", "openai:submitted"),
        model="openai:shell",
    )
    assert sub.returncode == 0, sub.stderr
    run_id = sub.stdout.strip()
    worker = _cli(
        tmp_path,
        openai_server,
        *("worker", "--poll", "0.05", "--exit-when-idle"),
        model="openai:workers-own",
    )
    assert worker.returncode == 0, worker.stderr
    assert f"run {run_id} failed" in worker.stdout, worker.stdout
    assert _models(openai_server) == ["submitted"]

    openai_server.reply_text("hello")
    resumed = _cli(tmp_path, openai_server, "resume", run_id, "--json", model="openai:shell")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert json.loads(resumed.stdout)["result"] == "hello"
    assert _models(openai_server) == ["submitted", "submitted"]


def test_resume_model_overrides_the_run_s_model_for_that_resume(
    tmp_path: Path, openai_server: OpenAIServer
) -> None:
    """``openprogram resume RUN_ID --model M`` is the way to continue a run on another
    model (its shell's ``OPENPROGRAM_MODEL`` is not); a malformed one is one error line
    before anything runs."""
    (tmp_path / "ask.py").write_text(ASK, encoding="utf-8")
    first = _cli(
        tmp_path,
        openai_server,
        *("run", "ask.py:asker", "--args", '{"q": "hi"}', "--model", "openai:started", "--json"),
        model="openai:shell",
    )
    assert first.returncode == 1, first.stdout + first.stderr  # HTTP 418: the run failed
    run_id = json.loads(first.stdout)["run_id"]
    assert _models(openai_server) == ["started"]

    bad = _cli(tmp_path, openai_server, "resume", run_id, "--model", "bogus", model="openai:shell")
    assert bad.returncode == 2, bad.stdout + bad.stderr
    [line] = bad.stderr.splitlines()
    assert line.startswith("openprogram: error: ") and "model string" in line, line
    assert _models(openai_server) == ["started"]

    openai_server.reply_text("hello")
    resumed = _cli(
        tmp_path,
        openai_server,
        *("resume", run_id, "--model", "openai:chosen", "--json"),
        model="openai:shell",
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert json.loads(resumed.stdout)["result"] == "hello"
    assert _models(openai_server) == ["started", "chosen"]


def test_run_refuses_a_malformed_model_before_anything_is_recorded(tmp_path: Path) -> None:
    """``run --model garbage`` was not checked: the run was recorded and executed, and an
    entry that makes no model call even completed. Now it is one error line, exit 2, and
    no store is created (as ``submit`` and ``resume --model`` already did)."""
    write_program(tmp_path)
    for extra in ((), ("--json",)):
        proc = cli(
            *("run", "prog.py:plain", "--args", '{"x": 2}', "--model", "garbage"),
            *("--store", "st", *extra),
            cwd=tmp_path,
        )
        assert proc.returncode == 2, proc.stdout + proc.stderr
        [line] = proc.stderr.splitlines()
        assert line.startswith("openprogram: error: malformed model string 'garbage'"), line
        if extra:
            assert json.loads(proc.stdout)["status"] == "error", proc.stdout
        assert not (tmp_path / "st").exists()  # nothing recorded


def test_resume_refuses_a_run_recorded_with_a_malformed_model(
    tmp_path: Path, openai_server: OpenAIServer
) -> None:
    """A run whose recorded model is malformed (recorded before ``run --model`` was
    checked) is refused by ``resume`` as a malformed ``--model`` is: exit 2, the run's
    record unchanged, no model asked; ``resume --model M`` continues it on a good one."""
    (tmp_path / "ask.py").write_text(ASK, encoding="utf-8")
    first = _cli(
        tmp_path,
        openai_server,
        *("run", "ask.py:asker", "--args", '{"q": "hi"}', "--model", "openai:started", "--json"),
        model="openai:shell",
    )
    assert first.returncode == 1, first.stdout + first.stderr  # HTTP 418: the run failed
    run_id = json.loads(first.stdout)["run_id"]
    db = tmp_path / "st" / "openprogram.db"
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE runs SET model = ? WHERE id = ?", ("garbage", run_id))
    conn.close()

    def record() -> list[tuple[object, ...]]:
        with sqlite3.connect(db) as conn:
            rows = conn.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchall()
        conn.close()
        return rows

    before = record()
    for queue in ((), ("--queue", "q")):  # resumed here, or handed to the workers
        bad = _cli(tmp_path, openai_server, "resume", run_id, *queue, model="openai:shell")
        assert bad.returncode == 2, bad.stdout + bad.stderr
        [line] = bad.stderr.splitlines()
        assert line.startswith(
            f"openprogram: error: the model run {run_id} recorded: malformed model string 'garbage'"
        ), line
        assert line.endswith("give another with --model"), line
        assert record() == before
    assert _models(openai_server) == ["started"]

    openai_server.reply_text("hello")
    resumed = _cli(
        tmp_path,
        openai_server,
        *("resume", run_id, "--model", "openai:chosen", "--json"),
        model="openai:shell",
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert _models(openai_server) == ["started", "chosen"]
