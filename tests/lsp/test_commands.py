"""Command signatures shared with the VS Code extension: ``openprogram.showRuns(uri?,
function?)`` and ``openprogram.resume(run_id, {policy?, rerunUncertain?, queue?}?)``.

Real server over stdio, a real SQLite store, and a fake interpreter subprocess
(``fake_cli.py``) that records the command line the server builds.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
from lsp_harness import as_dict, edit_doc, execute, open_doc, request
from lsp_programs import AGENT_PROGRAM
from lsprotocol import types
from pytest_lsp import LanguageClient

FAKE_CLI = Path(__file__).with_name("fake_cli.py")
STORE = ".op-store"


@pytest.fixture
def fake_interpreter(workspace: Path) -> Path:
    exe = workspace.parent / "fake-python"
    exe.write_text(
        f"#!{sys.executable}\nimport runpy, sys\nsys.argv[0] = {str(FAKE_CLI)!r}\n"
        f"runpy.run_path({str(FAKE_CLI)!r}, run_name='__main__')\n"
    )
    exe.chmod(0o755)
    return exe


def _add_run(
    workspace: Path,
    program: Path,
    run_id: str,
    qualname: str,
    status: str,
    updated_at: float,
    *,
    step: str | None = None,
) -> None:
    from openprogram.store.runs import open_run_store

    store = workspace / STORE
    store.mkdir(exist_ok=True)
    open_run_store(store).close()  # the real store's tables
    db = sqlite3.connect(store / "openprogram.db")
    with db:
        db.execute(
            "INSERT INTO runs (id, entry, program_path, function_qualname, status, paused_step,"
            " paused_occurrence, pause_reason, created_at, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, ?)",
            (
                run_id,
                f"{program}:{qualname}",
                str(program),
                qualname,
                status,
                step,
                "uncertain" if step else None,
                updated_at,
                updated_at,
            ),
        )
    db.close()


def _configure(client: LanguageClient, fake: Path) -> None:
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"openprogram": {"interpreter": str(fake), "store": STORE}}
        )
    )


def _calls(workspace: Path) -> list[list[str]]:
    path = workspace / STORE / "calls.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def _ids(rows: Any) -> list[str]:
    return [r["run_id"] for r in rows]


async def test_show_runs_with_and_without_function(
    client: LanguageClient, workspace: Path, fake_interpreter: Path, tmp_path: Path
) -> None:
    prog = workspace / "prog.py"
    prog.write_text(AGENT_PROGRAM)
    other = workspace / "pkg" / "other.py"
    other.parent.mkdir()
    other.write_text("def main():\n    return 1\n")
    outside = tmp_path / "outside.py"
    outside.write_text("def main():\n    return 2\n")
    _add_run(workspace, prog, "0a0a0a0a0a0a0a0a", "Reporter.report", "paused", 300.0, step="fetch")
    _add_run(workspace, prog, "0b0b0b0b0b0b0b0b", "summarize", "completed", 100.0)
    _add_run(workspace, other, "0c0c0c0c0c0c0c0c", "main", "failed", 200.0)
    _add_run(workspace, outside, "0f0f0f0f0f0f0f0f", "main", "completed", 400.0)
    _configure(client, fake_interpreter)

    # palette, no document: every run of a Program inside the workspace, newest first
    rows = await execute(client, "openprogram.showRuns")
    assert _ids(rows) == ["0a0a0a0a0a0a0a0a", "0c0c0c0c0c0c0c0c", "0b0b0b0b0b0b0b0b"]
    assert rows[0] == {
        "run_id": "0a0a0a0a0a0a0a0a",
        "function": "Reporter.report",
        "entry": f"{prog}:Reporter.report",
        "status": "paused",
        "paused_step": "fetch",
        "pause_reason": "uncertain",
        "error": None,
        "updated_at": 300.0,
        "resumable": True,
    }
    assert rows[1]["resumable"] is False
    assert any(
        m.message.startswith("Runs of this workspace: 3 (1 resumable)") for m in client.messages
    )
    assert _ids(await execute(client, "openprogram.showRuns", None, None)) == _ids(rows)

    # the current file, every function of it; then one function (the Runs (N) lens)
    uri = prog.as_uri()
    assert _ids(await execute(client, "openprogram.showRuns", uri)) == [
        "0a0a0a0a0a0a0a0a",
        "0b0b0b0b0b0b0b0b",
    ]
    assert _ids(await execute(client, "openprogram.showRuns", uri, None)) == [
        "0a0a0a0a0a0a0a0a",
        "0b0b0b0b0b0b0b0b",
    ]
    assert _ids(await execute(client, "openprogram.showRuns", uri, "Reporter.report")) == [
        "0a0a0a0a0a0a0a0a"
    ]
    # a function name alone: across the workspace (the outside Program is not listed)
    assert _ids(await execute(client, "openprogram.showRuns", None, "main")) == ["0c0c0c0c0c0c0c0c"]
    assert await execute(client, "openprogram.showRuns", other.as_uri(), "nope") == []
    assert any(m.message == "No runs of nope" for m in client.messages)

    # the lens and the command agree
    open_doc(client, uri, AGENT_PROGRAM)
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    runs_lens = [
        lens.command
        for lens in lenses or []
        if lens.command and lens.command.title.startswith("Runs")
    ]
    assert sorted((c.title, c.command, c.arguments) for c in runs_lens) == [
        ("Runs (1)", "openprogram.showRuns", (uri, "Reporter.report")),
        ("Runs (1)", "openprogram.showRuns", (uri, "summarize")),
    ]

    # bad arguments: one-line error, empty result, no crash
    for bad in [(42,), (uri, 7), (uri, "f", "extra")]:
        assert await execute(client, "openprogram.showRuns", *bad) == []
    errors = [m.message for m in client.messages if m.type == types.MessageType.Error]
    assert any("uri must be a string or null" in m for m in errors)
    assert any("function must be a string or null" in m for m in errors)
    assert any("usage: openprogram.showRuns(uri?, function?)" in m for m in errors)
    assert all("\n" not in m for m in errors)


async def test_show_runs_without_a_store(client: LanguageClient, workspace: Path) -> None:
    assert await execute(client, "openprogram.showRuns") == []
    assert any(m.message == "No runs of this workspace" for m in client.messages)


async def test_resume_options_reach_the_cli(
    client: LanguageClient, workspace: Path, fake_interpreter: Path
) -> None:
    prog = workspace / "prog.py"
    prog.write_text(AGENT_PROGRAM)
    _add_run(workspace, prog, "0707070707070707", "Reporter.report", "paused", 100.0, step="fetch")
    _configure(client, fake_interpreter)
    base = ["-m", "openprogram.cli", "resume", "--json"]  # the store in its environment
    run_id = ["--", "0707070707070707"]  # the id after "--": never read as an option

    cases: list[tuple[tuple[Any, ...], list[str]]] = [
        ((), []),
        ((None,), []),
        (({},), []),
        (({"policy": "use_latest"},), ["--policy", "use_latest"]),
        (({"rerunUncertain": True},), ["--rerun-uncertain"]),
        (({"rerunUncertain": False, "policy": None},), []),
        (
            ({"policy": "keep_original", "rerunUncertain": True},),
            ["--policy", "keep_original", "--rerun-uncertain"],
        ),
        (({"queue": "reports"},), ["--queue=reports"]),
        (({"queue": "-x", "rerunUncertain": True},), ["--rerun-uncertain", "--queue=-x"]),
    ]
    for options, extra in cases:
        result = await execute(client, "openprogram.resume", "0707070707070707", *options)
        assert result["status"] == "completed", (options, result)
        assert _calls(workspace)[-1] == base + extra + run_id, options


async def test_resume_rejects_other_option_shapes(
    client: LanguageClient, workspace: Path, fake_interpreter: Path
) -> None:
    _configure(client, fake_interpreter)
    bad: list[tuple[tuple[Any, ...], str]] = [
        (("use_latest", True), "usage: openprogram.resume(run_id, options?)"),
        (("use_latest",), "options must be an object"),
        (({"policy": "newest"},), "unknown policy 'newest'"),
        (({"rerun_uncertain": True},), "unknown option(s) rerun_uncertain"),
        (({"rerunUncertain": "yes"},), "rerunUncertain must be true or false"),
        (({"queue": ""},), "queue must be a queue's name"),
        (({"queue": 3},), "queue must be a queue's name"),
        (({"queue": "a\nb"},), "queue must be a queue's name"),
    ]
    for options, message in bad:
        result = await execute(client, "openprogram.resume", "0707070707070707", *options)
        assert result["status"] == "error" and message in result["error"], (options, result)
    assert _calls(workspace) == []  # nothing was started


async def test_rerun_uncertain_lens_sends_the_options_object(
    client: LanguageClient, workspace: Path, fake_interpreter: Path
) -> None:
    prog = workspace / "prog.py"
    prog.write_text(AGENT_PROGRAM)
    _add_run(workspace, prog, "0909090909090909", "Reporter.report", "paused", 100.0, step="fetch")
    _configure(client, fake_interpreter)
    uri = prog.as_uri()
    open_doc(client, uri, AGENT_PROGRAM)
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    rerun = next(
        lens.command
        for lens in lenses or []
        if lens.command and lens.command.title.startswith("⟳ Re-run uncertain")
    )
    assert rerun.arguments == ("0909090909090909", {"rerunUncertain": True})
    result = await execute(client, rerun.command, *(rerun.arguments or ()))
    assert result["status"] == "completed"
    assert _calls(workspace)[-1][-3:] == ["--rerun-uncertain", "--", "0909090909090909"]


SAVED = """\
from openprogram import step


def fetch(n: int) -> int:
    return n


def build(n: int = 1) -> int:
    return step("fetch", fetch, n)


build.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["build"]
"""


async def test_run_and_resume_refuse_an_unsaved_buffer(
    client: LanguageClient, workspace: Path, fake_interpreter: Path
) -> None:
    """Run executes the file on disk: with a parameter renamed in the editor and not saved,
    the signature describes the saved file and says so, and Run and Resume refuse in one
    clear line instead of running other code than shown; once saved, Run runs."""
    prog = workspace / "prog.py"
    prog.write_text(SAVED)
    _add_run(workspace, prog, "0909090909090909", "build", "paused", 100.0, step="fetch")
    _configure(client, fake_interpreter)
    uri = prog.as_uri()
    open_doc(client, uri, SAVED)
    edited = SAVED.replace(
        'n: int = 1) -> int:\n    return step("fetch", fetch, n)',
        'count: int = 1) -> int:\n    return step("fetch", fetch, count)',
    )
    assert edited != SAVED
    edit_doc(client, uri, edited)
    refusal = "save prog.py first: Run executes the file on disk"

    sig = as_dict(
        await request(client, "openprogram/entrySignature", {"uri": uri, "entry": "build"})
    )
    assert sig["template"] == {"n": 1} and sig["unsaved"] == refusal
    check = as_dict(
        await request(
            client,
            "openprogram/checkEntryArgs",
            {"uri": uri, "entry": "build", "args": json.dumps({"count": 1})},
        )
    )
    assert check == {"problems": [refusal]}
    assert await execute(client, "openprogram.run", uri, "build", {"count": 1}) == {
        "status": "error",
        "error": refusal,
    }
    assert await execute(client, "openprogram.resume", "0909090909090909") == {
        "status": "error",
        "error": "save prog.py first: Resume executes the file on disk",
    }
    assert _calls(workspace) == []  # nothing ran

    # saved: what Run executes is what the editor shows
    prog.write_text(edited)
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    sig = as_dict(
        await request(client, "openprogram/entrySignature", {"uri": uri, "entry": "build"})
    )
    assert sig["template"] == {"count": 1} and "unsaved" not in sig
    await execute(client, "openprogram.run", uri, "build", {"count": 1})
    assert _calls(workspace) == [
        ["-m", "openprogram.cli", "run", "--args", '{"count": 1}', "--json", "--", f"{prog}:build"]
    ]
