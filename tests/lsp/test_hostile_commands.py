"""Commands with hostile arguments (issue 16, items 1 and 2), through a real LSP client.

A run id must have the store's exact shape and goes after ``--``; a run's entry and
keyword arguments are checked against the Program's source before anything is spawned,
so a rejected command never imports the Program (its top-level code does not run).
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lsp_harness import execute, open_doc, wait_for
from lsp_programs import AGENT_PROGRAM
from lsprotocol import types
from pytest_lsp import LanguageClient

from openprogram.contract.runs import is_run_id

FAKE_CLI = Path(__file__).with_name("fake_cli.py")
STORE = ".op-store"
GOOD_ID = "07a7b7c7d7e7f707"


@pytest.fixture
def fake_interpreter(workspace: Path) -> Path:
    exe = workspace.parent / "fake-python"
    exe.write_text(
        f"#!{sys.executable}\nimport runpy, sys\nsys.argv[0] = {str(FAKE_CLI)!r}\n"
        f"runpy.run_path({str(FAKE_CLI)!r}, run_name='__main__')\n"
    )
    exe.chmod(0o755)
    return exe


def _calls(workspace: Path) -> list[list[str]]:
    path = workspace / STORE / "calls.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


HOSTILE_RUN_IDS: list[Any] = [
    "--all-interrupted",
    "-h",
    "--store=/tmp/elsewhere",
    f"-{GOOD_ID[1:]}",
    f"{GOOD_ID} --all-interrupted",
    f"{GOOD_ID}\n",
    GOOD_ID.upper(),
    GOOD_ID[:-1],
    GOOD_ID + "0",
    "../../etc/passwd",
    "",
    "--",
    None,
    42,
    [GOOD_ID],
    {"id": GOOD_ID},
]


async def test_resume_with_hostile_ids_starts_nothing(
    client: LanguageClient, workspace: Path, fake_interpreter: Path
) -> None:
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"openprogram": {"interpreter": str(fake_interpreter), "store": STORE}}
        )
    )
    for run_id in HOSTILE_RUN_IDS:
        result = await execute(client, "openprogram.resume", run_id)
        assert result["status"] == "error", (run_id, result)
        assert "invalid run id" in result["error"], (run_id, result)
    result = await execute(client, "openprogram.resume", GOOD_ID, {"policy": "--all-interrupted"})
    assert result["status"] == "error" and "unknown policy" in result["error"]
    assert _calls(workspace) == []  # nothing was started
    # a well-formed id still works, and goes after "--"
    result = await execute(client, "openprogram.resume", GOOD_ID)
    assert result["status"] == "completed", result
    assert _calls(workspace)[-1][-2:] == ["--", GOOD_ID]


async def test_run_with_hostile_entries_or_arguments_starts_nothing(
    client: LanguageClient, workspace: Path, fake_interpreter: Path
) -> None:
    program = workspace / "prog.py"
    program.write_text(AGENT_PROGRAM)
    uri = program.as_uri()
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"openprogram": {"interpreter": str(fake_interpreter), "store": STORE}}
        )
    )
    cases: list[tuple[tuple[Any, ...], str]] = [
        ((uri, "--all-interrupted"), "invalid entry name"),
        ((uri, "-h"), "invalid entry name"),
        ((uri, "summarize --store=/tmp"), "invalid entry name"),
        ((uri, "os.system"), "'os.system' is not in PROGRAM_ENTRIES"),
        ((uri, "summarize.__globals__"), "'summarize.__globals__' is not in PROGRAM_ENTRIES"),
        ((uri, "reporter.report.__func__"), "invalid entry name"),
        ((uri, "fetch"), "'fetch' is not in PROGRAM_ENTRIES; entries: report, summarize"),
        ((uri, "Reporter"), "'Reporter' is not in PROGRAM_ENTRIES"),
        ((uri, "summarize", {"text": "x", "shell": "rm -rf /"}), "unknown argument 'shell'"),
        ((uri, "summarize", {"--all-interrupted": True}), "unknown argument '--all-interrupted'"),
        ((uri, "summarize", {}), "missing required argument 'text'"),
        # arguments as text are read as the CLI reads --args
        ((uri, "summarize", '{"text": "a", "text": "b"}'), 'gives the key "text" twice'),
        ((uri, "summarize", "[1]"), "got array"),
        ((uri, "summarize", 7), "got integer"),
        ((uri, "reporter.report", {"self": 1, "topic": "x"}), "unknown argument 'self'"),
        ((uri, "summarize", {"text": "x"}, "extra"), "usage: openprogram.run"),
        (("--all-interrupted", "summarize"), "Program file not found"),
        (("-x.py", "summarize"), "Program file not found"),
        ((f"{uri}:summarize", "summarize"), "Program file not found"),
    ]
    for args, message in cases:
        result = await execute(client, "openprogram.run", *args)
        assert result["status"] == "error", (args, result)
        assert message in result["error"], (args, result)
    assert _calls(workspace) == []
    # the entry as written in PROGRAM_ENTRIES and as the CLI names it both run,
    # the program path goes after "--"
    for entry in ("reporter.report", "report"):
        result = await execute(client, "openprogram.run", uri, entry, {"topic": "t"})
        assert result["exit_code"] == 1, result  # the fake CLI "fails" entries it does not know
        assert _calls(workspace)[-1][-2:] == ["--", f"{program}:report"]
    # other commands shrug hostile arguments off and the server keeps answering
    rows = await execute(client, "openprogram.showRuns", "--all-interrupted", "-h")
    assert rows == []
    res = await execute(client, "openprogram.applyFix", "--all", "-h", "--x")
    assert res["applied"] is False
    open_doc(client, uri, AGENT_PROGRAM)
    symbols = await client.text_document_document_symbol_async(
        types.DocumentSymbolParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert symbols


IMPORT_MARKER = """\
from pathlib import Path

Path(__file__).with_name("imported.txt").write_text("top-level code ran")


def greet(name: str, punctuation: str = "!") -> str:
    return "hello " + name + punctuation


def helper() -> str:
    return "not an entry"


PROGRAM_ENTRIES = [greet]
"""


@pytest.mark.lsp_init(options={"store": "store"})
async def test_rejected_runs_never_import_the_program(
    client: LanguageClient, workspace: Path
) -> None:
    """The real CLI in a subprocess: only a valid request imports the module."""
    program = workspace / "greeter.py"
    program.write_text(IMPORT_MARKER)
    marker = workspace / "imported.txt"
    uri = program.as_uri()
    for args in (
        (uri, "helper"),
        (uri, "greeter.greet"),
        (uri, "Path"),
        (uri, "greet", {"name": "x", "colour": "red"}),
        (uri, "greet", {"punctuation": "?"}),
    ):
        result = await execute(client, "openprogram.run", *args)
        assert result["status"] == "error", (args, result)
        assert not marker.exists(), args
    result = await execute(client, "openprogram.run", uri, "greet", {"name": "ada"})
    assert result["status"] == "completed" and result["result"] == "hello ada!", result
    assert is_run_id(result["run_id"])  # the store generates ids the server accepts
    assert marker.exists()  # the check above can fail: a real run imports the module


GATED = """\
import os
import time

from openprogram import step


def first(gate: str) -> str:
    return "a"


def wait_for_gate(gate: str) -> str:
    while not os.path.exists(gate):
        time.sleep(0.05)
    return "b"


def pipeline(gate: str) -> str:
    a = step("first", first, gate)
    b = step("wait", wait_for_gate, gate)
    return a + b


pipeline.__agent_options__ = {"resumable": True}

PROGRAM_ENTRIES = ["pipeline"]
"""


@pytest.mark.slow
@pytest.mark.lsp_init(options={"store": "store"})
async def test_resume_all_interrupted_injection_leaves_runs_alone(
    client: LanguageClient, workspace: Path
) -> None:
    """The reported exploit, with the real CLI: ``resume ["--all-interrupted"]``."""
    program = workspace / "gated.py"
    program.write_text(GATED)
    store = workspace / "store"
    gate = workspace / "gate"
    argv = [sys.executable, "-m", "openprogram.cli", "run", "--args"]
    argv += [json.dumps({"gate": str(gate)}), "--json", "--store", str(store)]
    proc = subprocess.Popen(
        [*argv, "--", f"{program}:pipeline"],
        cwd=workspace,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )

    def status() -> str | None:
        db_path = store / "openprogram.db"
        if not db_path.exists():
            return None
        db = sqlite3.connect(db_path, timeout=1)
        try:
            rows = db.execute("SELECT name, status FROM run_steps").fetchall()
            if ("wait", "dispatched") not in rows:
                return None
            row = db.execute("SELECT status FROM runs").fetchone()
            return str(row[0]) if row else None
        except sqlite3.Error:
            return None
        finally:
            db.close()

    try:
        await wait_for(status, "the run to reach step 'wait'", timeout=60)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
    assert status() == "running"  # interrupted: `resume --all-interrupted` would take it
    for hostile in ("--all-interrupted", "-h", "--all-interrupted=1"):
        result = await execute(client, "openprogram.resume", hostile)
        assert result["status"] == "error" and "invalid run id" in result["error"]
    assert status() == "running"
