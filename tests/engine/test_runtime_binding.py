"""Runtime binding (issue 11 items 1, 2, 17): every call and run has one runtime.

Resolution: call argument > the Agent's runtime > the enclosing call's > one created by
``create_runtime()`` for the outermost call (or the run) and closed when it returns. The
model is a loopback OpenAI-wire server configured through ``OPENPROGRAM_MODEL``; runs go
through ``openprogram run`` in a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import agent_server
import pytest
from agent_server import ChatServer, tool_call

from openprogram import Agent, agent, conditional, repeat_until, route, validate_and_retry
from openprogram.errors import ReplayMismatch
from openprogram.programs import function

_restore_registry = agent_server._restore_registry
chat = agent_server.chat


@pytest.fixture
def configured(chat: ChatServer, monkeypatch: pytest.MonkeyPatch) -> ChatServer:
    for key in list(os.environ):
        if key.startswith(("OPENPROGRAM_", "OPENAI_", "ANTHROPIC_")):
            monkeypatch.delenv(key)
    monkeypatch.setenv("OPENPROGRAM_MODEL", "openai:test-model")
    monkeypatch.setenv("OPENAI_BASE_URL", chat.base_url)
    return chat


def yes_no(answer: str) -> str:
    return f'```json\n{{"call": "{answer}"}}\n```'


def run_cli(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("OPENPROGRAM_")}
    full.update(env)
    return subprocess.run(
        [sys.executable, "-m", "openprogram.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=full,
    )


# ------------------------------------------------------------------ item 1


class Writer(Agent):
    tools = []

    def draft(self, topic: str) -> str:
        return self(f"Write about {topic}")

    def judged(self, topic: str) -> str:
        return validate_and_retry(lambda: self.draft(topic), "mentions the topic")


def test_control_flow_inside_a_method_of_an_agent_built_without_runtime(
    configured: ChatServer,
) -> None:
    configured.reply("first draft", yes_no("no"), "second draft", yes_no("yes"))
    assert Writer().judged("owls") == "second draft"
    assert len(configured.requests) == 4


def test_top_level_control_flow_without_a_runtime(configured: ChatServer) -> None:
    configured.reply(
        "draft", yes_no("yes"),  # validate_and_retry
        yes_no("phased"),  # route
        yes_no("no"),  # conditional
        "r1", yes_no("no"), "r2", yes_no("yes"),  # repeat_until
    )  # fmt: skip
    assert validate_and_retry(lambda: agent("draft it", tools=[]), "is a draft") == "draft"
    assert route("Which plan?", ["direct", "phased"]) == "phased"
    assert conditional("it is urgent", "a note", lambda: "now", lambda: "later") == "later"
    assert repeat_until(lambda: agent("again", tools=[]), "is r2", max_rounds=3) == "r2"
    assert len(configured.requests) == 8


def test_one_runtime_per_outermost_call_closed_when_it_returns(configured: ChatServer) -> None:
    seen: list[Any] = []

    @function
    def probe(runtime: Any) -> str:
        """Report the runtime serving this call."""
        seen.append(runtime)
        return "probed"

    class Pair(Agent):
        tools = [probe]

        def both(self) -> list[str]:
            return [self("one"), self("two")]

    configured.reply(tool_call("probe", {}), "a", tool_call("probe", {}), "b")
    assert Pair().both() == ["a", "b"]
    assert len(seen) == 2 and seen[0] is seen[1]  # one runtime for the whole outer call
    with pytest.raises(Exception, match="is closed"):
        seen[0].exec("after the call returned")

    configured.reply("c")
    own = agent_server.ChatServer.runtime(configured)
    try:  # the Agent's runtime wins over the created one
        assert Pair(runtime=own)("direct") == "c"
        assert own.last_result is not None and own.last_result.text == "c"
    finally:
        own.close()


# ------------------------------------------------------------------ item 2

REPEAT = """
from openprogram import Agent


class Asker(Agent):
    tools = []

    def twice(self) -> list:
        return [self("Pick a number"), self("Pick a number")]


twice = Asker().twice
PROGRAM_ENTRIES = ["twice"]
"""


def test_replay_is_consumed_in_order_across_a_run(chat: ChatServer, tmp_path: Path) -> None:
    (tmp_path / "asker.py").write_text(REPEAT, encoding="utf-8")
    cassette = tmp_path / "run.jsonl"
    chat.reply("3", "5")
    recorded = run_cli(
        "run", "asker.py:twice", "--store", "st", "--json", cwd=tmp_path,
        OPENPROGRAM_MODEL="openai:m", OPENAI_BASE_URL=chat.base_url,
        OPENPROGRAM_RECORD_TO=str(cassette),
    )  # fmt: skip
    assert recorded.returncode == 0, recorded.stderr
    assert json.loads(recorded.stdout)["result"] == ["3", "5"]
    assert len(cassette.read_text().splitlines()) == 2

    replayed = run_cli(
        "run", "asker.py:twice", "--store", "st", "--json", cwd=tmp_path,
        OPENPROGRAM_MODEL=f"replay:{cassette}",
    )  # fmt: skip
    assert replayed.returncode == 0, replayed.stderr
    assert json.loads(replayed.stdout)["result"] == ["3", "5"]
    assert len(chat.requests) == 2  # replay made no model request

    lines = cassette.read_text().splitlines()
    cassette.write_text(lines[0] + "\n", encoding="utf-8")  # one recording for two requests
    short = run_cli(
        "run", "asker.py:twice", "--store", "st", "--json", cwd=tmp_path,
        OPENPROGRAM_MODEL=f"replay:{cassette}",
    )  # fmt: skip
    out = json.loads(short.stdout)
    assert out["status"] == "failed" and "ReplayMismatch" in out["error"]
    assert "no recording left" in out["error"]


def test_replay_across_top_level_calls_in_one_process(
    chat: ChatServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cassette = tmp_path / "calls.jsonl"
    monkeypatch.setenv("OPENPROGRAM_MODEL", "openai:m")
    monkeypatch.setenv("OPENAI_BASE_URL", chat.base_url)
    monkeypatch.setenv("OPENPROGRAM_RECORD_TO", str(cassette))
    chat.reply("3", "5")
    assert [agent("Pick a number", tools=[]) for _ in range(2)] == ["3", "5"]
    monkeypatch.delenv("OPENPROGRAM_RECORD_TO")
    monkeypatch.setenv("OPENPROGRAM_MODEL", f"replay:{cassette}")
    assert [agent("Pick a number", tools=[]) for _ in range(2)] == ["3", "5"]
    with pytest.raises(ReplayMismatch, match="no recording left"):
        agent("Pick a number", tools=[])


def test_replay_request_out_of_order_is_a_mismatch(
    chat: ChatServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cassette = tmp_path / "calls.jsonl"
    monkeypatch.setenv("OPENPROGRAM_MODEL", "openai:m")
    monkeypatch.setenv("OPENAI_BASE_URL", chat.base_url)
    monkeypatch.setenv("OPENPROGRAM_RECORD_TO", str(cassette))
    chat.reply("x")
    agent("First question", tools=[])
    monkeypatch.delenv("OPENPROGRAM_RECORD_TO")
    monkeypatch.setenv("OPENPROGRAM_MODEL", f"replay:{cassette}")
    with pytest.raises(ReplayMismatch, match="differs from the recording"):
        agent("Another question", tools=[])


ORDERED = """
from openprogram import Context, agent


def ask(order: str = "ab") -> list:
    alone = Context(history_filter=False)  # each request is the same wherever it is made
    return [agent(f"Question {q}", tools=[], context=alone) for q in order]


PROGRAM_ENTRIES = ["ask"]
"""


def test_replay_refuses_a_request_that_equals_a_later_recording(
    chat: ChatServer, tmp_path: Path
) -> None:
    (tmp_path / "asker.py").write_text(ORDERED, encoding="utf-8")
    cassette = tmp_path / "run.jsonl"
    chat.reply("A", "B")
    recorded = run_cli(
        "run", "asker.py:ask", "--store", "st", "--json", cwd=tmp_path,
        OPENPROGRAM_MODEL="openai:m", OPENAI_BASE_URL=chat.base_url,
        OPENPROGRAM_RECORD_TO=str(cassette),
    )  # fmt: skip
    assert json.loads(recorded.stdout)["result"] == ["A", "B"], recorded.stderr
    swapped = run_cli(
        "run", "asker.py:ask", "--args", '{"order": "ba"}', "--store", "st", "--json",
        cwd=tmp_path, OPENPROGRAM_MODEL=f"replay:{cassette}",
    )  # fmt: skip
    out = json.loads(swapped.stdout)
    assert out["status"] == "failed" and "ReplayMismatch" in out["error"], swapped.stderr
    assert "request #1 differs from the recording at" in out["error"]
    assert "expected: user message 'Question a'" in out["error"]
    assert "received: user message 'Question b'" in out["error"]
    assert "equals the later recording at" in out["error"]
    assert len(chat.requests) == 2  # replay made no model request


FAN_OUT = """
import os
import threading

import openprogram as op
from openprogram import Agent, Context


class Fan(Agent):
    tools = []

    def pick(self) -> str:
        return self("Pick a number", context=Context(history_filter=False))

    def fan(self) -> list:
        \"\"\"Two branches asking the same question; FAN_FIRST says which branch goes first.\"\"\"
        first = int(os.environ.get("FAN_FIRST", "0"))
        turn = [threading.Event(), threading.Event()]
        turn[first].set()

        def branch(i: int) -> list:
            turn[i].wait()
            try:
                return [self.pick(), self.pick()]
            finally:
                turn[1 - i].set()

        before = self.pick()
        both = op.parallel([lambda: branch(0), lambda: branch(1)])
        return [before, both, self.pick()]


fan = Fan().fan
PROGRAM_ENTRIES = ["fan"]
"""


def test_parallel_branches_replay_their_own_recordings_in_any_interleaving(
    chat: ChatServer, tmp_path: Path
) -> None:
    (tmp_path / "fan.py").write_text(FAN_OUT, encoding="utf-8")
    cassette = tmp_path / "fan.jsonl"
    chat.reply(*"123456")
    recorded = run_cli(
        "run", "fan.py:fan", "--store", "st", "--json", cwd=tmp_path,
        OPENPROGRAM_MODEL="openai:m", OPENAI_BASE_URL=chat.base_url,
        OPENPROGRAM_RECORD_TO=str(cassette),
    )  # fmt: skip
    assert recorded.returncode == 0, recorded.stderr
    assert json.loads(recorded.stdout)["result"] == ["1", [["2", "3"], ["4", "5"]], "6"]
    branches = [json.loads(line).get("branch", "") for line in cassette.read_text().splitlines()]
    assert branches == ["", "parallel[0]", "parallel[0]", "parallel[1]", "parallel[1]", ""]

    for first in ("1", "0"):  # branch 1 first: each branch still gets its own answers
        replayed = run_cli(
            "run", "fan.py:fan", "--store", "st", "--json", cwd=tmp_path,
            OPENPROGRAM_MODEL=f"replay:{cassette}", FAN_FIRST=first,
        )  # fmt: skip
        assert replayed.returncode == 0, replayed.stderr
        assert json.loads(replayed.stdout)["result"] == ["1", [["2", "3"], ["4", "5"]], "6"]
    assert len(chat.requests) == 6  # replay made no model request

    lines = cassette.read_text().splitlines()
    del lines[4]  # branch 1 recorded one request fewer
    cassette.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    short = run_cli(
        "run", "fan.py:fan", "--store", "st", "--json", cwd=tmp_path,
        OPENPROGRAM_MODEL=f"replay:{cassette}",
    )  # fmt: skip
    out = json.loads(short.stdout)
    assert out["status"] == "failed", short.stderr
    assert "in branch 'parallel[1]' has no recording left" in out["error"]


DURABLE_FAN = """
from openprogram import Context, agent, parallel, step
from openprogram.durable import resumable


def ask(topic: str) -> str:
    return agent(f"One word about {topic}", tools=[], context=Context(history_filter=False))


def survey(topic: str) -> list:
    return [step("first", ask, topic), step("second", ask, topic)]


@resumable
def fan() -> dict:
    return parallel({"sea": (survey, ("sea",), {}), "sky": (survey, ("sky",), {})})


PROGRAM_ENTRIES = ["fan"]
"""


def test_durable_parallel_branches_replay_from_their_own_streams(
    chat: ChatServer, tmp_path: Path
) -> None:
    (tmp_path / "durable_fan.py").write_text(DURABLE_FAN, encoding="utf-8")
    cassette = tmp_path / "fan.jsonl"
    chat.default = lambda body: str(body["messages"][-1]["content"]).split()[-1].upper()
    recorded = run_cli(
        "run", "durable_fan.py:fan", "--store", "st", "--json", cwd=tmp_path,
        OPENPROGRAM_MODEL="openai:m", OPENAI_BASE_URL=chat.base_url,
        OPENPROGRAM_RECORD_TO=str(cassette),
    )  # fmt: skip
    assert recorded.returncode == 0, recorded.stderr
    expected = {"sea": ["SEA", "SEA"], "sky": ["SKY", "SKY"]}
    assert json.loads(recorded.stdout)["result"] == expected
    branches = sorted(json.loads(line)["branch"] for line in cassette.read_text().splitlines())
    assert branches == ["parallel#0/sea#0"] * 2 + ["parallel#0/sky#0"] * 2

    replayed = run_cli(
        "run", "durable_fan.py:fan", "--store", "st2", "--json", cwd=tmp_path,
        OPENPROGRAM_MODEL=f"replay:{cassette}",
    )  # fmt: skip
    assert replayed.returncode == 0, replayed.stderr
    assert json.loads(replayed.stdout)["result"] == expected
    # the run's own llm nodes keep their branch too: `openprogram replay RUN` re-runs it
    again = run_cli("replay", json.loads(recorded.stdout)["run_id"], "--store", "st", "--json",
                    cwd=tmp_path)  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["matches"] is True
    assert len(chat.requests) == 4


# ------------------------------------------------------------------ item 17

ENTRY = """
from openprogram import Agent


class Greeter(Agent):
    tools = []

    def greet(self, name: str) -> str:
        \"\"\"Greet someone.\"\"\"
        return self(f"Greet {name}")


greet = Greeter().greet
PROGRAM_ENTRIES = ["greet"]
"""


def test_show_lists_a_method_entry_once(chat: ChatServer, tmp_path: Path) -> None:
    (tmp_path / "greeter.py").write_text(ENTRY, encoding="utf-8")
    chat.reply("Hello, Ada")
    env = {"OPENPROGRAM_MODEL": "openai:m", "OPENAI_BASE_URL": chat.base_url}
    ran = run_cli(
        "run", "greeter.py:greet", "--args", '{"name": "Ada"}', "--store", "st", "--json",
        cwd=tmp_path, **env,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    run_id = json.loads(ran.stdout)["run_id"]
    shown = run_cli("show", run_id, "--format", "json", "--store", "st", cwd=tmp_path, **env)
    assert shown.returncode == 0, shown.stderr
    nodes = json.loads(shown.stdout)["nodes"]
    code = [n for n in nodes if n["kind"] == "code"]
    (entry,) = code
    assert entry["name"] == "greet" and entry["output"] == "Hello, Ada"
    assert entry["metadata"]["doc"] == "Greet someone."
    (llm,) = [n for n in nodes if n["kind"] == "llm"]
    assert llm["caller_id"] == entry["id"]
