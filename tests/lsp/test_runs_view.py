"""Runs view, run graph, entry signatures and step inlay hints over a real LSP connection.

Runs are made by the real CLI in subprocesses (real SQLite store); the server reads them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsp_harness import (
    SERVER_CMD,
    as_dict,
    make_runs_client,
    open_doc,
    runs_capabilities,
    runs_seen,
    wait_for,
)
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

ROOT = Path(__file__).resolve().parents[2]
OPENPROGRAM = str(Path(sys.executable).parent / "openprogram")

PAUSER = '''\
import time as t
from openprogram import step, workflow
from openprogram.durable import current_run_id, pause_run


def prepare(n: int) -> int:
    """Ask for a pause before the next step (a person has to look first)."""
    pause_run(current_run_id())
    return n + 1


def finish(n: int) -> int:
    return n * 10


def check(n: int) -> int:
    if n > 100:
        raise ValueError("too big: " + str(n))
    return n


def pipeline(n: int = 1) -> int:
    x = step("prepare", prepare, n)
    return step("finish", finish, x)


def strict(n: int) -> int:
    return step("check", check, n)


pipeline.__agent_options__ = {"resumable": True}
strict.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["pipeline", "strict"]
'''


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=SERVER_CMD, client_factory=make_runs_client)
)
async def client(lsp_client: LanguageClient, workspace: Path) -> AsyncIterator[None]:
    caps = runs_capabilities()
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=caps,
            root_uri=workspace.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=workspace.as_uri(), name="ws")],
        )
    )
    yield
    await lsp_client.shutdown_session()


def cli(workspace: Path, *args: str) -> dict[str, Any]:
    proc = subprocess.run(
        [OPENPROGRAM, *args, "--json"],
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode in (0, 1, 3), proc.stderr
    return dict(json.loads(proc.stdout))


async def request(client: LanguageClient, method: str, params: dict[str, Any]) -> Any:
    return await client.protocol.send_request_async(method, params)


async def hints(client: LanguageClient, uri: str, text: str) -> dict[int, str]:
    res = await client.text_document_inlay_hint_async(
        types.InlayHintParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(types.Position(0, 0), types.Position(len(text.splitlines()), 0)),
        )
    )
    return {h.position.line: str(h.label) for h in res or []}


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines()) if needle in line)


async def test_runs_and_steps_of_the_report_pipeline(
    client: LanguageClient, workspace: Path
) -> None:
    program = workspace / "report_pipeline.py"
    program.write_text((ROOT / "examples" / "report_pipeline.py").read_text())
    run = cli(workspace, "run", "report_pipeline.py:build_report", "--args", '{"topic": "tides"}')
    got = as_dict(await request(client, "openprogram/runs", {}))
    [folder] = got["folders"]
    assert folder["name"] == "ws" and folder["uri"] == workspace.as_uri()
    [row] = folder["runs"]
    assert row["id"] == run["run_id"] and row["status"] == "completed"
    assert row["entry"] == "build_report" and row["function"] == "build_report"
    assert row["result"] == '{"topic": "tides", "sections": 3}' and row["resumable"] is False

    steps = as_dict(await request(client, "openprogram/runSteps", {"runId": run["run_id"]}))
    labels = [s["label"] for s in steps["steps"] if s["scope"] == ""]
    assert labels == [
        "outline #0",
        "collect #0",
        "collect #1",
        "collect #2",
        "review #0",
        "review #1",
        "review #2",
        "parallel #0",
        "publish #0",
    ]
    nested = {s["key"]: s for s in steps["steps"] if s["scope"] != ""}
    assert nested["review#1/summarize#0"]["result"] == '"tides fact 1.0; tides fact 1.1"'
    assert set(nested) >= {"parallel#0/glossary#0", "parallel#0/sources#0"}
    assert all(s["state"] == "completed" and s["durationMs"] >= 0 for s in steps["steps"])

    graph = as_dict(await request(client, "openprogram/runGraph", {"runId": run["run_id"]}))
    assert graph["run"]["id"] == run["run_id"] and graph["totals"]["nodes"] == 14
    by_step = {n["step"]: n for n in graph["nodes"] if n["step"]}
    root = next(n for n in graph["nodes"] if n["caller"] is None)
    assert root["name"] == "build_report" and by_step["publish #0"]["caller"] == root["id"]
    reviews = {n["id"]: n["step"] for n in graph["nodes"] if n["name"] == "review"}
    summaries = [n for n in graph["nodes"] if n["name"] == "summarize"]
    assert sorted(reviews[n["caller"]] for n in summaries) == [
        "review #0",
        "review #1",
        "review #2",
    ]
    assert by_step["sources #0"]["output"].startswith('{"section": 200')
    full = as_dict(
        await request(
            client,
            "openprogram/runNode",
            {"runId": run["run_id"], "nodeId": by_step["publish #0"]["id"]},
        )
    )
    assert json.loads(full["input"])["args"][0]["topic"] == "tides"
    missing = await request(client, "openprogram/runSteps", {"runId": "no-such-run"})
    assert as_dict(missing) == {"run": None, "steps": []}


async def test_inlay_hints_follow_a_paused_run_to_completion(
    client: LanguageClient, workspace: Path
) -> None:
    program = workspace / "pauser.py"
    program.write_text(PAUSER)
    uri = program.as_uri()
    open_doc(client, uri, PAUSER)
    assert await hints(client, uri, PAUSER) == {}  # no runs yet

    paused = cli(workspace, "run", "pauser.py:pipeline", "--args", '{"n": 1}')
    assert paused["status"] == "paused" and paused["paused_step"] == "finish"
    prepare, finish = line_of(PAUSER, 'step("prepare"'), line_of(PAUSER, 'step("finish"')
    got = await hints(client, uri, PAUSER)
    assert got[finish] == "‖ paused here"
    assert got[prepare].startswith("✓ ") and got[prepare].endswith(" ms → 2")

    steps = as_dict(await request(client, "openprogram/runSteps", {"runId": paused["run_id"]}))
    assert steps["run"]["status"] == "paused" and steps["run"]["resumable"] is True
    assert steps["run"]["pausedStep"] == "finish"

    seen = runs_seen(client)
    before = seen.hint_refreshes
    done = cli(workspace, "resume", paused["run_id"])
    assert done == {"run_id": paused["run_id"], "status": "completed", "result": 20}
    await wait_for(lambda: seen.hint_refreshes > before, "workspace/inlayHint/refresh")
    assert seen.runs_changed > 0
    got = await hints(client, uri, PAUSER)
    assert got[finish].endswith(" ms → 20") and got[prepare].endswith(" ms → 2")

    failed = cli(workspace, "run", "pauser.py:strict", "--args", '{"n": 500}')
    assert failed["status"] == "failed"
    got = await hints(client, uri, PAUSER)
    assert got[line_of(PAUSER, 'step("check"')].startswith("✗ ")
    assert "too big: 500" in got[line_of(PAUSER, 'step("check"')]


async def test_entry_signature_prefills_arguments(client: LanguageClient, workspace: Path) -> None:
    source = (
        "from openprogram import Agent\n\n\n"
        "def build(topic: str, sections: int = 3, *, tags: list[str] | None = None,"
        " ratio: float = 0.5, draft: bool = False) -> dict:\n"
        "    return {}\n\n\n"
        "class Writer(Agent):\n"
        "    def write(self, title, words: int) -> str:\n"
        "        return title\n\n\n"
        "writer = Writer()\n"
        'PROGRAM_ENTRIES = ["build", "writer.write"]\n'
    )
    program = workspace / "sig.py"
    program.write_text(source)
    uri = program.as_uri()
    open_doc(client, uri, source)
    got = as_dict(
        await request(client, "openprogram/entrySignature", {"uri": uri, "entry": "build"})
    )
    assert got["template"] == {
        "topic": "",
        "sections": 3,
        "tags": None,
        "ratio": 0.5,
        "draft": False,
    }
    assert [(p["name"], p["type"], p["required"]) for p in got["params"]] == [
        ("topic", "str", True),
        ("sections", "int", False),
        ("tags", "list", False),
        ("ratio", "float", False),
        ("draft", "bool", False),
    ]
    method = as_dict(
        await request(client, "openprogram/entrySignature", {"uri": uri, "entry": "writer.write"})
    )
    assert method["template"] == {"title": None, "words": 0}  # no `self`
    assert (
        await request(client, "openprogram/entrySignature", {"uri": uri, "entry": "nope"})
    ) is None


TYPED = """\
def main(n: int, names: list[str] | None = None) -> int:
    return n + len(names or [])


PROGRAM_ENTRIES = ["main"]
"""


async def test_arguments_prompt_shows_what_run_refuses(
    client: LanguageClient, workspace: Path
) -> None:
    """The editor's arguments prompt asks the server about what is typed
    (``openprogram/checkEntryArgs``) and shows its lines: the problems ``openprogram run``
    prints for the same arguments, word for word."""
    program = workspace / "typed.py"
    program.write_text(TYPED)
    uri = program.as_uri()
    open_doc(client, uri, TYPED)
    cases = [
        '{"n": "3"}',
        '{"n": true}',
        '{"n": 1, "names": ["a", 2]}',
        '{"n": 1.5, "names": "a"}',
        '{"nmes": [], "names": {"a": 1}}',
        '{"n": 1, "my-names": ["a"], "if": 2}',  # keys that are not Python names
        "{}",
    ]
    for text in cases:
        got = as_dict(
            await request(
                client, "openprogram/checkEntryArgs", {"uri": uri, "entry": "main", "args": text}
            )
        )
        problems = got["problems"]
        assert problems, text
        proc = subprocess.run(
            [OPENPROGRAM, "run", "typed.py:main", "--args", text],
            cwd=workspace,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.strip() == (
            "openprogram: error: main(n: int, names: list[str] | None = None) -> int: "
            + "; ".join(problems)
        )
    fits = '{"n": 2, "names": null}'
    got = as_dict(
        await request(
            client, "openprogram/checkEntryArgs", {"uri": uri, "entry": "main", "args": fits}
        )
    )
    assert got == {"problems": []}
    assert cli(workspace, "run", "typed.py:main", "--args", fits)["result"] == 2


async def test_arguments_prompt_gives_positional_only_parameters_by_name(
    client: LanguageClient, workspace: Path
) -> None:
    """A positional-only parameter is given by name in the arguments as in ``--args``
    (the run passes it by position): the prompt checks it as the run does."""
    source = "def pos(a: int, /, b: int = 0) -> int:\n    return a * 10 + b\n\n\nPROGRAM_ENTRIES = [pos]\n"
    program = workspace / "posonly.py"
    program.write_text(source)
    uri = program.as_uri()
    open_doc(client, uri, source)

    async def problems(text: str) -> list[str]:
        params = {"uri": uri, "entry": "pos", "args": text}
        return list(
            as_dict(await request(client, "openprogram/checkEntryArgs", params))["problems"]
        )

    assert await problems('{"b": 2}') == ["missing required argument 'a' (int)"]
    assert await problems('{"a": "1"}') == ["argument 'a' expects int, got string \"1\""]
    assert await problems('{"a": 1, "b": 2}') == []
    assert cli(workspace, "run", "posonly.py:pos", "--args", '{"a": 1, "b": 2}')["result"] == 12


async def test_cancel_a_paused_run_from_the_view(client: LanguageClient, workspace: Path) -> None:
    (workspace / "pauser.py").write_text(PAUSER)
    paused = cli(workspace, "run", "pauser.py:pipeline")
    assert paused["status"] == "paused"
    got = as_dict(await request(client, "openprogram/cancelRun", {"runId": paused["run_id"]}))
    assert got == {"status": "cancelled", "cancel": "cancelled"}  # done: no process to wait for
    runs = as_dict(await request(client, "openprogram/runs", {}))
    assert [
        (r["id"], r["status"], r["resumable"], r["cancelRequested"])
        for r in runs["folders"][0]["runs"]
    ] == [(paused["run_id"], "cancelled", False, False)]
    # it stopped at no step any more: the row, its steps' run and the graph's run say none
    [row] = runs["folders"][0]["runs"]
    steps = as_dict(await request(client, "openprogram/runSteps", {"runId": paused["run_id"]}))
    graph = as_dict(await request(client, "openprogram/runGraph", {"runId": paused["run_id"]}))
    for run in (row, steps["run"], graph["run"]):
        assert (run["pausedStep"], run["pausedOccurrence"]) == (None, None), run
    again = as_dict(await request(client, "openprogram/cancelRun", {"runId": paused["run_id"]}))
    assert "cancelled" in again["error"]
    unknown = as_dict(await request(client, "openprogram/cancelRun", {"runId": "nope"}))
    assert unknown == {"error": "no run 'nope' in the workspace stores"}


RUNS_SHOWN = 200  # the finished runs the view lists (README: "the 200 newest finished ones")
MAKE_RUNS = """
import sys
from openprogram.durable import start_run

paused = start_run("pauser.py:pipeline", {"n": 1})
assert paused.status == "paused", paused
for i in range(int(sys.argv[1])):
    assert start_run("pauser.py:strict", {"n": i % 100}).status == "completed"
print(paused.run_id)
"""


async def test_runs_view_keeps_unfinished_runs_and_counts_the_older_ones_left_out(
    client: LanguageClient, workspace: Path
) -> None:
    """The view lists the newest finished runs only (RUNS_SHOWN); a paused run older than
    all of them is still listed, and ``olderRuns`` says how many finished runs were left
    out, so nothing disappears silently."""
    (workspace / "pauser.py").write_text(PAUSER)
    made = subprocess.run(
        [sys.executable, "-c", MAKE_RUNS, str(RUNS_SHOWN + 3)],
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert made.returncode == 0, made.stderr
    paused_id = made.stdout.split()[-1]
    got = as_dict(await request(client, "openprogram/runs", {}))
    [folder] = got["folders"]
    rows = folder["runs"]
    assert folder["olderRuns"] == 3
    assert len(rows) == RUNS_SHOWN + 1
    assert [r["id"] for r in rows if r["status"] == "paused"] == [paused_id]
    assert sum(r["status"] == "completed" for r in rows) == RUNS_SHOWN
    created = [r["createdAt"] for r in rows]
    assert created == sorted(created, reverse=True)  # newest first, the paused one last
