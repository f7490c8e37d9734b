"""The language server's view of runs in a user's real setup (issue: LSP store): a
relative store per workspace folder, runs matched to the right function, approvals,
a cleared store setting, runs started from a terminal, a corrupt store, a removed
folder. Real server over stdio (pytest-lsp), runs made by the real CLI in subprocesses,
a loopback server speaking the OpenAI wire format for the model."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsp_harness import diags_for, edit_doc, open_doc, rec_of, request, start, stop, wait_for
from lsprotocol import types
from pytest_lsp import LanguageClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine"))
from durable_programs import JANITOR
from loopback import OpenAIServer
from loopback import openai_server as openai_server

OPENPROGRAM = str(Path(sys.executable).parent / "openprogram")

PROGRAM = """\
from openprogram import Agent, step


def double(n: int) -> int:
    return n * 2


def main(n: int = 1) -> int:
    return step("double", double, n)


class Bot(Agent):
    method_options = {"main": {"resumable": True}}

    def main(self, n: int = 1) -> int:
        return step("double", double, n)


bot = Bot()
main.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = [main]
"""
# the same Program with the method as its entry (one entry per name)
BOT_PROGRAM = PROGRAM.replace("PROGRAM_ENTRIES = [main]", "PROGRAM_ENTRIES = [bot.main]")


def cli_env(**extra: str) -> dict[str, str]:
    """This environment without any store or model configured, plus ``extra``."""
    out = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENPROGRAM_", "OPENAI_", "ANTHROPIC_"))
    }
    return {**out, "PYTHONUNBUFFERED": "1", **extra}


def cli(folder: Path, *args: str, **env: str) -> dict[str, Any]:
    """``openprogram ARGS --json`` in ``folder`` (a user's terminal); its JSON answer."""
    proc = subprocess.run(
        [OPENPROGRAM, *args, "--json"],
        cwd=folder, capture_output=True, text=True, timeout=120, env=cli_env(**env),
    )  # fmt: skip
    assert proc.stdout.strip(), proc.stderr
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def run_main(folder: Path, store: str, entry: str = "main") -> str:
    out = cli(folder, "run", "--store", store, f"prog.py:{entry}")
    assert out["status"] == "completed", out
    return str(out["run_id"])


async def runs_by_folder(client: LanguageClient) -> dict[str, dict[str, Any]]:
    got = await request(client, "openprogram/runs", {})
    return {f["name"]: f for f in got["folders"]}


async def until(get: Callable[[], Any], done: Callable[[Any], bool], what: str) -> Any:
    """``await get()`` again until ``done(answer)`` (the server applies settings and
    folder changes asynchronously)."""
    got = None
    for _ in range(400):
        got = await get()
        if done(got):
            return got
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}: last answer {got}")


async def lenses(client: LanguageClient, uri: str) -> list[tuple[int, str, list[Any]]]:
    res = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    return [
        (lens.range.start.line, lens.command.title, list(lens.command.arguments or []))
        for lens in res or []
        if lens.command is not None
    ]


def line_of(text: str, line: str) -> int:
    return text.splitlines().index(line)


async def test_a_relative_store_is_resolved_in_each_workspace_folder(tmp_path: Path) -> None:
    """``OPENPROGRAM_STORE=.openprogram-runs`` (and the same ``openprogram.store``
    setting) names a store in each folder, not in the server's working directory: the
    second folder has its own. The CLI resolves it the same way (its working directory)."""
    alpha, beta, elsewhere = tmp_path / "alpha", tmp_path / "beta", tmp_path / "elsewhere"
    for folder in (alpha, beta, elsewhere):
        folder.mkdir()
    for folder in (alpha, beta):
        (folder / "prog.py").write_text(PROGRAM)
    # a user's terminal in each folder: the relative store is the folder's
    alpha_run = run_main(alpha, ".openprogram-runs")
    beta_run = run_main(beta, ".openprogram-runs")
    assert (alpha / ".openprogram-runs" / "openprogram.db").is_file()

    env = {"OPENPROGRAM_STORE": ".openprogram-runs"}
    client = await start([alpha, beta], env=env, cwd=elsewhere)
    try:
        got = await runs_by_folder(client)
        assert [r["id"] for r in got["alpha"]["runs"]] == [alpha_run]
        assert [r["id"] for r in got["beta"]["runs"]] == [beta_run]
        assert got["beta"]["store"] == str(beta / ".openprogram-runs")
        prog = (beta / "prog.py").as_uri()
        open_doc(client, prog, PROGRAM)
        found = await lenses(client, prog)
        assert (
            line_of(PROGRAM, "def main(n: int = 1) -> int:"),
            "Runs (1)",
            [prog, "main"],
        ) in found
    finally:
        await stop(client)
    assert not (elsewhere / ".openprogram-runs").exists()


async def test_runs_of_main_are_not_shown_on_the_method_bot_main(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "prog.py").write_text(PROGRAM)
    run_main(ws, str(ws / ".openprogram"))
    run_main(ws, str(ws / ".openprogram"))
    client = await start([ws])
    try:
        uri = (ws / "prog.py").as_uri()
        open_doc(client, uri, PROGRAM)
        runs = [(line, args) for line, title, args in await lenses(client, uri) if "Runs" in title]
        assert runs == [(line_of(PROGRAM, "def main(n: int = 1) -> int:"), [uri, "main"])]
        shown = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="openprogram.showRuns", arguments=[uri, "Bot.main"])
        )
        assert shown == []
        # and the other way round: a run of Bot.main is not shown on main
        (ws / "prog.py").write_text(BOT_PROGRAM)
        bot_run = run_main(ws, str(ws / ".openprogram"))  # entry "main": Bot.main
        edit_doc(client, uri, BOT_PROGRAM)
        found = await until(
            lambda: lenses(client, uri),
            lambda got: any(t == "Runs (1)" for _, t, _ in got),
            "the lens of Bot.main",
        )
        by_line = {line: title for line, title, _ in found if title.startswith("Runs")}
        assert by_line == {
            line_of(BOT_PROGRAM, "def main(n: int = 1) -> int:"): "Runs (2)",
            line_of(BOT_PROGRAM, "    def main(self, n: int = 1) -> int:"): "Runs (1)",
        }
        shown = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="openprogram.showRuns", arguments=[uri, "Bot.main"])
        )
        assert [row["run_id"] for row in shown] == [bot_run]
    finally:
        await stop(client)


def awaiting_run(ws: Path, server: OpenAIServer, target: str) -> str:
    """A run of ``janitor.clean`` paused awaiting approval of ``delete_file(target)``."""
    (ws / target).write_text("junk")
    server.reply_tool_calls([("call_1", "delete_file", {"path": target})])
    out = cli(
        ws, "run", "janitor.py:clean", "--args", json.dumps({"target": target}),
        "--model", "openai:loop", "--store", str(ws / ".openprogram"),
        OPENAI_BASE_URL=server.base_url,
    )  # fmt: skip
    assert out["status"] == "paused", out
    return str(out["run_id"])


async def test_a_run_awaiting_approval_is_approved_or_denied_from_the_editor(
    tmp_path: Path, openai_server: OpenAIServer
) -> None:
    """Approve / Deny lenses (not Resume, which refuses such a run) run ``openprogram
    approve|deny`` in a subprocess: the approved call runs and the model is asked once
    more (not again for the call); a denial is told to the model."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "janitor.py").write_text(JANITOR)
    first = awaiting_run(ws, openai_server, "junk.txt")
    env = {"OPENAI_BASE_URL": openai_server.base_url, "OPENPROGRAM_STORE": ""}
    client = await start([ws], env=env)
    try:
        uri = (ws / "janitor.py").as_uri()
        open_doc(client, uri, JANITOR)
        clean = line_of(JANITOR, "    def clean(self, target: str) -> dict:")
        found = [(line, title, args) for line, title, args in await lenses(client, uri)]
        assert (clean, '✓ Approve "delete_file"', [first]) in found
        assert (clean, "✗ Deny", [first]) in found
        assert not any(title.startswith("⟳ Resume") for _, title, _ in found)
        [row] = (await runs_by_folder(client))["ws"]["runs"]
        assert (row["awaitingApproval"], row["resumable"]) == (True, False)

        openai_server.reply_text("Removed junk.txt.")
        approved = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="openprogram.approve", arguments=[first])
        )
        assert approved["status"] == "completed", approved
        assert approved["result"] == {"report": "Removed junk.txt."}
        assert not (ws / "junk.txt").exists()
        assert len(openai_server.requests) == 2  # the call's request was not sent again

        second = awaiting_run(ws, openai_server, "keep.txt")
        openai_server.reply_text("Kept it.")
        denied = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="openprogram.deny", arguments=[second])
        )
        assert denied["result"] == {"report": "Kept it."}, denied
        assert (ws / "keep.txt").exists()
        assert "denied by the user" in openai_server.requests[-1].json["messages"][-1]["content"]
        found = await lenses(client, uri)
        assert not any("Approve" in title or "Deny" in title for _, title, _ in found)
    finally:
        await stop(client)


async def test_clearing_the_store_setting_falls_back_to_the_default(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "prog.py").write_text(PROGRAM)
    custom = run_main(ws, str(ws / "custom-runs"))
    default = run_main(ws, str(ws / ".openprogram"))
    client = await start([ws], options={"store": "custom-runs"}, env={"OPENPROGRAM_STORE": ""})
    try:
        got = await runs_by_folder(client)
        assert [r["id"] for r in got["ws"]["runs"]] == [custom]
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"openprogram": {"store": ""}})
        )
        got = await until(
            lambda: runs_by_folder(client),
            lambda got: got["ws"]["store"] == str(ws / ".openprogram"),
            "the default store",
        )
        assert [r["id"] for r in got["ws"]["runs"]] == [default]
    finally:
        await stop(client)


async def test_a_run_started_in_a_terminal_refreshes_the_lenses(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "prog.py").write_text(PROGRAM)
    client = await start([ws], env={"OPENPROGRAM_STORE": ""})
    try:
        uri = (ws / "prog.py").as_uri()
        open_doc(client, uri, PROGRAM)
        await diags_for(client, uri, 1)
        assert not any(t.startswith("Runs") for _, t, _ in await lenses(client, uri))
        before = rec_of(client).lens_refreshes
        run_main(ws, str(ws / ".openprogram"))  # not through the editor
        await wait_for(lambda: rec_of(client).lens_refreshes > before, "a code lens refresh")
        assert ("Runs (1)", [uri, "main"]) in [(t, a) for _, t, a in await lenses(client, uri)]
    finally:
        await stop(client)


async def test_a_corrupt_store_is_said_once_and_not_read_again_until_it_changes(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    store = ws / ".openprogram"
    store.mkdir(parents=True)
    (ws / "prog.py").write_text(PROGRAM)
    (store / "openprogram.db").write_bytes(b"not a database, " * 512)
    client = await start([ws], env={"OPENPROGRAM_STORE": ""})
    try:
        uri = (ws / "prog.py").as_uri()
        open_doc(client, uri, PROGRAM)
        await diags_for(client, uri, 1)
        await lenses(client, uri)
        text = PROGRAM
        for i in range(3):  # typing: diagnostics, lenses
            text += f"\n# edit {i}\n"
            version = edit_doc(client, uri, text)
            await diags_for(client, uri, version)
            await lenses(client, uri)
        folder = (await runs_by_folder(client))["ws"]
        assert folder["runs"] == [] and str(store / "openprogram.db") in folder["error"]
        shown = [m.message for m in client.messages if "run store" in m.message]
        assert len(shown) == 1, shown
        assert str(store / "openprogram.db") in shown[0]
        assert "not a readable OpenProgram store" in shown[0]
        failed = [m for m in client.log_messages if "cannot read the run store" in m.message]
        assert len(failed) == 1, [m.message for m in failed]  # read once, not per keystroke

        (store / "openprogram.db").unlink()  # the user moves it aside; a run makes a new one
        run_main(ws, str(store))
        found = await until(
            lambda: lenses(client, uri),
            lambda got: any(t == "Runs (1)" for _, t, _ in got),
            "the runs of the repaired store",
        )
        assert found
        assert "error" not in (await runs_by_folder(client))["ws"]
    finally:
        await stop(client)


async def test_a_removed_folder_is_no_longer_served(tmp_path: Path) -> None:
    alpha, beta = tmp_path / "alpha", tmp_path / "beta"
    for folder in (alpha, beta):
        folder.mkdir()
        (folder / "prog.py").write_text(PROGRAM)
        run_main(folder, str(folder / ".openprogram"))
    client = await start([alpha, beta], env={"OPENPROGRAM_STORE": ""})
    try:
        uri = (alpha / "prog.py").as_uri()
        open_doc(client, uri, PROGRAM)
        assert any(t == "Runs (1)" for _, t, _ in await lenses(client, uri))
        client.workspace_did_change_workspace_folders(
            types.DidChangeWorkspaceFoldersParams(
                event=types.WorkspaceFoldersChangeEvent(
                    added=[], removed=[types.WorkspaceFolder(uri=alpha.as_uri(), name="alpha")]
                )
            )
        )
        got = await until(
            lambda: runs_by_folder(client), lambda got: "alpha" not in got, "alpha removed"
        )
        assert list(got) == ["beta"]
        found = await lenses(client, uri)
        assert not any(t.startswith("Runs") for _, t, _ in found), found
    finally:
        await stop(client)
