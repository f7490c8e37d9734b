"""Workspace configuration (issue 13, item 9): ``exclude`` for open documents, multi-root
workspaces (each folder's pyproject.toml, store and interpreter; Run in every folder),
a broken pyproject.toml shown to the user. Real client over stdio, real subprocesses."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from lsp_harness import diags_for, execute, open_doc, wait_for
from lsp_programs import AGENT_PROGRAM
from lsprotocol import types
from pytest_lsp import LanguageClient

FAKE_CLI = Path(__file__).with_name("fake_cli.py")
BAD_EXPOSE = AGENT_PROGRAM.replace('"io"', '"iox"')


@pytest.fixture
def fake_interpreter(workspace: Path) -> Path:
    exe = workspace.parent / "fake-python"
    exe.write_text(
        f"#!{sys.executable}\nimport runpy, sys\nsys.argv[0] = {str(FAKE_CLI)!r}\n"
        f"runpy.run_path({str(FAKE_CLI)!r}, run_name='__main__')\n"
    )
    exe.chmod(0o755)
    return exe


def _reload(client: LanguageClient, pyproject: Path) -> None:
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[types.FileEvent(uri=pyproject.as_uri(), type=types.FileChangeType.Changed)]
        )
    )


async def test_exclude_applies_to_open_documents(client: LanguageClient, workspace: Path) -> None:
    (workspace / "pyproject.toml").write_text('[tool.openprogram.lint]\nexclude = ["generated"]\n')
    _reload(client, workspace / "pyproject.toml")
    (workspace / "generated").mkdir()
    excluded = (workspace / "generated" / "prog.py").as_uri()
    linted = (workspace / "prog.py").as_uri()
    open_doc(client, excluded, BAD_EXPOSE)
    open_doc(client, linted, BAD_EXPOSE)
    assert [d.code for d in await diags_for(client, linted, 1)] == ["OP104"]
    assert await diags_for(client, excluded, 1) == []


async def test_broken_pyproject_is_shown_to_the_user(
    client: LanguageClient, workspace: Path
) -> None:
    pyproject = workspace / "pyproject.toml"
    pyproject.write_text("[tool.openprogram.lint\nselect = 3\n")
    _reload(client, pyproject)
    shown = await wait_for(
        lambda: [m for m in client.messages if "pyproject.toml" in m.message],
        "window/showMessage about pyproject.toml",
    )
    assert shown[0].type == types.MessageType.Error
    assert "[tool.openprogram.lint] ignored" in shown[0].message
    # the documents are still analysed with the defaults
    uri = (workspace / "prog.py").as_uri()
    open_doc(client, uri, BAD_EXPOSE)
    assert [d.code for d in await diags_for(client, uri, 1)] == ["OP104"]


@pytest.mark.lsp_init(folders=["alpha", "beta"])
async def test_multi_root_each_folder_has_its_config_store_and_runs(
    client: LanguageClient, workspace: Path, fake_interpreter: Path
) -> None:
    alpha, beta = workspace / "alpha", workspace / "beta"
    (alpha / "pyproject.toml").write_text('[tool.openprogram.lint]\nignore = ["OP104"]\n')
    (beta / "pyproject.toml").write_text('[tool.openprogram.lint]\nselect = ["OP"]\n')
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"openprogram": {"interpreter": str(fake_interpreter), "store": "st"}}
        )
    )
    _reload(client, alpha / "pyproject.toml")
    progs = {}
    for folder in (alpha, beta):
        prog = folder / "prog.py"
        prog.write_text(BAD_EXPOSE)
        progs[folder.name] = prog
        open_doc(client, prog.as_uri(), BAD_EXPOSE)
    # alpha's pyproject ignores OP104, beta's does not
    await wait_for(lambda: client.diagnostics.get(progs["beta"].as_uri()), "beta's diagnostics")
    assert [d.code for d in await diags_for(client, progs["beta"].as_uri(), 1)] == ["OP104"]
    assert await diags_for(client, progs["alpha"].as_uri(), 1) == []
    # Run works in both folders, each with its own store (relative to the folder)
    for name in ("alpha", "beta"):
        prog = progs[name]
        result = await execute(client, "openprogram.run", prog.as_uri(), "summarize", {"text": "x"})
        assert result["status"] == "completed", (name, result)
        calls = (workspace / name / "st" / "calls.jsonl").read_text().splitlines()  # its store
        argv = json.loads(calls[-1])
        assert argv[-2:] == ["--", f"{prog}:summarize"]
    outside = workspace / "elsewhere.py"
    outside.write_text(AGENT_PROGRAM)
    result = await execute(client, "openprogram.run", outside.as_uri(), "summarize", {"text": "x"})
    assert result["status"] == "error" and "outside every workspace folder" in result["error"]
