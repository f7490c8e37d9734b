"""Code lenses and the run/resume commands (real subprocesses, real SQLite store)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from lsp_harness import execute, open_doc, rec_of, wait_for
from lsp_programs import AGENT_PROGRAM
from lsprotocol import types
from pytest_lsp import LanguageClient

FAKE_CLI = Path(__file__).with_name("fake_cli.py")


@pytest.fixture
def fake_interpreter(workspace: Path) -> Path:
    exe = workspace.parent / "fake-python"
    exe.write_text(
        f"#!{sys.executable}\nimport runpy, sys\nsys.argv[0] = {str(FAKE_CLI)!r}\n"
        f"runpy.run_path({str(FAKE_CLI)!r}, run_name='__main__')\n"
    )
    exe.chmod(0o755)
    return exe


def _store(workspace: Path) -> Path:
    return workspace / ".op-store"


def _paused_run(workspace: Path, program: Path, run_id: str, qualname: str, step: str) -> None:
    from openprogram.store.runs import open_run_store

    store = _store(workspace)
    store.mkdir(exist_ok=True)
    open_run_store(store).close()  # the real store's tables
    db = sqlite3.connect(store / "openprogram.db")
    with db:
        now = time.time()
        db.execute(
            "INSERT INTO runs (id, entry, program_path, function_qualname, status, paused_step,"
            " paused_occurrence, pause_reason, created_at, updated_at)"
            " VALUES (?, ?, ?, ?, 'paused', ?, 1, 'uncertain', ?, ?)",
            (run_id, f"{program}:reporter.report", str(program), qualname, step, now, now),
        )
    db.close()


async def _lenses(client: LanguageClient, uri: str) -> list[types.CodeLens]:
    res = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    return list(res or [])


def _options(fake: Path) -> dict[str, object]:
    return {"interpreter": str(fake), "store": ".op-store"}


async def test_run_lens_executes_entry_in_subprocess(
    client: LanguageClient, workspace: Path, fake_interpreter: Path
) -> None:
    program = workspace / "prog.py"
    program.write_text(AGENT_PROGRAM)
    uri = program.as_uri()
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"openprogram": _options(fake_interpreter)})
    )
    open_doc(client, uri, AGENT_PROGRAM)
    lenses = await _lenses(client, uri)
    runs = [lens for lens in lenses if lens.command and lens.command.title == "▶ Run"]
    assert [lens.command.arguments for lens in runs if lens.command] == [
        (uri, "summarize"),
        (uri, "reporter.report"),
    ]
    # the lens sits on the def of the entry
    assert runs[0].range.start.line == AGENT_PROGRAM.splitlines().index("def summarize(text):")
    assert runs[1].range.start.line == AGENT_PROGRAM.splitlines().index(
        "    def report(self, topic):"
    )

    cmd = runs[0].command
    assert cmd is not None
    before = rec_of(client).lens_refreshes
    result = await execute(client, cmd.command, *(cmd.arguments or ()), {"text": "hi"})
    assert result["status"] == "completed" and result["result"] == "HI"
    # the subprocess got the documented command line (the store in its environment:
    # fake_cli records calls.jsonl in $OPENPROGRAM_STORE)
    calls = [json.loads(x) for x in (_store(workspace) / "calls.jsonl").read_text().splitlines()]
    assert calls[-1] == [
        "-m",
        "openprogram.cli",
        "run",
        "--args",
        '{"text": "hi"}',
        "--json",
        "--",
        f"{program}:summarize",
    ]
    # progress begin / reports from stderr / end, output in the log, result shown
    reports: list[Any] = [r for rs in client.progress_reports.values() for r in rs]
    kinds = [r.kind for r in reports]
    assert kinds[0] == "begin" and kinds[-1] == "end"
    assert [r.message for r in reports if r.kind == "report"] == [
        f"step {i}/3 of summarize" for i in (1, 2, 3)
    ]
    assert any("step 2/3 of summarize" in m.message for m in client.log_messages)
    assert any("completed" in m.message and "HI" in m.message for m in client.messages)
    await wait_for(lambda: rec_of(client).lens_refreshes > before, "code lens refresh")


TYPED_PROGRAM = """\
from openprogram import step


def fetch(x):
    return x


def main(n: int, names: list[str] | None = None) -> int:
    return step("count", fetch, n)


PROGRAM_ENTRIES = ["main"]
"""


async def test_run_checks_argument_types_as_the_cli_does(
    client: LanguageClient, workspace: Path, fake_interpreter: Path
) -> None:
    """▶ Run with arguments that do not fit the entry is refused before the CLI is
    started, with the problem the real ``openprogram run`` reports for the same arguments."""
    program = workspace / "typed.py"
    program.write_text(TYPED_PROGRAM)
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"openprogram": _options(fake_interpreter)})
    )
    cases: list[tuple[dict[str, Any], str]] = [
        ({"n": "3"}, "argument 'n' expects int, got string \"3\""),
        ({"n": True}, "argument 'n' expects int, got boolean true"),
        (
            {"n": 1, "names": ["a", 2]},
            "argument 'names' expects list[str] | None, got integer 2 at names[1]",
        ),
        ({"n": 1, "nmes": []}, "unknown argument 'nmes' (did you mean 'names'?)"),
        ({}, "missing required argument 'n' (int)"),
    ]
    openprogram = str(Path(sys.executable).parent / "openprogram")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENPROGRAM_")}
    for args, problem in cases:
        # one message, word for word: the signature as the def spells it, then the problem
        message = f"main(n: int, names: list[str] | None = None) -> int: {problem}"
        res = await execute(client, "openprogram.run", program.as_uri(), "main", args)
        assert res == {"status": "error", "error": f"typed.py: {message}"}
        cli = subprocess.run(
            [openprogram, "run", f"{program}:main", "--args", json.dumps(args), "--store", "st"],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=workspace,
            env=env,
        )
        assert cli.returncode == 2, cli.stderr
        assert cli.stderr.strip() == f"openprogram: error: {message}"
    assert not (_store(workspace) / "calls.jsonl").exists()  # nothing was started
    # arguments that fit (None where the annotation allows it) start the CLI
    res = await execute(
        client, "openprogram.run", program.as_uri(), "main", {"n": 1, "names": None}
    )
    assert res["exit_code"] == 1, res  # the fake CLI "fails" entries it does not know
    assert (_store(workspace) / "calls.jsonl").exists()


async def test_run_errors_are_results_not_crashes(
    client: LanguageClient, workspace: Path, fake_interpreter: Path
) -> None:
    program = workspace / "prog.py"
    program.write_text(AGENT_PROGRAM)
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"openprogram": _options(fake_interpreter)})
    )
    outside = workspace.parent / "outside.py"
    outside.write_text("def f():\n    return 1\n")

    async def run(*args: object) -> dict[str, object]:
        return await execute(client, "openprogram.run", *(args or ()))

    res = await run(outside.as_uri(), "f")
    assert res["status"] == "error" and "outside every workspace folder" in str(res["error"])
    res = await run(program.as_uri(), "summarize", "{not json")
    assert res["status"] == "error" and "not valid JSON" in str(res["error"])
    res = await run(program.as_uri(), "summarize", [1, 2])
    assert res["status"] == "error" and "JSON object" in str(res["error"])
    res = await run(program.as_uri(), "no such; entry")
    assert res["status"] == "error" and "invalid entry" in str(res["error"])
    res = await run(42)
    assert res["status"] == "error"
    # missing required parameter, unknown entry: rejected before anything is started
    res = await run(program.as_uri(), "summarize")
    assert res == {
        "status": "error",
        "error": "prog.py: summarize(text): missing required argument 'text'",
    }
    res = await run(program.as_uri(), "boom")
    assert res["status"] == "error" and "'boom' is not in PROGRAM_ENTRIES" in str(res["error"])
    assert not (_store(workspace) / "calls.jsonl").exists()
    # a missing interpreter
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"openprogram": {"interpreter": str(workspace / "nope" / "python")}}
        )
    )
    res = await run(program.as_uri(), "summarize", {"text": "x"})
    assert res["status"] == "error" and "cannot start" in str(res["error"])
    res = await execute(client, "openprogram.resume", "bad id; rm")
    assert res["status"] == "error"
    # the server still answers
    open_doc(client, program.as_uri(), AGENT_PROGRAM)
    assert await _lenses(client, program.as_uri())


async def test_resume_lens_for_paused_run(
    client: LanguageClient, workspace: Path, fake_interpreter: Path
) -> None:
    program = workspace / "prog.py"
    program.write_text(AGENT_PROGRAM)
    uri = program.as_uri()
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"openprogram": _options(fake_interpreter)})
    )
    open_doc(client, uri, AGENT_PROGRAM)
    assert not [lens for lens in await _lenses(client, uri) if "Resume" in _title(lens)]

    _paused_run(workspace, program, "0707070707070707", "Reporter.report", "fetch")
    lenses = await _lenses(client, uri)
    titles = [_title(lens) for lens in lenses]
    assert '⟳ Resume (step "fetch" #1)' in titles and "Runs (1)" in titles
    resume = next(lens for lens in lenses if "Resume" in _title(lens))
    report_line = AGENT_PROGRAM.splitlines().index("    def report(self, topic):")
    assert resume.range.start.line == report_line
    assert resume.command is not None and resume.command.arguments == ("0707070707070707",)

    runs = await execute(client, "openprogram.showRuns", uri, "Reporter.report")
    assert [r["run_id"] for r in runs] == ["0707070707070707"]

    result = await execute(client, resume.command.command, *(resume.command.arguments or ()))
    assert result["status"] == "completed" and result["run_id"] == "0707070707070707"
    lenses = await _lenses(client, uri)
    assert not [lens for lens in lenses if "Resume" in _title(lens)]
    assert "Runs (1)" in [_title(lens) for lens in lenses]


async def test_store_without_runs_table_or_locked(client: LanguageClient, workspace: Path) -> None:
    program = workspace / "prog.py"
    program.write_text(AGENT_PROGRAM)
    store = workspace / ".openprogram"
    store.mkdir()
    db = sqlite3.connect(store / "openprogram.db")
    db.execute("CREATE TABLE sessions (id TEXT)")
    db.commit()
    db.execute("BEGIN EXCLUSIVE")  # hold a lock while the server reads
    open_doc(client, program.as_uri(), AGENT_PROGRAM)
    lenses = await _lenses(client, program.as_uri())
    assert [_title(lens) for lens in lenses] == ["▶ Run", "▶ Run"]
    db.rollback()
    db.close()
    assert os.path.exists(store / "openprogram.db")


def _title(lens: types.CodeLens) -> str:
    return lens.command.title if lens.command else ""


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "report_pipeline.py"


@pytest.mark.slow
@pytest.mark.skipif(not EXAMPLE.exists(), reason="example Program not present")
@pytest.mark.lsp_init(options={"store": "store"})
async def test_run_lens_end_to_end_with_the_real_cli(
    client: LanguageClient, workspace: Path
) -> None:
    program = workspace / "report_pipeline.py"
    program.write_text(EXAMPLE.read_text())
    uri = program.as_uri()
    open_doc(client, uri, program.read_text())
    lenses = await _lenses(client, uri)
    runs = [lens for lens in lenses if _title(lens) == "▶ Run"]
    assert len(runs) == 1 and runs[0].command is not None
    assert runs[0].command.arguments == (uri, "build_report")
    cmd = runs[0].command
    result = await execute(client, cmd.command, *(cmd.arguments or ()), {"topic": "tides"})
    assert result["status"] == "completed", result
    assert result["result"] == {"topic": "tides", "sections": 3}
    assert result["exit_code"] == 0
    kinds = [getattr(r, "kind", None) for rs in client.progress_reports.values() for r in rs]
    assert kinds[0] == "begin" and kinds[-1] == "end"
    assert any("completed" in m.message for m in client.messages)
    # the run is in the store: the function now has a Runs (1) lens, no Resume lens
    lenses = await _lenses(client, uri)
    titles = [_title(lens) for lens in lenses]
    assert "Runs (1)" in titles and not [t for t in titles if "Resume" in t]
    # a missing required parameter is a clear error from the CLI, not a crash
    result = await execute(client, cmd.command, *(cmd.arguments or ()))
    assert result["status"] != "completed" and "topic" in json.dumps(result)


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
async def test_resume_lens_for_a_run_killed_mid_step(
    client: LanguageClient, workspace: Path
) -> None:
    import signal
    import subprocess

    program = workspace / "gated.py"
    program.write_text(GATED)
    store = workspace / "store"
    gate = workspace / "gate"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "openprogram.cli",
            "run",
            f"{program}:pipeline",
            "--args",
            json.dumps({"gate": str(gate)}),
            "--json",
            "--store",
            str(store),
        ],
        cwd=workspace,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:

        def dispatched() -> bool:
            db_path = store / "openprogram.db"
            if not db_path.exists():
                return False
            db = sqlite3.connect(db_path, timeout=1)
            try:
                rows = db.execute("SELECT name, status FROM run_steps").fetchall()
            except sqlite3.Error:
                return False
            finally:
                db.close()
            return ("wait", "dispatched") in rows

        await wait_for(dispatched, "the run to reach step 'wait'", timeout=60)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate()

    uri = program.as_uri()
    open_doc(client, uri, GATED)
    lenses = await _lenses(client, uri)
    resume = [lens for lens in lenses if "Resume" in _title(lens)]
    assert [_title(lens) for lens in resume] == ['⟳ Resume (step "wait" #0, interrupted)']
    assert resume[0].range.start.line == GATED.splitlines().index("def pipeline(gate: str) -> str:")

    gate.write_text("go")
    cmd = resume[0].command
    assert cmd is not None
    result = await execute(client, cmd.command, *(cmd.arguments or ()))
    # the dispatched step's effect is unknown: resuming pauses again and says so
    assert result["status"] == "paused" and result["paused_step"] == "wait"
    assert "--rerun-uncertain" in result["error"]
    lenses = await _lenses(client, uri)
    titles = [_title(lens) for lens in lenses]
    assert titles == [
        "▶ Run",
        '⟳ Resume (step "wait" #0)',
        '⟳ Re-run uncertain step "wait"',
        "Runs (1)",
    ]
    rerun = lenses[2].command
    assert rerun is not None
    result = await execute(client, rerun.command, *(rerun.arguments or ()))
    assert result["status"] == "completed" and result["result"] == "ab", result
    titles = [_title(lens) for lens in await _lenses(client, uri)]
    assert titles == ["▶ Run", "Runs (1)"]


async def test_cancelling_the_progress_kills_the_run(
    client: LanguageClient, workspace: Path, fake_interpreter: Path
) -> None:
    import asyncio

    program = workspace / "prog.py"
    program.write_text("def slow():\n    return 1\n\n\nPROGRAM_ENTRIES = [slow]\n")
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"openprogram": _options(fake_interpreter)})
    )
    task = asyncio.ensure_future(execute(client, "openprogram.run", program.as_uri(), "slow"))
    token = await wait_for(
        lambda: next(
            (
                t
                for t, rs in client.progress_reports.items()
                if any(getattr(r, "message", "") == "still working" for r in rs)
            ),
            None,
        ),
        "progress of the slow run",
    )
    client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    result = await asyncio.wait_for(task, 20)
    assert result["status"] == "killed" and result["exit_code"] < 0
    assert getattr(client.progress_reports[token][-1], "kind", None) == "end"
