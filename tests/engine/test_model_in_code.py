"""A model named in code needs no default model configured (README: settings resolve as
class defaults < ``Agent(...)`` arguments < call arguments; a local OpenAI-compatible
server needs only ``OPENAI_BASE_URL``). Each case runs as a user's script in a process
with no ``OPENPROGRAM_MODEL``, no pyproject and no API key, against a loopback server
speaking the OpenAI wire format."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from loopback import OpenAIServer

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """\
from openprogram import Agent, agent, decision, llm


def refund() -> str:
    \"\"\"Refund the customer.\"\"\"
    return "refunded"


class Support(Agent):
    model = "openai:llama3"
    tools = []

    def triage(self, ticket: str) -> str:
        \"\"\"A decision first: the Agent's own model serves it.\"\"\"
        return decision.make(f"Handle: {ticket}", {"refund": refund})


print(Support().triage("broken"))
print(Agent(model="openai:llama3", tools=[])("hi"))
print(agent("hi", model="openai:llama3", tools=[]))
print(llm("hi", model="openai:llama3"))
"""


def run_script(tmp_path: Path, base_url: str, script: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "app.py").write_text(script, encoding="utf-8")
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OPENPROGRAM_MODEL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY")
    }
    env["OPENAI_BASE_URL"] = base_url
    env["PYTHONPATH"] = os.pathsep.join(str(ROOT / p) for p in ("engine", "analyzers", "lsp"))
    return subprocess.run(
        [sys.executable, "app.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_models_named_in_code_run_without_a_default(
    tmp_path: Path, openai_server: OpenAIServer
) -> None:
    openai_server.reply_text('{"call": "refund"}')
    for text in ("one", "two", "three"):
        openai_server.reply_text(text)
    done = run_script(tmp_path, openai_server.base_url, SCRIPT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["refunded", "one", "two", "three"]
    assert [r.json["model"] for r in openai_server.requests] == ["llama3"] * 4


def test_a_decision_in_an_agent_method_goes_to_the_agents_model(
    tmp_path: Path, openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a default configured elsewhere, the Agent's model still decides."""
    openai_server.reply_text('{"call": "refund"}')
    script = textwrap.dedent(SCRIPT).split("print(Agent(")[0]
    (tmp_path / "pyproject.toml").write_text(
        '[tool.openprogram]\nmodel = "openai:default-model"\n', encoding="utf-8"
    )
    done = run_script(tmp_path, openai_server.base_url, script)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["refunded"]
    assert [r.json["model"] for r in openai_server.requests] == ["llama3"]


def test_no_model_anywhere_is_the_error_that_says_how_to_configure_one(
    tmp_path: Path, openai_server: OpenAIServer
) -> None:
    done = run_script(tmp_path, openai_server.base_url, 'from openprogram import llm\nllm("hi")\n')
    assert done.returncode == 1
    assert "no model configured" in done.stderr
    assert openai_server.requests == []
