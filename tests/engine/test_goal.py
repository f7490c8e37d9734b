"""``goal(objective, ...)``: agent turns toward an objective until a recorded decision
judges it met, bounded by ``max_iterations``; exported and injected in Planner code
(issue 11, item 13). The model is a loopback server speaking the OpenAI wire format."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from loopback import OpenAIServer

from openprogram import Agent, Context, goal
from openprogram.programs.workflow import injected_names, run_workflow_code
from openprogram.runtime import create_runtime

OPENPROGRAM = str(Path(sys.executable).parent / "openprogram")


def verdict(answer: str) -> str:
    return f'Judging.\n```json\n{{"call": "{answer}"}}\n```'


def _texts(server: OpenAIServer) -> list[str]:
    return [json.dumps(r.json["messages"]) for r in server.requests]


def test_goal_stops_when_the_decision_judges_it_met(openai_server: OpenAIServer) -> None:
    rt = create_runtime("openai:loop", base_url=openai_server.base_url)
    openai_server.reply_text("draft one")
    openai_server.reply_text(verdict("no"))
    openai_server.reply_text("draft two")
    openai_server.reply_text(verdict("yes"))
    try:
        result = goal("Write a two-line poem about tests", max_iterations=4, tools=[], runtime=rt)
    finally:
        rt.close()
    assert result == "draft two"
    texts = _texts(openai_server)
    assert len(texts) == 4  # two turns, two judgements; no third turn after "yes"
    assert "Objective: Write a two-line poem about tests" in texts[0]
    assert "The objective is met" in texts[1] and "draft one" in texts[1]
    assert "draft one" in texts[2]  # the next turn sees the previous attempt


def test_goal_is_bounded_by_max_iterations(openai_server: OpenAIServer) -> None:
    rt = create_runtime("openai:loop", base_url=openai_server.base_url)
    openai_server.reply_text("first")
    openai_server.reply_text(verdict("no"))
    openai_server.reply_text("second")
    try:
        assert goal("Reach 100% coverage", max_iterations=2, tools=[], runtime=rt) == "second"
    finally:
        rt.close()
    assert len(openai_server.requests) == 3  # the last turn is not judged


def test_goal_is_injected_in_planner_code(openai_server: OpenAIServer) -> None:
    assert "goal" in injected_names()
    rt = create_runtime("openai:loop", base_url=openai_server.base_url)
    openai_server.reply_text("apple, pear")
    openai_server.reply_text(verdict("no"))
    openai_server.reply_text("apple, pear, plum")
    openai_server.reply_text(verdict("yes"))
    code = 'def workflow():\n    return goal("List three fruits", max_iterations=3)\n'
    try:
        assert run_workflow_code(code, runtime=rt) == "apple, pear, plum"
    finally:
        rt.close()


def test_goal_in_a_program_run_from_the_cli(tmp_path: Path, openai_server: OpenAIServer) -> None:
    program = (
        "import openprogram as op\n\n\n"
        "def plan(topic: str) -> str:\n"
        '    return op.goal("Outline a talk about " + topic, max_iterations=3, tools=[])\n\n\n'
        'PROGRAM_ENTRIES = ["plan"]\n'
    )
    (tmp_path / "talk.py").write_text(program, encoding="utf-8")
    openai_server.reply_text("1. intro")
    openai_server.reply_text(verdict("yes"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENPROGRAM_", "OPENAI_"))}
    env["OPENAI_BASE_URL"] = openai_server.base_url
    proc = subprocess.run(
        [
            *(OPENPROGRAM, "run", "talk.py:plan", "--args", '{"topic": "durability"}'),
            *("--model", "openai:loop", "--store", "st", "--json"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )
    out = json.loads(proc.stdout)
    assert out["status"] == "completed" and out["result"] == "1. intro", proc.stderr
    assert len(openai_server.requests) == 2


class Editor(Agent):
    instructions = "You are the HOUSE-STYLE editor."
    tools = []

    def polish(self, text: str) -> str:
        """Polish a text until it reads well."""
        return goal(f"Polish: {text}", max_iterations=2)


def test_goal_in_an_agent_method_sends_its_instructions_and_context(
    openai_server: OpenAIServer,
) -> None:
    rt = create_runtime("openai:loop", base_url=openai_server.base_url)
    openai_server.reply_text("draft one")
    openai_server.reply_text(verdict("no"))
    openai_server.reply_text("draft two")
    editor = Editor(runtime=rt, context=Context({"style": "SHORT-SENTENCES"}))
    try:
        assert editor.polish("hello") == "draft two"
    finally:
        rt.close()
    bodies = [r.json for r in openai_server.requests]
    assert len(bodies) == 3  # turn, judgement, last turn
    for body in bodies:  # the work turns as well as the judgement
        assert body["messages"][0] == {
            "role": "system",
            "content": "You are the HOUSE-STYLE editor.",
        }
        assert "SHORT-SENTENCES" in json.dumps(body["messages"][1:])
