"""Cancel Run and Pause Run from the editor (``openprogram/cancelRun``,
``openprogram/pauseRun``) of a run that a real ``openprogram run`` process executes
(issue 15): the cancel or pause is only *requested* — the answer says so, and so does the
Runs view — until that process reaches its next step and records ``cancelled`` or
``paused``. On a SQLite store and on PostgreSQL (``pg_dsn``); real client over stdio, the
run's process a real subprocess whose step waits on a file.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from lsp_harness import execute, request, start, stop, wait_for
from pytest_lsp import LanguageClient

OPENPROGRAM = str(Path(sys.executable).parent / "openprogram")

PROGRAM = '''\
import os
import time

from openprogram import step

HERE = os.path.dirname(os.path.abspath(__file__))


def log(line: str) -> None:
    with open(os.path.join(HERE, "steps.log"), "a", encoding="utf-8") as f:
        f.write(line + "\\n")


def wait(n: int) -> int:
    """Blocks while the file ``block`` exists."""
    log(f"wait {n}")
    while os.path.exists(os.path.join(HERE, "block")):
        time.sleep(0.01)
    return n + 1


def after(n: int) -> int:
    log(f"after {n}")
    return n * 10


def gated(n: int = 1) -> int:
    return step("after", after, step("wait", wait, n))


gated.__agent_options__ = {"resumable": True}


def plain(n: int = 1) -> int:
    """Not resumable: it executes no step while it waits, so it has no safe point."""
    return step("after", after, wait(n))


PROGRAM_ENTRIES = ["gated", "plain"]
'''


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The run store the CLI and the server share: a directory, or a PostgreSQL URL."""
    if request.param == "sqlite":
        return str(tmp_path / "store")
    return str(request.getfixturevalue("pg_dsn"))


def steps_log(folder: Path) -> list[str]:
    log = folder / "steps.log"
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


async def listed(client: LanguageClient) -> list[dict[str, Any]]:
    """The runs the Runs view lists (one workspace folder)."""
    [folder] = (await request(client, "openprogram/runs", {}))["folders"]
    assert "error" not in folder, folder
    return list(folder["runs"])


@asynccontextmanager
async def executing(
    tmp_path: Path, store: str, entry: str = "gated"
) -> AsyncIterator[tuple[Path, subprocess.Popen[str], LanguageClient, dict[str, Any]]]:
    """``openprogram run prog.py:gated`` (or ``entry``) in a subprocess, held inside
    'wait' (the file ``block``), and a server over the same store: ``(folder, that
    process, the client, the run as the Runs view lists it)``; the process is ended
    afterwards."""
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "prog.py").write_text(PROGRAM, encoding="utf-8")
    block = folder / "block"
    block.touch()
    owner = subprocess.Popen(
        [OPENPROGRAM, "run", f"prog.py:{entry}", "--store", store, "--json"],
        cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    client = await start([folder], options={"store": store})
    try:
        await wait_for(lambda: steps_log(folder) == ["wait 1"], "step 'wait' started", 60.0)
        runs: list[dict[str, Any]] = []
        for _ in range(400):  # until the server reads the store (a URL is probed first)
            runs = await listed(client)
            if runs:
                break
            await asyncio.sleep(0.05)
        [run] = runs
        yield folder, owner, client, run
    finally:
        block.unlink(missing_ok=True)
        if owner.poll() is None:
            owner.kill()
        owner.communicate()
        await stop(client)


async def test_cancel_of_a_run_another_process_executes_is_requested_until_its_next_step(
    tmp_path: Path, store: str
) -> None:
    async with executing(tmp_path, store) as (folder, owner, client, run):
        assert (run["status"], run["cancelRequested"]) == ("running", False)

        got = await request(client, "openprogram/cancelRun", {"runId": run["id"]})
        assert got == {"status": "running", "cancel": "requested"}
        [shown] = await listed(client)
        assert (shown["id"], shown["status"], shown["cancelRequested"]) == (
            run["id"],
            "running",
            True,
        )
        detail = await request(client, "openprogram/runSteps", {"runId": run["id"]})
        assert (detail["run"]["status"], detail["run"]["cancelRequested"]) == ("running", True)
        assert [(s["label"], s["state"]) for s in detail["steps"]] == [("wait #0", "running")]

        (folder / "block").unlink()  # the step returns; the process stops before its next step
        out, err = owner.communicate(timeout=120)
        assert owner.returncode == 1 and json.loads(out)["status"] == "cancelled", (out, err)
        assert steps_log(folder) == ["wait 1"]
        [shown] = await listed(client)
        assert (shown["status"], shown["cancelRequested"]) == ("cancelled", False)
        again = await request(client, "openprogram/cancelRun", {"runId": run["id"]})
        assert again == {"error": f"run {run['id']} is already cancelled"}


async def test_pause_of_a_run_another_process_executes_is_requested_until_its_next_step(
    tmp_path: Path, store: str
) -> None:
    async with executing(tmp_path, store) as (folder, owner, client, run):
        assert (run["status"], run["pauseRequested"]) == ("running", False)

        got = await request(client, "openprogram/pauseRun", {"runId": run["id"]})
        assert got == {"status": "running", "pause": "requested"}
        [shown] = await listed(client)
        assert (shown["status"], shown["pauseRequested"], shown["cancelRequested"]) == (
            "running",
            True,
            False,
        )

        # the step returns; the process pauses the run before its next step
        (folder / "block").unlink()
        out, err = owner.communicate(timeout=120)
        assert owner.returncode == 3, (out, err)
        assert (json.loads(out)["status"], json.loads(out)["paused_step"]) == ("paused", "after")
        assert steps_log(folder) == ["wait 1"]
        [shown] = await listed(client)
        assert (shown["status"], shown["pauseRequested"], shown["pauseReason"]) == (
            "paused",
            False,
            "requested",
        )
        again = await request(client, "openprogram/pauseRun", {"runId": run["id"]})
        assert again == {"status": "paused", "pause": "paused"}

        # Resume… on the workers: the run is queued, then a worker of that queue ends it
        handed = await execute(client, "openprogram.resume", run["id"], {"queue": "later"})
        assert handed == {
            "run_id": run["id"], "status": "queued", "queue": "later", "exit_code": 0,
        }  # fmt: skip
        [shown] = await listed(client)
        assert (shown["status"], shown["queue"], shown["pauseReason"]) == ("queued", "later", None)
        worker = subprocess.run(
            [OPENPROGRAM, "worker", "--queue", "later", "--exit-when-idle", "--store", store],
            cwd=folder, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert worker.stdout.splitlines() == [f"run {run['id']} completed"], worker
        assert steps_log(folder) == ["wait 1", "after 2"]
        done = await request(client, "openprogram/pauseRun", {"runId": run["id"]})
        assert done == {"error": f"run {run['id']} is completed and cannot be paused"}
        missing = await request(client, "openprogram/pauseRun", {"runId": "0123456789abcdef"})
        assert missing == {"error": "no run '0123456789abcdef' in the workspace stores"}


async def test_cancel_of_a_run_without_a_safe_point_offers_kill_and_kill_ends_it(
    tmp_path: Path, store: str
) -> None:
    """A live run whose entry is not resumable never reads a cancel request: a plain
    Cancel Run is refused, its answer flagged ``canKill`` so the editor may offer to end
    the process; ``kill: true`` (``openprogram cancel --kill``) ends that process and
    records the run cancelled. A ``kill`` that is not a boolean is refused, naming it."""
    async with executing(tmp_path, store, "plain") as (folder, owner, client, run):
        rid = run["id"]
        assert run["status"] == "running"

        refused = await request(client, "openprogram/cancelRun", {"runId": rid})
        assert refused.pop("canKill") is True, refused
        [error] = refused.values()
        assert f"run {rid} cannot be cancelled at a safe point" in error, error
        wrong = await request(client, "openprogram/cancelRun", {"runId": rid, "kill": "yes"})
        assert wrong == {"error": 'openprogram/cancelRun: kill must be true or false, not "yes"'}
        [shown] = await listed(client)
        assert (shown["status"], shown["cancelRequested"]) == ("running", False)
        assert owner.poll() is None

        killed = await request(client, "openprogram/cancelRun", {"runId": rid, "kill": True})
        assert killed == {"status": "cancelled", "cancel": "cancelled"}
        out, err = owner.communicate(timeout=120)  # ended while 'wait' still blocks
        assert owner.returncode == 143 and json.loads(out)["status"] == "cancelled", (out, err)
        assert (folder / "block").exists() and steps_log(folder) == ["wait 1"]
        [shown] = await listed(client)
        assert (shown["id"], shown["status"]) == (rid, "cancelled")
        again = await request(client, "openprogram/cancelRun", {"runId": rid, "kill": True})
        assert again == {"error": f"run {rid} is already cancelled"}
