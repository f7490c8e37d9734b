"""What editors really send: a Program whose path needs percent-encoding in its URI (VS Code
and Neovim send ``file:///tmp/my%20ws/pr%C3%B6g.py``), a client that does not watch files
(Neovim 0.7: a ``pyproject.toml`` changed on disk is only seen when a document is
opened, edited or saved), and a window with no workspace folder. A real client over stdio
(pytest-lsp), runs made by the real server in subprocesses."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lsp_harness import (
    SERVER_CMD,
    as_dict,
    change_range,
    diags_for,
    execute,
    make_runs_client,
    open_doc,
    rec_of,
    request,
    runs_seen,
    start,
    stop,
    wait_for,
)
from lsprotocol import types
from pytest_lsp import LanguageClient

OPENPROGRAM = str(Path(sys.executable).parent / "openprogram")

# OP205 in ``main`` (time.time() as a step's argument) gives each document a finding and a
# quick fix; ``count`` runs
PROGRAM = """\
import time

from openprogram import step


def keep(x: float) -> float:
    return x


def main() -> float:
    return step("keep", keep, time.time())


def count(n: int = 1) -> int:
    return step("inc", inc, n)


def inc(n: int) -> int:
    return n + 1


main.__agent_options__ = {"resumable": True}
count.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["main", "count"]
"""
IGNORE_OP205 = '[tool.openprogram.lint]\nignore = ["OP205"]\n'


def tid(uri: str) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri=uri)


async def lens_commands(client: LanguageClient, uri: str) -> list[types.Command]:
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=tid(uri))
    )
    return [lens.command for lens in lenses or [] if lens.command is not None]


# -- percent-encoded URIs -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("folder", "name"),
    [
        ("my ws", "my prog.py"),  # file:///.../my%20ws/my%20prog.py
        ("wörk", "prög😀.py"),  # non-ASCII: %C3%B6, %F0%9F%98%80
        ("a#b", "q?x %41.py"),  # %23, %3F, %2541: the key must not be parsed again
    ],
)
async def test_a_program_whose_uri_is_percent_encoded_gets_every_feature_and_runs(
    tmp_path: Path, folder: str, name: str
) -> None:
    ws = tmp_path / folder
    ws.mkdir()
    prog = ws / name
    prog.write_text(PROGRAM, encoding="utf-8")
    uri = prog.as_uri()
    assert "%" in uri
    client = await start([ws])
    try:
        open_doc(client, uri, PROGRAM)
        # published on the URI the client opened, exactly
        assert [str(d.code) for d in await diags_for(client, uri, 1)] == ["OP205"]
        symbols = await client.text_document_document_symbol_async(
            types.DocumentSymbolParams(text_document=tid(uri))
        )
        assert {s.name for s in symbols or []} >= {"keep", "main"}
        actions = await client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=tid(uri),
                range=types.Range(types.Position(0, 0), types.Position(15, 0)),
                context=types.CodeActionContext(diagnostics=[]),
            )
        )
        assert any("OP205" in a.title for a in actions or [])
        run = [c for c in await lens_commands(client, uri) if "Run" in c.title]
        assert [list(c.arguments or []) for c in run] == [[uri, "main"], [uri, "count"]]
        result = as_dict(await execute(client, run[1].command, *(run[1].arguments or [])))
        assert result["status"] == "completed", result
        assert "Runs (1)" in [c.title for c in await lens_commands(client, uri)]
        runs = await request(client, "openprogram/runs", {"folder": ws.as_uri()})
        assert [(f["uri"], len(f["runs"])) for f in runs["folders"]] == [(ws.as_uri(), 1)]
        assert {p.uri for p in rec_of(client).published} == {uri}
    finally:
        await stop(client)


async def test_one_document_whatever_spelling_of_its_uri_the_client_sends(
    tmp_path: Path,
) -> None:
    """Clients differ in how they escape (``%C3%B6`` or ``%c3%b6``, ``:`` or ``%3A``): a
    request in another spelling reaches the same document, and what the server sends
    (diagnostics after a settings change, the cleared ones at close) keeps the URI the
    document was opened with."""
    ws = tmp_path / "wörk"
    ws.mkdir()
    prog = ws / "prög.py"
    prog.write_text(PROGRAM, encoding="utf-8")
    opened = prog.as_uri()
    other = opened.replace("%C3%B6", "%c3%b6")
    assert other != opened
    client = await start([ws])
    try:
        open_doc(client, opened, PROGRAM)
        await diags_for(client, opened, 1)
        assert "▶ Run" in [c.title for c in await lens_commands(client, other)]
        before = len(rec_of(client).published)
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"openprogram": {"debounceMs": 50}})
        )
        await wait_for(lambda: len(rec_of(client).published) > before, "diagnostics again")
        client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=tid(other)))
        await wait_for(lambda: not rec_of(client).published[-1].diagnostics, "diagnostics cleared")
        assert {p.uri for p in rec_of(client).published} == {opened}
    finally:
        await stop(client)


async def test_a_windows_drive_letter_uri_is_served(tmp_path: Path) -> None:
    """``file:///c%3A/...`` (VS Code on Windows) names no file here: analysed like an
    unsaved buffer, without a crash, its diagnostics on its own URI."""
    client = await start([tmp_path])
    try:
        uri = "file:///c%3A/Users/me/my%20prog.py"
        open_doc(client, uri, PROGRAM)
        assert [str(d.code) for d in await diags_for(client, uri, 1)] == ["OP205"]
        await lens_commands(client, uri)
        assert not [m for m in client.log_messages if m.type == types.MessageType.Error]
    finally:
        await stop(client)


# -- a client that does not watch files -----------------------------------------------------


async def start_without_watching(folder: Path) -> LanguageClient:
    """A client like Neovim 0.7: no ``workspace/didChangeWatchedFiles``, no pulled settings."""
    client = make_runs_client()
    await client.start_io(*SERVER_CMD, env=dict(os.environ))
    caps = types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(configuration=False),
        text_document=types.TextDocumentClientCapabilities(
            synchronization=types.TextDocumentSyncClientCapabilities(did_save=True),
            publish_diagnostics=types.PublishDiagnosticsClientCapabilities(version_support=True),
        ),
    )
    await client.initialize_session(
        types.InitializeParams(
            capabilities=caps,
            root_uri=folder.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=folder.as_uri(), name=folder.name)],
        )
    )
    return client


async def test_pyproject_changed_on_disk_applies_at_the_next_edit_without_a_file_watcher(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    prog = ws / "sub" / "prog.py"
    prog.write_text(PROGRAM)
    uri = prog.as_uri()
    client = await start_without_watching(ws)
    try:
        open_doc(client, uri, PROGRAM)
        assert [str(d.code) for d in await diags_for(client, uri, 1)] == ["OP205"]
        # the user turns OP205 off in the repository's pyproject.toml (another editor
        # window, a git checkout): the next keystroke is checked with it
        (ws / "pyproject.toml").write_text(IGNORE_OP205)
        v = change_range(client, uri, (0, 0), (0, 0), "#\n")
        assert await diags_for(client, uri, v) == []
        # and on again, closer to the Program: after reopening
        (ws / "sub" / "pyproject.toml").write_text('[tool.openprogram.lint]\nignore = ["OP204"]\n')
        client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=tid(uri)))
        open_doc(client, uri, PROGRAM, version=7)
        assert [str(d.code) for d in await diags_for(client, uri, 7)] == ["OP205"]
        # a change of the file's content, of the same size, at the next save
        (ws / "sub" / "pyproject.toml").write_text('[tool.openprogram.lint]\nignore = ["OP205"]\n')
        client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=tid(uri)))
        await wait_for(
            lambda: not rec_of(client).published[-1].diagnostics, "OP205 off after the save"
        )
        reloads = [
            m for m in client.log_messages if "reloaded [tool.openprogram.lint]" in m.message
        ]
        assert len(reloads) == 3
    finally:
        await stop(client)


# -- no workspace folder --------------------------------------------------------------------


def run_from_terminal(folder: Path) -> None:
    """A run made with ``openprogram run`` in ``folder`` (its ``.openprogram`` store)."""
    (folder / "prog.py").write_text(PROGRAM)
    proc = subprocess.run(
        [OPENPROGRAM, "run", "prog.py:count", "--json"],
        cwd=folder, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert '"completed"' in proc.stdout, proc.stdout + proc.stderr


async def folders_listed(client: LanguageClient) -> list[tuple[str, int]]:
    got: dict[str, Any] = await request(client, "openprogram/runs", {})
    return [(f["name"], len(f["runs"])) for f in got["folders"]]


async def test_no_runs_view_folder_once_the_last_folder_is_removed(tmp_path: Path) -> None:
    """The server's working directory is no workspace folder: its store is not listed (as
    Run refuses: no folder is open)."""
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    run_from_terminal(elsewhere)
    client = await start([project], cwd=elsewhere)
    try:
        assert await folders_listed(client) == [("project", 0)]
        seen = runs_seen(client).runs_changed
        client.workspace_did_change_workspace_folders(
            types.DidChangeWorkspaceFoldersParams(
                event=types.WorkspaceFoldersChangeEvent(
                    added=[],
                    removed=[types.WorkspaceFolder(uri=project.as_uri(), name="project")],
                )
            )
        )
        await wait_for(lambda: runs_seen(client).runs_changed > seen, "openprogram/runsChanged")
        assert await folders_listed(client) == []
        answer = as_dict(await execute(client, "openprogram.run", (project / "x.py").as_uri(), "f"))
        assert "no workspace folder is open" in answer["error"]
        assert await execute(client, "openprogram.showRuns") == []
    finally:
        await stop(client)


async def test_a_window_without_folder_lists_no_runs(tmp_path: Path) -> None:
    """A client started on no folder at all (``rootUri`` null): no store is listed, the
    working directory's neither."""
    run_from_terminal(tmp_path)
    client = make_runs_client()
    await client.start_io(*SERVER_CMD, env=dict(os.environ), cwd=tmp_path)
    await client.initialize_session(
        types.InitializeParams(capabilities=types.ClientCapabilities(), root_uri=None)
    )
    try:
        assert await folders_listed(client) == []
        assert await execute(client, "openprogram.showRuns") == []
    finally:
        await stop(client)


async def test_a_window_without_folder_shows_no_runs_lens_from_the_working_directory(
    tmp_path: Path,
) -> None:
    """No folder open, the server started in a directory whose store has a run of the
    open Program: the Runs view listed no store, but the document's lenses read the
    working directory's store (``Runs (1)`` on ``count``), and so did ``showRuns`` of
    the file. No folder, no store: neither reads it; and no Run lens (Run refuses a file
    outside every folder)."""
    run_from_terminal(tmp_path)
    client = make_runs_client()
    await client.start_io(*SERVER_CMD, env=dict(os.environ), cwd=tmp_path)
    await client.initialize_session(
        types.InitializeParams(capabilities=types.ClientCapabilities(), root_uri=None)
    )
    try:
        uri = (tmp_path / "prog.py").as_uri()
        open_doc(client, uri, PROGRAM)
        titles = [c.title for c in await lens_commands(client, uri)]
        assert titles == [], titles
        assert await folders_listed(client) == []
        assert await execute(client, "openprogram.showRuns", uri) == []
    finally:
        await stop(client)


async def test_a_client_naming_only_its_root_lists_the_roots_runs(tmp_path: Path) -> None:
    """A client with a ``rootUri`` and no workspace folders (older clients) is served on
    its root: its runs are listed under the URI it sent."""
    root = tmp_path / "my root"
    root.mkdir()
    run_from_terminal(root)
    client = make_runs_client()
    await client.start_io(*SERVER_CMD, env=dict(os.environ), cwd=tmp_path)
    await client.initialize_session(
        types.InitializeParams(capabilities=types.ClientCapabilities(), root_uri=root.as_uri())
    )
    try:
        got = await request(client, "openprogram/runs", {})
        assert [(f["name"], f["uri"], len(f["runs"])) for f in got["folders"]] == [
            ("my root", root.as_uri(), 1)
        ]
    finally:
        await stop(client)
