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

import pytest
from cli_programs import env

from pgcluster import BACKENDS, store_for

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


def _cli(
    folder: Path, server: OpenAIServer, *args: str, store: str = "st"
) -> tuple[int, dict[str, Any]]:
    environment = {**env(), "OPENAI_BASE_URL": server.base_url, "OPENPROGRAM_MODEL": "openai:m"}
    proc = subprocess.run(
        [OPENPROGRAM, *args, "--store", store, "--json"],
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


# -- what a resumed run keeps of its earlier execution ------------------------------------
# Only what replays is kept from an earlier execution: completed steps and completed
# workflow / parallel calls. A completed call that is not a step (a helper's ``llm()``
# called by the entry) runs again on resume and used to show twice in later prompts; the
# completed steps of a workflow or parallel call that failed replay without writing a node
# and used to vanish from the prompts of the re-run call. On both store backends.

NOTE_OUTSIDE_STEPS = """
from openprogram import step
from openprogram.agentic_programming import llm


def ask(q: str) -> str:
    return llm(q)


def annotate(text: str) -> str:
    return llm("note on " + text)  # noqa: OP206 (knowingly run again on resume)


def asker(q: str) -> str:
    first = step("first", ask, q)
    note = annotate(first)  # a helper's model call, not a step: it runs again on resume
    return step("second", ask, q + " then " + note)


asker.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["asker"]
"""

NOTE_BEFORE_STEPS = NOTE_OUTSIDE_STEPS.replace(
    """    first = step("first", ask, q)
    note = annotate(first)  # a helper's model call, not a step: it runs again on resume
    return step("second", ask, q + " then " + note)""",
    """    note = annotate(q)  # a helper's model call, not a step: it runs again on resume
    first = step("first", ask, q)
    return step("second", ask, first + " then " + note)""",
)

INNER = """
from openprogram import parallel, step, workflow
from openprogram.agentic_programming import llm


def ask(q: str) -> str:
    return llm(q)


def inner(q: str) -> str:
    a = step("a", ask, q)
    return step("b", ask, q + " then " + a)


def asker(q: str) -> str:
    return CALL


asker.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["asker"]
"""

CALLS = {
    "workflow": 'workflow("w", inner, q)',
    "parallel": 'parallel({"only": (inner, (q,))})["only"]',
    "parallel_list": "parallel([lambda: inner(q)])[0]",
}


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return store_for(request, tmp_path)


def _fail_then_resume(
    folder: Path,
    server: OpenAIServer,
    store: str,
    program: str,
    replies: list[str],
    again: list[str],
) -> list[dict[str, Any]]:
    """Run ``program`` with ``replies`` then a failed reply, resume it with ``again``;
    the request bodies."""
    (folder / "prog.py").write_text(program, encoding="utf-8")
    for text in replies:
        server.reply_text(text)
    server.reply_error(400, "the model is warming up")
    code, out = _cli(folder, server, "run", "prog.py:asker", "--args", '{"q": "hi"}', store=store)
    assert code == 1 and "warming up" in out["error"], out
    for text in again:
        server.reply_text(text)
    code, out = _cli(folder, server, "resume", out["run_id"], store=store)
    assert code == 0 and out["result"] == "B", out
    return [r.json for r in server.requests]


def test_a_call_outside_steps_shows_once_after_a_resume(
    tmp_path: Path, openai_server: OpenAIServer, store: str
) -> None:
    bodies = _fail_then_resume(
        tmp_path, openai_server, store, NOTE_OUTSIDE_STEPS, ["A", "N"], ["N", "B"]
    )
    # first, note, second (failed) | note (again), second
    assert len(bodies) == 5
    assert bodies[4] == bodies[2]
    text = json.dumps(bodies[4])
    assert text.count("note on A") == 1  # the note shows once
    assert "assistant: A" in text and "warming up" not in text


@pytest.mark.parametrize("call", sorted(CALLS))
def test_completed_steps_of_a_failed_call_show_in_its_re_run(
    tmp_path: Path, openai_server: OpenAIServer, store: str, call: str
) -> None:
    program = INNER.replace("CALL", CALLS[call])
    bodies = _fail_then_resume(tmp_path, openai_server, store, program, ["A"], ["B"])
    assert len(bodies) == 3  # a, b (failed) | b
    text = json.dumps(bodies[2])
    assert "assistant: A" in text and "warming up" not in text  # step a, under the call
    assert bodies[2] == bodies[1]


def test_a_call_before_replayed_steps_keeps_its_place_after_a_resume(
    tmp_path: Path, openai_server: OpenAIServer, store: str
) -> None:
    assert NOTE_BEFORE_STEPS != NOTE_OUTSIDE_STEPS
    bodies = _fail_then_resume(
        tmp_path, openai_server, store, NOTE_BEFORE_STEPS, ["N", "A"], ["N", "B"]
    )
    # note, first, second (failed) | note (again; first replays), second
    assert len(bodies) == 5
    history = json.dumps(bodies[2])
    assert history.index("note on hi") < history.index("assistant: A")  # the first order
    assert bodies[4] == bodies[2]  # the resumed request is the first execution's


NOTES_BETWEEN_STEPS = NOTE_OUTSIDE_STEPS.replace(
    """    first = step("first", ask, q)
    note = annotate(first)  # a helper's model call, not a step: it runs again on resume
    return step("second", ask, q + " then " + note)""",
    """    note = annotate(q)  # runs again on resume, as the other annotate() calls
    first = step("first", ask, q)
    again = annotate(first)
    second = step("second", ask, again)
    third = step("third", ask, note)
    return step("fourth", ask, second + third)""",
)


def test_calls_between_replayed_steps_keep_their_places_after_a_resume(
    tmp_path: Path, openai_server: OpenAIServer, store: str
) -> None:
    # note, first, again, second, third, fourth (failed) | note, again (first, second,
    # third replay: only the note after the first, and fourth, say which replayed before)
    bodies = _fail_then_resume(
        tmp_path, openai_server, store, NOTES_BETWEEN_STEPS, ["N", "A", "M", "S", "T"],
        ["N", "M", "B"],
    )  # fmt: skip
    assert len(bodies) == 9
    history = json.dumps(bodies[5])
    places = [history.index(s) for s in ("note on hi", "assistant: A", "note on A", "assistant: S")]
    assert places == sorted(places) and "assistant: T" in history
    assert bodies[8] == bodies[5]


NOTE_BEFORE_CALL = """
from openprogram import parallel, step, workflow
from openprogram.agentic_programming import llm


def ask(q: str) -> str:
    return llm(q)


def annotate(text: str) -> str:
    return llm("note on " + text)  # noqa: OP206 (knowingly run again on resume)


def inner(q: str, note: str) -> str:
    first = step("first", ask, q)
    return step("second", ask, first + " then " + note)


def asker(q: str) -> str:
    note = annotate(q)
    return CALL


asker.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["asker"]
"""

NOTE_CALLS = {
    "workflow": 'workflow("w", inner, q, note)',
    "parallel": 'parallel({"only": (inner, (q, note))})["only"]',
    "parallel_list": "parallel([lambda: inner(q, note)])[0]",
}


@pytest.mark.parametrize("call", sorted(NOTE_CALLS))
def test_a_call_before_a_re_run_call_keeps_its_place_after_a_resume(
    tmp_path: Path, openai_server: OpenAIServer, store: str, call: str
) -> None:
    program = NOTE_BEFORE_CALL.replace("CALL", NOTE_CALLS[call])
    bodies = _fail_then_resume(tmp_path, openai_server, store, program, ["N", "A"], ["N", "B"])
    # note, first, second (failed) | note (again; first replays), second
    assert len(bodies) == 5
    history = json.dumps(bodies[2])
    assert history.index("note on hi") < history.index("assistant: A")
    assert bodies[4] == bodies[2]


# -- what a resumed execution writes --------------------------------------------------------
# Only the first node written after a replay says which call replayed before it; the
# nodes after it follow by seq and carry nothing of it, so a resumed run's later steps
# commit as a first execution's do (metadata '{}' until their exit adds duration_s).

STEPS_AFTER_A_REPLAY = """
import os

from openprogram import step

HERE = os.path.dirname(os.path.abspath(__file__))


def inc(i: int) -> int:
    if i == 1 and os.path.exists(os.path.join(HERE, "fail")):
        raise RuntimeError("injected failure")
    return i


def main(n: int) -> int:
    step("prep", inc, 0)
    total = 0
    for i in range(1, n + 1):
        total += step("s", inc, i)
    return total


main.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["main"]
"""


def test_only_the_first_node_after_a_replay_is_marked(tmp_path: Path, store: str) -> None:
    (tmp_path / "prog.py").write_text(STEPS_AFTER_A_REPLAY, encoding="utf-8")
    (tmp_path / "fail").touch()

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [OPENPROGRAM, *args, "--store", store],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
            env=env(),
        )

    out = json.loads(cli("run", "prog.py:main", "--args", '{"n": 4}', "--json").stdout)
    assert out["status"] == "failed" and "injected failure" in out["error"], out
    run_id = out["run_id"]
    (tmp_path / "fail").unlink()
    out = json.loads(cli("resume", run_id, "--json").stdout)
    assert out["status"] == "completed" and out["result"] == 10, out

    shown = cli("show", run_id, "--format", "json")
    assert shown.returncode == 0, shown.stderr
    nodes = json.loads(shown.stdout)["nodes"]
    entries = [n for n in nodes if n["caller_id"] is None]
    assert len(entries) == 2 and entries[1]["metadata"].get("resumes") is True
    resumed = [n for n in nodes if n["caller_id"] == entries[1]["id"]]
    # prep replayed (no node); s#0..s#3 ran
    assert [n["step_key"] for n in resumed] == ["s#0", "s#1", "s#2", "s#3"]
    assert all(n["status"] == "completed" for n in resumed)
    assert resumed[0]["metadata"]["after_replay"] == "prep#0"
    for n in resumed[1:]:  # '{}' as written, then the exit's duration
        assert n["metadata"] == {"duration_s": n["metadata"]["duration_s"]}, n
