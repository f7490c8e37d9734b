"""A resumed run asks the model what its first execution asked: real ``openprogram run`` /
``openprogram resume`` subprocesses on a real SQLite store, a loopback server speaking
the OpenAI wire format that keeps every request body.

A run whose step failed at its model call (HTTP 400) and was resumed used to send the
re-run step a prompt whose history held the failed attempt: the entry as ``(error:
ProviderError: openai: HTTP 400 ...)``, the failed step, and ``assistant: (error: ...)``,
then the entry again as ``(running)`` — the model saw the previous error as part of its
conversation. The resumed request is now byte-for-byte the request of a first execution
(the completed step before it is still shown, as it was then), after any number of
failed resumes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from cli_programs import env

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine"))
from loopback import OpenAIServer
from loopback import openai_server as openai_server

OPENPROGRAM = str(Path(sys.executable).parent / "openprogram")

PROGRAM = """
from openprogram import step
from openprogram.agentic_programming import llm


def ask(q: str) -> str:
    return llm(q)


def asker(q: str) -> str:
    first = step("first", ask, q)
    return step("second", ask, q + " then " + first)


asker.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["asker"]
"""


def _cli(folder: Path, server: OpenAIServer, *args: str) -> tuple[int, dict[str, Any]]:
    environment = {**env(), "OPENAI_BASE_URL": server.base_url, "OPENPROGRAM_MODEL": "openai:m"}
    proc = subprocess.run(
        [OPENPROGRAM, *args, "--store", "st", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=folder,
        env=environment,
    )
    return proc.returncode, json.loads(proc.stdout)


def test_a_resumed_step_is_asked_exactly_what_its_first_execution_was(
    tmp_path: Path, openai_server: OpenAIServer
) -> None:
    (tmp_path / "prog.py").write_text(PROGRAM, encoding="utf-8")
    openai_server.reply_text("A")
    openai_server.reply_error(400, "the model is warming up")
    code, out = _cli(tmp_path, openai_server, "run", "prog.py:asker", "--args", '{"q": "hi"}')
    assert code == 1 and "the model is warming up" in out["error"], out
    run_id = out["run_id"]

    openai_server.reply_error(400, "still warming up")  # the first resume fails again
    code, out = _cli(tmp_path, openai_server, "resume", run_id)
    assert code == 1 and "still warming up" in out["error"], out

    openai_server.reply_text("B")
    code, out = _cli(tmp_path, openai_server, "resume", run_id)
    assert code == 0 and out["result"] == "B", out

    bodies = [r.json for r in openai_server.requests]
    assert len(bodies) == 4  # first, second (failed), second (failed), second
    first_time = bodies[1]
    text = json.dumps(first_time)
    assert "hi then A" in text and "assistant: A" in text  # the completed step is shown
    assert bodies[2] == first_time
    assert bodies[3] == first_time
    assert "warming up" not in json.dumps(bodies[3])
