"""A resumable method called as a tool inside a turn: when its run pauses, the turn pauses
with that tool call pending; resuming the turn continues the run and hands its final
result to the tool call, so the turn completes (issue 11, item 16). The resumed turn
continues at the paused call with the recorded conversation: no model request made before
the pause is sent again. Loopback OpenAI/Anthropic servers, a SQLite store, no mocks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from loopback import OpenAIServer

from openprogram import TurnRequest
from openprogram.context import Context
from openprogram.programs import isolated_registry
from openprogram.runtime import create_runtime
from openprogram.store import SessionStore

OPENPROGRAM = str(Path(sys.executable).parent / "openprogram")

PROGRAM = '''
import os

from openprogram import Agent, step
from openprogram.durable import current_run_id, pause_run

HERE = os.path.dirname(os.path.abspath(__file__))


def act(name: str, value: str) -> str:
    with open(os.path.join(HERE, "calls.log"), "a", encoding="utf-8") as f:
        f.write(name + " " + value + "\\n")
    if os.path.exists(os.path.join(HERE, "pause_after_" + name)):
        pause_run(current_run_id())  # the run stops before its next step
    return name + "(" + value + ")"


class Reporter(Agent):
    method_options = {"build": {"resumable": True, "tool": True}, "note": {"tool": True}}

    def note(self, text: str) -> str:
        """Write a note down."""
        act("note", text)
        return "noted: " + text

    def build(self, topic: str) -> dict:
        """Build a report on a topic."""
        notes = step("collect", act, "collect", topic)
        return {"report": step("write", act, "write", notes)}
'''


@pytest.fixture()
def program(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "reporter_prog.py").write_text(PROGRAM, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("OPENPROGRAM_STORE", str(tmp_path / "st"))
    monkeypatch.delitem(sys.modules, "reporter_prog", raising=False)
    return tmp_path


def _calls(folder: Path) -> list[str]:
    return (folder / "calls.log").read_text(encoding="utf-8").splitlines()


def _paused_turn(folder: Path, server: OpenAIServer, store: SessionStore) -> tuple[Any, Any]:
    import reporter_prog

    rt = create_runtime("openai:loop", base_url=server.base_url)
    agent = reporter_prog.Reporter(runtime=rt)
    store.create_session("chat", agent_id="main")
    (folder / "pause_after_collect").touch()
    server.reply_tool_calls([("call_1", "build", {"topic": "tides"})])
    result = agent.run_turn(
        TurnRequest("Write a report on tides"), context=Context.for_session(store, "chat")
    )
    assert result.status == "paused", result.error
    assert result.continuation is not None
    (run_id,) = result.continuation["pending_runs"].values()
    assert f"run {run_id} paused at step 'write'" in (result.error or "")
    turn = store.get_node(result.turn_node_id or "")
    assert turn is not None and turn.status == "paused"
    assert turn.metadata["continuation"]["pending_runs"] == result.continuation["pending_runs"]
    (folder / "pause_after_collect").unlink()
    return agent, result


def test_resume_turn_continues_the_run_and_hands_over_its_result(
    program: Path, openai_server: OpenAIServer
) -> None:
    store = SessionStore(root_path=program / "st")
    with isolated_registry():
        agent, paused = _paused_turn(program, openai_server, store)
        openai_server.reply_text("The report is ready.")
        done = agent.resume_turn(paused, context=Context.for_session(store, "chat"))
    store.close()
    assert done.status == "completed" and done.output == "The report is ready."
    assert len(openai_server.requests) == 2  # the tool call's request is not sent again
    assert _calls(program) == ["collect tides", "write collect(tides)"]  # no step re-ran
    tool_message = openai_server.requests[-1].json["messages"][-1]
    assert tool_message["role"] == "tool"
    assert json.loads(tool_message["content"]) == {"report": "write(collect(tides))"}


def test_run_resumed_by_hand_hands_its_saved_result_to_the_turn(
    program: Path, openai_server: OpenAIServer
) -> None:
    store = SessionStore(root_path=program / "st")
    with isolated_registry():
        agent, paused = _paused_turn(program, openai_server, store)
        (run_id,) = paused.continuation["pending_runs"].values()
        proc = subprocess.run(
            [OPENPROGRAM, "resume", run_id, "--store", str(program / "st"), "--json"],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=program,
        )
        assert json.loads(proc.stdout)["status"] == "completed", proc.stderr
        openai_server.reply_text("Done.")
        done = agent.resume_turn(paused, context=Context.for_session(store, "chat"))
    store.close()
    assert done.status == "completed" and done.output == "Done."
    assert _calls(program) == ["collect tides", "write collect(tides)"]
    tool_message = openai_server.requests[-1].json["messages"][-1]
    assert json.loads(tool_message["content"]) == {"report": "write(collect(tides))"}


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_resuming_sends_no_model_request_made_before_the_pause(
    program: Path, wire: str, request: pytest.FixtureRequest
) -> None:
    server = request.getfixturevalue(f"{wire}_server")
    store = SessionStore(root_path=program / "st")
    with isolated_registry():
        import reporter_prog

        rt = create_runtime(f"{wire}:loop", base_url=server.base_url)
        agent = reporter_prog.Reporter(runtime=rt)
        store.create_session("chat", agent_id="main")
        (program / "pause_after_collect").touch()
        server.reply_tool_calls([("call_n", "note", {"text": "tides are tidal"})])
        server.reply_tool_calls([("call_b", "build", {"topic": "tides"})])
        paused = agent.run_turn(
            TurnRequest("Note something, then write a report on tides"),
            context=Context.for_session(store, "chat"),
        )
        assert paused.status == "paused", paused.error
        before = [r.json for r in server.requests]
        assert len(before) == 2  # the note round, then the build call that paused
        (program / "pause_after_collect").unlink()

        server.reply_text("The report is ready.")
        done = agent.resume_turn(paused, context=Context.for_session(store, "chat"))
    store.close()
    assert done.status == "completed" and done.output == "The report is ready.", done.error
    after = [r.json for r in server.requests][len(before) :]
    assert len(after) == 1  # only the request after the tool call: nothing re-sent
    assert all(sent != made for sent in after for made in before)
    sent = json.dumps(after[0])
    # the recorded conversation so far, then the paused call's result from the run
    for part in ("Note something", "call_n", "noted: tides are tidal", "call_b"):
        assert part in sent, part
    assert "write(collect(tides))" in sent
    assert json.dumps(before[1]["messages"])[:-1] in sent  # the conversation, unchanged
    # each tool ran once: the note before the pause, the run's steps once each
    assert _calls(program) == ["note tides are tidal", "collect tides", "write collect(tides)"]
