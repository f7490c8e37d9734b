"""Multi-root workspaces (issue 14, item 6): every workspace folder is served with its own
resource-scoped settings (pulled per folder with ``scopeUri``) and its own store; folders
added or removed at runtime (``workspace/didChangeWorkspaceFolders``) are picked up without a
restart. Real client over stdio, runs made by the real CLI in subprocesses."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lsp_harness import diags_for, open_doc
from lsp_programs import PAUSER
from lsprotocol import types
from pytest_lsp import LanguageClient

OPENPROGRAM = str(Path(sys.executable).parent / "openprogram")

PROGRAM = """\
import time as t

from openprogram import step


def double(n: int) -> int:
    return n * 2


def pipeline(n: int = 1) -> int:
    return step("double", double, n)


def stamp() -> float:
    return t.time()


pipeline.__agent_options__ = {"resumable": True}
stamp.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["pipeline"]
"""


def run_in(folder: Path, store: str, n: int) -> str:
    """One completed run of ``pipeline`` in ``folder``'s store, through the real CLI."""
    proc = subprocess.run(
        [OPENPROGRAM, "run", "--store", store, "--json", "prog.py:pipeline", "--args", json.dumps({"n": n})],
        cwd=folder, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    out = json.loads(proc.stdout)
    assert out["status"] == "completed", out
    return str(out["run_id"])


async def runs_by_folder(client: LanguageClient) -> dict[str, list[str]]:
    got = await client.protocol.send_request_async("openprogram/runs", {})
    folders = got._asdict()["folders"] if hasattr(got, "_asdict") else got["folders"]
    out: dict[str, list[str]] = {}
    for f in folders:
        f = f._asdict() if hasattr(f, "_asdict") else f
        out[f["name"]] = [
            r._asdict()["id"] if hasattr(r, "_asdict") else r["id"] for r in f["runs"]
        ]
    return out


async def hint_labels(client: LanguageClient, uri: str) -> list[str]:
    res = await client.text_document_inlay_hint_async(
        types.InlayHintParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(types.Position(0, 0), types.Position(30, 0)),
        )
    )
    return [str(h.label) for h in res or []]


async def runs_until(
    client: LanguageClient, done: Any, what: str, tries: int = 200
) -> dict[str, list[str]]:
    """``openprogram/runs`` by folder name, asked again until ``done(answer)`` (settings are
    pulled and folders changed asynchronously by the server)."""
    got: dict[str, list[str]] = {}
    for _ in range(tries):
        got = await runs_by_folder(client)
        if done(got):
            return got
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}: last answer {got}")


def scoped(client: LanguageClient, folder: Path, settings: dict[str, Any]) -> None:
    client.set_configuration({"openprogram": settings}, scope_uri=folder.as_uri())


@pytest.mark.lsp_init(folders=["alpha", "beta"])
async def test_each_folder_has_its_settings_store_runs_and_hints(
    client: LanguageClient, workspace: Path
) -> None:
    alpha, beta, gamma = workspace / "alpha", workspace / "beta", workspace / "gamma"
    # Resource-scoped settings differ per folder, as VS Code answers them per scopeUri.
    scoped(client, alpha, {"lint": {"ignore": ["OP205"]}, "store": "alpha-runs"})
    scoped(client, beta, {"store": "beta-runs"})
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    progs = {}
    for folder in (alpha, beta):
        prog = folder / "prog.py"
        prog.write_text(PROGRAM)
        progs[folder.name] = prog.as_uri()
    alpha_run = run_in(alpha, "alpha-runs", 2)
    beta_run = run_in(beta, "beta-runs", 3)
    got = await runs_until(client, lambda got: got.get("alpha"), "alpha's store setting")
    assert got == {"alpha": [alpha_run], "beta": [beta_run]}

    open_doc(client, progs["alpha"], PROGRAM)
    open_doc(client, progs["beta"], PROGRAM)
    assert await diags_for(client, progs["alpha"], 1) == []  # alpha ignores OP205
    assert [d.code for d in await diags_for(client, progs["beta"], 1)] == ["OP205"]
    # Each folder's hints come from its own store: n=2 -> 4 in alpha, n=3 -> 6 in beta.
    [alpha_hint] = await hint_labels(client, progs["alpha"])
    [beta_hint] = await hint_labels(client, progs["beta"])
    assert alpha_hint.startswith("✓") and alpha_hint.endswith("→ 4")
    assert beta_hint.startswith("✓") and beta_hint.endswith("→ 6")

    # A folder added at runtime is served at once: its default store, its runs.
    gamma.mkdir()
    (gamma / "prog.py").write_text(PROGRAM)
    gamma_run = run_in(gamma, str(gamma / ".openprogram"), 5)
    client.workspace_did_change_workspace_folders(
        types.DidChangeWorkspaceFoldersParams(
            event=types.WorkspaceFoldersChangeEvent(
                added=[types.WorkspaceFolder(uri=gamma.as_uri(), name="gamma")],
                removed=[types.WorkspaceFolder(uri=beta.as_uri(), name="beta")],
            )
        )
    )
    got = await runs_until(client, lambda got: "gamma" in got, "the added folder")
    assert got == {"alpha": [alpha_run], "gamma": [gamma_run]}
    open_doc(client, (gamma / "prog.py").as_uri(), PROGRAM)
    assert [d.code for d in await diags_for(client, (gamma / "prog.py").as_uri(), 1)] == ["OP205"]
    [gamma_hint] = await hint_labels(client, (gamma / "prog.py").as_uri())
    assert gamma_hint.endswith("→ 10")


@pytest.mark.lsp_init(folders=["alpha", "beta"])
async def test_pause_and_resume_on_the_workers_in_the_second_folder(
    client: LanguageClient, workspace: Path
) -> None:
    """A run of the second workspace folder's store (its default ``.openprogram``; the
    first folder has a store setting): Pause Run finds it there, and Resume… on the
    workers queues it in that store (the CLI gets beta's store, not alpha's); a worker
    over beta's store completes it."""
    alpha, beta = workspace / "alpha", workspace / "beta"
    scoped(client, alpha, {"store": "alpha-runs"})
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    (beta / "pauser.py").write_text(PAUSER)
    proc = subprocess.run(
        [OPENPROGRAM, "run", "--json", "pauser.py:pipeline"],
        cwd=beta, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    paused = json.loads(proc.stdout)
    assert paused["status"] == "paused", paused
    rid = paused["run_id"]
    await runs_until(client, lambda got: got.get("beta") == [rid], "beta's store setting")

    got = await client.protocol.send_request_async("openprogram/pauseRun", {"runId": rid})
    assert (got._asdict() if hasattr(got, "_asdict") else got) == {
        "status": "paused", "pause": "paused",
    }  # fmt: skip
    handed = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="openprogram.resume", arguments=[rid, {"queue": "q"}])
    )
    assert (handed["status"], handed["queue"]) == ("queued", "q"), handed
    worker = subprocess.run(
        [OPENPROGRAM, "worker", "--queue", "q", "--exit-when-idle"],
        cwd=beta, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert worker.stdout.splitlines() == [f"run {rid} completed"], worker
    assert not (alpha / "alpha-runs").exists()  # nothing was written to alpha's store
