"""History after ``parallel`` does not depend on how the branches' threads interleaved.

A user's Program asks two questions side by side, then sums up. Which branch is slow is
set from outside (``SLOW``), so the branches commit their nodes in opposite orders in the
two runs. The model is the loopback OpenAI-wire server (``tests/engine/loopback.py``),
answering by content so the order of arrival does not matter; runs go through
``openprogram run`` in a subprocess. In process: what a request inside a branch sees, and
the call order of nested and consecutive ``parallel`` calls.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import agent_server
import pytest
from agent_server import ChatServer, history_block
from loopback import OpenAIServer, Received, Reply, prompt_parts

from openprogram import Agent, parallel
from openprogram.branches import current_branch
from openprogram.history import call_order, render_history
from openprogram.runtime import Runtime
from openprogram.scope import use_writer
from openprogram.store import Node, SessionNodeWriter, SessionStore
from openprogram.store.sqlite import SqliteBackend

# fixtures shared by the Agent/llm/registry tests (tests/engine/agent_server.py)
_restore_registry = agent_server._restore_registry
chat = agent_server.chat
rt = agent_server.rt
store = agent_server.store
writer = agent_server.writer

SURVEY = """
import os
import time as t

from openprogram import Agent, parallel


class Survey(Agent):
    tools = []

    def ask(self, topic: str) -> str:
        \"\"\"One word about a topic.\"\"\"
        if topic == os.environ.get("SLOW"):
            t.sleep(0.6)  # the other branch commits all its nodes first
        return self(f"One word about {topic}")

    def report(self) -> str:
        \"\"\"Ask about two topics side by side, then sum them up.\"\"\"
        words = parallel([lambda: self.ask("sea"), lambda: self.ask("sky")])
        return self(f"Sum up {' and '.join(words)}")


report = Survey().report
PROGRAM_ENTRIES = ["report"]
"""

WORDS = {"sea": "waves", "sky": "clouds"}


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    srv = OpenAIServer()

    def answer(received: Received) -> Reply:
        """Answers by content, so either arrival order gets the same replies."""
        content = received.json["messages"][-1]["content"]
        text = prompt_parts(content)[-1]  # after <history>
        word = next((w for t, w in WORDS.items() if f"One word about {t}" in text), "calm")
        body = json.dumps(srv.text_payload(word)).encode()
        return Reply(200, body, {"content-type": "application/json"})

    srv.reply_with(*[answer] * 20)
    yield srv
    srv.close()


def run_cli(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("OPENPROGRAM_", "SLOW"))}
    full.update(env)
    return subprocess.run(
        [sys.executable, "-m", "openprogram.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=full,
    )


def _last_request(server: OpenAIServer, since: int) -> bytes:
    bodies = [r.body for r in server.requests[since:]]
    assert len(bodies) == 3, [b[:200] for b in bodies]
    final = [b for b in bodies if b"Sum up" in b]
    assert len(final) == 1
    return final[0]


def test_prompt_after_parallel_is_the_same_whichever_branch_finishes_first(
    server: OpenAIServer, tmp_path: Path
) -> None:
    (tmp_path / "survey.py").write_text(SURVEY, encoding="utf-8")
    cassette = tmp_path / "survey.jsonl"
    model = {"OPENPROGRAM_MODEL": "openai:m", "OPENAI_BASE_URL": server.base_url}

    sea_last = run_cli(
        "run", "survey.py:report", "--store", "st", "--json", cwd=tmp_path, SLOW="sea",
        OPENPROGRAM_RECORD_TO=str(cassette), **model,
    )  # fmt: skip
    assert sea_last.returncode == 0, sea_last.stderr
    first = _last_request(server, 0)
    sky_last = run_cli(
        "run", "survey.py:report", "--store", "st", "--json", cwd=tmp_path, SLOW="sky", **model
    )
    assert sky_last.returncode == 0, sky_last.stderr
    second = _last_request(server, 3)

    assert json.loads(sea_last.stdout)["result"] == json.loads(sky_last.stdout)["result"] == "calm"
    assert first == second  # byte for byte, although the branches committed in opposite orders
    # `openprogram show` nests the run in the same order: branch 0, then branch 1
    shown = run_cli("show", json.loads(sea_last.stdout)["run_id"], "--store", "st", cwd=tmp_path)
    names = [line.split("[")[0].split()[-1] for line in shown.stdout.splitlines()[1:] if line]
    assert names == ["report", "parallel", "ask", "m", "parallel", "ask", "m", "m"], shown.stdout
    assert shown.stdout.index("parallel[0]") < shown.stdout.index("parallel[1]")
    # branch 0's subtree, then branch 1's, each contiguous, in call order
    history = prompt_parts(json.loads(first)["messages"][-1]["content"])[0]
    assert history == (
        "<history>\n"
        "parallel[0](branch=0) -> \"waves\"\n"
        "  # One word about a topic.\n"
        "  ask(topic=\"sea\") -> \"waves\"\n"
        "    user: One word about sea\n"
        "    assistant: waves\n"
        "parallel[1](branch=1) -> \"clouds\"\n"
        "  # One word about a topic.\n"
        "  ask(topic=\"sky\") -> \"clouds\"\n"
        "    user: One word about sky\n"
        "    assistant: clouds\n"
        "</history>"
    )  # fmt: skip

    # recorded with sea last, replayed with sky last: every request matches its recording
    replayed = run_cli(
        "run", "survey.py:report", "--store", "st", "--json", cwd=tmp_path, SLOW="sky",
        OPENPROGRAM_MODEL=f"replay:{cassette}",
    )  # fmt: skip
    out = json.loads(replayed.stdout)
    assert out["status"] == "completed", out.get("error") or replayed.stderr
    assert out["result"] == "calm"
    assert len(server.requests) == 6  # replay made no model request


DURABLE_SURVEY = """
import os
import time as t

from openprogram import agent, parallel, step
from openprogram.durable import resumable


def ask(topic: str) -> str:
    if topic == os.environ.get("SLOW"):
        t.sleep(0.6)
    return agent(f"One word about {topic}", tools=[])


def survey(topic: str) -> str:
    return step("ask", ask, topic)


def sum_up(words: dict) -> str:
    return agent(f"Sum up {words['sea']} and {words['sky']}", tools=[])


@resumable
def report() -> str:
    words = parallel({"sea": (survey, ("sea",), {}), "sky": (survey, ("sky",), {})})
    return step("sum", sum_up, words)


PROGRAM_ENTRIES = ["report"]
"""


def test_durable_parallel_then_a_model_call_replays_with_the_opposite_timing(
    server: OpenAIServer, tmp_path: Path
) -> None:
    (tmp_path / "durable_survey.py").write_text(DURABLE_SURVEY, encoding="utf-8")
    cassette = tmp_path / "survey.jsonl"
    model = {"OPENPROGRAM_MODEL": "openai:m", "OPENAI_BASE_URL": server.base_url}
    bodies = []
    for slow, record in (("sea", {"OPENPROGRAM_RECORD_TO": str(cassette)}), ("sky", {})):
        done = run_cli(
            "run", "durable_survey.py:report", "--store", "st", "--json", cwd=tmp_path,
            SLOW=slow, **model, **record,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["result"] == "calm"
        bodies.append(_last_request(server, len(server.requests) - 3))
    assert bodies[0] == bodies[1]
    assert prompt_parts(json.loads(bodies[0])["messages"][-1]["content"])[0] == (
        "<history>\n"
        "report() -> (running)\n"
        "  sea(args=[\"sea\"], kwargs={}) -> \"waves\"\n"
        "    ask(args=[\"sea\"], kwargs={}) -> \"waves\"\n"
        "      user: One word about sea\n"
        "      assistant: waves\n"
        "  sky(args=[\"sky\"], kwargs={}) -> \"clouds\"\n"
        "    ask(args=[\"sky\"], kwargs={}) -> \"clouds\"\n"
        "      user: One word about sky\n"
        "      assistant: clouds\n"
        "</history>"
    )  # fmt: skip

    replayed = run_cli(
        "run", "durable_survey.py:report", "--store", "st", "--json", cwd=tmp_path,
        SLOW="sky", OPENPROGRAM_MODEL=f"replay:{cassette}",
    )  # fmt: skip
    out = json.loads(replayed.stdout)
    assert out["status"] == "completed", out.get("error") or replayed.stderr
    assert out["result"] == "calm"
    assert len(server.requests) == 6  # replay made no model request


# ------------------------------------------------------------------ in process


class Pair(Agent):
    tools = []

    def ask(self, topic: str) -> str:
        """One word about a topic."""
        return self(f"One word about {topic}")

    def both(self) -> str:
        """Two topics side by side."""
        self("Warm up")
        sea_done = threading.Event()

        def sea() -> str:
            try:
                return self.ask("sea")
            finally:
                sea_done.set()

        def sky() -> str:
            sea_done.wait(60)  # sea has written all its nodes when sky asks
            return self.ask("sky")

        words = parallel([sea, sky])
        return self(f"Sum up {' and '.join(words)}")


def test_a_branch_sees_its_callers_and_its_own_branch_not_the_branch_beside_it(
    chat: ChatServer, rt: Runtime, writer: SessionNodeWriter
) -> None:
    def answer(body: dict[str, Any]) -> str:
        content = body["messages"][-1]["content"]
        text = prompt_parts(content)[-1]  # after <history>
        return next((w for t, w in WORDS.items() if text == f"One word about {t}"), "calm")

    chat.default = answer
    with use_writer(writer):
        assert Pair(runtime=rt).both() == "calm"
    prompts = {texts[-1]: history_block(texts) for texts in map(chat.user_texts, range(4))}
    caller = "# Two topics side by side.\nboth() -> (running)\n  user: Warm up\n  assistant: calm\n"
    for index, topic in enumerate(WORDS):
        assert prompts[f"One word about {topic}"] == (
            caller + f"  parallel[{index}](branch={index}) -> (running)"
        )
    assert prompts["Sum up waves and clouds"] == (
        "user: Warm up\nassistant: calm\n"
        'parallel[0](branch=0) -> "waves"\n'
        '  # One word about a topic.\n  ask(topic="sea") -> "waves"\n'
        "    user: One word about sea\n    assistant: waves\n"
        'parallel[1](branch=1) -> "clouds"\n'
        '  # One word about a topic.\n  ask(topic="sky") -> "clouds"\n'
        "    user: One word about sky\n    assistant: clouds"
    )


class PausingBackend(SqliteBackend):
    """The SQLite store, except that the first read of the session's nodes made inside
    branch 0 waits, once it has read them, until the Program says branch 1 has written
    a node: the moment a request's history is assembled is stretched, and the other
    branch writes into it, deterministically."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.sea_reading = threading.Event()
        self.sky_wrote = threading.Event()

    def list_nodes(self, session_id: str) -> list[Node]:
        nodes = super().list_nodes(session_id)
        if current_branch() == "parallel[0]" and not self.sea_reading.is_set():
            self.sea_reading.set()
            assert self.sky_wrote.wait(60)
        return nodes


class Race(Agent):
    tools = []

    def __init__(self, backend: PausingBackend, sea_first: bool, **kw: Any) -> None:
        super().__init__(**kw)
        self.backend = backend
        self.sea_first = sea_first
        self.sky_done = threading.Event()

    def ask(self, topic: str) -> str:
        """One word about a topic."""
        if topic == "sky":
            self.backend.sky_wrote.set()  # this call's node is written
        return self(f"One word about {topic}")

    def both(self) -> str:
        """Two topics side by side."""
        self("Warm up")

        def sea() -> str:
            if not self.sea_first:
                assert self.sky_done.wait(60)  # sky has asked and written all its nodes
            return self.ask("sea")

        def sky() -> str:
            if self.sea_first:
                assert self.backend.sea_reading.wait(60)  # sea's request is reading the session
            try:
                return self.ask("sky")
            finally:
                self.sky_done.set()

        words = parallel([sea, sky])
        return self(f"Sum up {' and '.join(words)}")


@pytest.mark.parametrize(
    "sea_first", [True, False], ids=["sky-writes-while-sea-asks", "sea-asks-last"]
)
def test_a_branch_request_sees_its_callers_whatever_the_other_branch_writes_meanwhile(
    chat: ChatServer, rt: Runtime, tmp_path: Path, sea_first: bool
) -> None:
    """Branch 0 asks while branch 1 writes a node between the reads that assemble branch
    0's history, or after branch 1 has finished: both requests carry the same history."""
    chat.default = "calm"
    backend = PausingBackend(tmp_path / "paused.db")
    with SessionStore(backend=backend) as paused:
        paused.create_session("s1")
        with use_writer(SessionNodeWriter(paused, "s1")):
            assert Race(backend, sea_first, runtime=rt).both() == "calm"
    assert backend.sea_reading.is_set() and backend.sky_wrote.is_set()
    prompts = {texts[-1]: history_block(texts) for texts in map(chat.user_texts, range(4))}
    caller = "# Two topics side by side.\nboth() -> (running)\n  user: Warm up\n  assistant: calm\n"
    for index, topic in enumerate(WORDS):
        assert prompts[f"One word about {topic}"] == (
            caller + f"  parallel[{index}](branch={index}) -> (running)"
        )


def test_call_order_places_each_parallel_call_where_it_ran(writer: SessionNodeWriter) -> None:
    """Two parallel calls in a row, one nested in a branch; nodes written in a scrambled order."""
    main = writer.append("code", "main", input={}, status="completed", output=0)

    def node(name: str, *forks: tuple[str, int], caller: str = main.id) -> str:
        meta = {"forks": [list(f) for f in forks]} if forks else {}
        made = writer.append("code", name, input={}, caller_id=caller, metadata=meta)
        writer.update(made.id, status="completed", output=name)
        return made.id

    a1 = node("a1", ("A", 1))
    a0 = node("a0", ("A", 0))
    node("c1", ("A", 1), ("C", 1), caller=a1)
    node("c0", ("A", 1), ("C", 0), caller=a1)
    node("a1_after", ("A", 1), caller=a1)
    node("a0_child", ("A", 0), caller=a0)
    node("mid")
    node("b1", ("B", 1))
    node("b0", ("B", 0))
    nodes = writer.load_branch()
    assert [n.name for n in call_order(nodes)] == [
        "main", "a0", "a0_child", "a1", "c0", "c1", "a1_after", "mid", "b0", "b1",
    ]  # fmt: skip
    # seen from inside branch C[0] of branch A[1]: not A[0], not C[1]
    seen = render_history(nodes, viewer_forks=[("A", 1), ("C", 0)])
    assert [line.strip().split("(")[0] for line in seen.splitlines()] == [
        "main", "a1", "c0", "a1_after", "mid", "b0", "b1",
    ]  # fmt: skip
