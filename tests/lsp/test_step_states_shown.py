"""How the language server shows the state of a run's steps, from the user's side: a real
server over stdio (pytest-lsp), runs made by the real CLI in subprocesses. The Runs view
(``openprogram/runSteps``, ``openprogram/runs``) and the inlay hints say what ``openprogram
runs`` / ``show`` say: a step awaiting a tool's approval is paused (not failed), the run's
bookkeeping records are not steps, an interrupted run names its step, and a hint shows a
run of the function the step is called in (or of the workflow running it), never another
function's step of the same name."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from lsp_harness import open_doc, request, start, stop
from lsprotocol import types
from pytest_lsp import LanguageClient
from test_run_store_setup import OPENPROGRAM, awaiting_run, cli, cli_env

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine"))
from durable_programs import JANITOR
from loopback import OpenAIServer
from loopback import openai_server as openai_server

PROGRAM = """\
import os
import time

from openprogram import step, workflow

HERE = os.path.dirname(os.path.abspath(__file__))


def act(name: str, value: int) -> dict:
    while os.path.exists(os.path.join(HERE, "block_" + name)):
        time.sleep(0.01)
    if os.path.exists(os.path.join(HERE, "fail_" + name)):
        raise RuntimeError("no \\x1b[31m" + name + "\\nsecond line")
    return {"name": name, "value": value}


def inner(n: int) -> dict:
    a = step("a", act, "ia", n)
    return {"inner": a["value"]}


def main(n: int = 1) -> dict:
    a = step("a", act, "a", n)
    b = step("slow", act, "slow", a["value"] + 1)
    return {"total": b["value"]}


def nested(n: int = 1) -> dict:
    return workflow("outer", inner, n)


main.__agent_options__ = {"resumable": True}
nested.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["main", "nested"]
"""


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines()) if needle in line)


async def hints(client: LanguageClient, uri: str, text: str) -> dict[int, str]:
    """The inlay hints of the open document ``uri``: ``{line: label}``."""
    res = await client.text_document_inlay_hint_async(
        types.InlayHintParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(types.Position(0, 0), types.Position(len(text.splitlines()), 0)),
        )
    )
    return {h.position.line: str(h.label) for h in res or []}


def run(ws: Path, entry: str) -> dict[str, Any]:
    return cli(ws, "run", f"prog.py:{entry}", "--store", str(ws / ".openprogram"))


async def test_a_step_awaiting_approval_is_paused_in_the_runs_view_and_its_hint(
    tmp_path: Path, openai_server: OpenAIServer
) -> None:
    """``show`` says ``tidy [paused]``; the server said ``tidy #0`` failed (its error the
    pause's ``ApprovalPending``), listed the run's ``approval_loops`` note as an
    ``uncertain`` step, and hinted ``✗ "ApprovalPending: …"`` on ``step("tidy", …)``."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "janitor.py").write_text(JANITOR)
    run_id = awaiting_run(ws, openai_server, "junk.txt")
    client = await start([ws], env={"OPENPROGRAM_STORE": ""})
    try:
        got = await request(client, "openprogram/runSteps", {"runId": run_id})
        assert (got["run"]["status"], got["run"]["pauseReason"]) == ("paused", "awaiting_approval")
        assert [(s["label"], s["state"], s["error"]) for s in got["steps"]] == [
            ("tidy #0", "paused", "")
        ]
        uri = (ws / "janitor.py").as_uri()
        open_doc(client, uri, JANITOR)
        shown = await hints(client, uri, JANITOR)
        assert shown == {line_of(JANITOR, 'step("tidy"'): "‖ paused here"}
    finally:
        await stop(client)


async def test_a_step_of_a_run_cancelled_while_awaiting_approval_is_cancelled_not_failed(
    tmp_path: Path, openai_server: OpenAIServer
) -> None:
    """Cancelled while awaiting approval: the Runs view said ``tidy #0`` failed with
    ``ApprovalPending: tool 'delete_file' requires approval …`` as its error, and the hint
    ``✗ ApprovalPending: …``. The step ended in the cancel: ``cancelled``, no error."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "janitor.py").write_text(JANITOR)
    run_id = awaiting_run(ws, openai_server, "junk.txt")
    assert cli(ws, "cancel", run_id, "--store", str(ws / ".openprogram"))["status"] == "cancelled"
    client = await start([ws], env={"OPENPROGRAM_STORE": ""})
    try:
        got = await request(client, "openprogram/runSteps", {"runId": run_id})
        assert got["run"]["status"] == "cancelled"
        assert got["run"]["pauseReason"] is None, got["run"]  # was "awaiting_approval"
        [folder] = (await request(client, "openprogram/runs", {}))["folders"]
        [listed] = [r for r in folder["runs"] if r["id"] == run_id]
        assert (listed["pauseReason"], listed["pausedStep"]) == (None, None), listed
        assert [(s["label"], s["state"], s["error"]) for s in got["steps"]] == [
            ("tidy #0", "cancelled", "")
        ]
        # the graph view drew the calls the pause unwound as paused: they ended cancelled
        graph = await request(client, "openprogram/runGraph", {"runId": run_id})
        code = {n["name"]: n["status"] for n in graph["nodes"] if n["kind"] == "code"}
        assert code == {"clean": "cancelled", "tidy": "cancelled"}, graph["nodes"]
        tidy = next(n["id"] for n in graph["nodes"] if n["name"] == "tidy")
        node = await request(client, "openprogram/runNode", {"runId": run_id, "nodeId": tidy})
        assert node["status"] == "cancelled"
        uri = (ws / "janitor.py").as_uri()
        open_doc(client, uri, JANITOR)
        shown = await hints(client, uri, JANITOR)
        assert shown == {line_of(JANITOR, 'step("tidy"'): "⊘ cancelled"}
    finally:
        await stop(client)


async def test_a_hint_shows_runs_of_its_own_function_or_of_the_workflow_running_it(
    tmp_path: Path,
) -> None:
    """A failed run of ``main`` put ``✗`` on ``step("a", …)`` in ``inner`` too (matched by
    the step's name only), though ``inner`` never ran. A run of ``nested`` (whose workflow
    ``outer`` runs ``inner``) is what ``inner``'s hint shows. Errors are shown as text, not
    as a JSON string, their control characters escaped."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "prog.py").write_text(PROGRAM)
    (ws / "fail_a").touch()
    assert run(ws, "main")["status"] == "failed"
    (ws / "fail_a").unlink()
    client = await start([ws], env={"OPENPROGRAM_STORE": ""})
    try:
        uri = (ws / "prog.py").as_uri()
        open_doc(client, uri, PROGRAM)
        in_main, in_inner = line_of(PROGRAM, 'step("a", act, "a"'), line_of(PROGRAM, '"ia"')
        shown = await hints(client, uri, PROGRAM)
        assert shown == {in_main: "✗ RuntimeError: no \\u001b[31ma"}  # its first line
        assert run(ws, "nested")["status"] == "completed"
        for _ in range(200):  # the next request reads the changed store
            shown = await hints(client, uri, PROGRAM)
            if in_inner in shown:
                break
        assert shown[in_inner].startswith("✓ ") and '"ia"' in shown[in_inner]
        assert shown[in_main].startswith("✗ RuntimeError")
    finally:
        await stop(client)


def killed_in(ws: Path, entry: str, block: str) -> subprocess.CompletedProcess[str]:
    """Run ``prog.py:ENTRY`` until it blocks in the step that waits on ``block_BLOCK``,
    kill its process; ``openprogram runs --json`` after."""
    (ws / f"block_{block}").touch()
    store = str(ws / ".openprogram")
    proc = subprocess.Popen(
        [OPENPROGRAM, "run", f"prog.py:{entry}", "--store", store],
        cwd=ws, env=cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        for _ in range(1200):
            listed = subprocess.run(
                [OPENPROGRAM, "runs", "--json", "--store", store],
                cwd=ws, env=cli_env(), capture_output=True, text=True, check=True,
            )  # fmt: skip
            rows = json.loads(listed.stdout or "[]")
            if rows and rows[0]["status"] == "running":
                got = subprocess.run(
                    [OPENPROGRAM, "show", rows[0]["run_id"], "--format", "json", "--store", store],
                    cwd=ws, env=cli_env(), capture_output=True, text=True,
                )  # fmt: skip
                nodes = json.loads(got.stdout or "{}").get("nodes", [])
                inputs = [n["input"] for n in nodes if isinstance(n["input"], dict)]
                if any(block in i.get("args", []) for i in inputs):  # the blocked step
                    break
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    (ws / f"block_{block}").unlink()
    return subprocess.run(
        [OPENPROGRAM, "runs", "--json", "--store", store],
        cwd=ws, env=cli_env(), capture_output=True, text=True, check=True,
    )  # fmt: skip


async def test_an_interrupted_run_names_the_step_it_stopped_in(tmp_path: Path) -> None:
    """``openprogram runs`` names step ``slow`` of a run whose process was killed in it;
    the Runs view's row had ``pausedStep: null``."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "prog.py").write_text(PROGRAM)
    listed = killed_in(ws, "main", "slow")
    [row] = json.loads(listed.stdout)
    assert (row["interrupted"], row["interrupted_step"]) == (True, "slow")
    client = await start([ws], env={"OPENPROGRAM_STORE": ""})
    try:
        [view] = (await request(client, "openprogram/runs", {}))["folders"][0]["runs"]
        assert (view["status"], view["pausedStep"], view["pausedOccurrence"]) == (
            "interrupted", "slow", 0,
        )  # fmt: skip
        got = await request(client, "openprogram/runSteps", {"runId": row["run_id"]})
        assert got["run"]["pausedStep"] == "slow"
    finally:
        await stop(client)


async def test_the_resume_lens_of_an_interrupted_run_names_the_step_runs_names(
    tmp_path: Path,
) -> None:
    """A run killed in step ``a`` inside workflow ``outer``: ``openprogram runs`` and the
    Runs view name step ``a`` (started, result not saved: uncertain on resume), but the
    Resume lens read the last top-level record and said ``step "outer" #0``. The lens
    names the step from the same derivation (``queries.stopped_at``)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "prog.py").write_text(PROGRAM)
    [row] = json.loads(killed_in(ws, "nested", "ia").stdout)
    assert (row["interrupted"], row["interrupted_step"]) == (True, "a")
    client = await start([ws], env={"OPENPROGRAM_STORE": ""})
    try:
        [view] = (await request(client, "openprogram/runs", {}))["folders"][0]["runs"]
        assert (view["status"], view["pausedStep"], view["pausedOccurrence"]) == (
            "interrupted", "a", 0,
        )  # fmt: skip
        uri = (ws / "prog.py").as_uri()
        open_doc(client, uri, PROGRAM)
        lenses = await client.text_document_code_lens_async(
            types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
        titles = [lens.command.title for lens in lenses or [] if lens.command]
        assert [t for t in titles if "Resume" in t] == ['⟳ Resume (step "a" #0, interrupted)']
    finally:
        await stop(client)
