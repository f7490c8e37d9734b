"""``@agentic_function``: a module-level function gets an Agent method's call scope and
the same option table, runtime errors and lint findings (issue 11, item 15)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from loopback import OpenAIServer

from openprogram import Agent, agentic_function
from openprogram.agentic_programming import llm
from openprogram.programs import REGISTRY
from openprogram.store import SessionStore

OPENPROGRAM = str(Path(sys.executable).parent / "openprogram")

PROGRAM = '''
from openprogram import agentic_function as af
from openprogram.agentic_programming import llm


@af(expose="io", render_range={"callers": 0, "subcalls": -1})
def summarize(text: str) -> str:
    """Summarize a text in one line."""
    return llm("Summarize: " + text)


@af
def pipeline(text: str) -> str:
    """Run the summary twice."""
    first = summarize(text)
    return summarize(first)


PROGRAM_ENTRIES = ["pipeline"]
'''


def test_function_records_code_and_llm_nodes_like_a_method(
    tmp_path: Path, openai_server: OpenAIServer
) -> None:
    (tmp_path / "summaries.py").write_text(PROGRAM, encoding="utf-8")
    openai_server.reply_text("short")
    openai_server.reply_text("shorter")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENPROGRAM_", "OPENAI_"))}
    env["OPENAI_BASE_URL"] = openai_server.base_url
    proc = subprocess.run(
        [
            *(OPENPROGRAM, "run", "summaries.py:pipeline", "--args", '{"text": "a long text"}'),
            *("--model", "openai:loop-model", "--store", "st", "--json"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )
    out = json.loads(proc.stdout)
    assert out["status"] == "completed" and out["result"] == "shorter", proc.stderr
    store = SessionStore(root_path=tmp_path / "st")
    try:
        nodes = store.list_nodes(out["run_id"])
    finally:
        store.close()
    by_id = {n.id: n for n in nodes}
    summaries = [n for n in nodes if n.kind == "code" and n.name == "summarize"]
    llm_nodes = [n for n in nodes if n.kind == "llm"]
    assert [n.output for n in summaries] == ["short", "shorter"]
    assert len(llm_nodes) == 2
    for summary, llm_node in zip(summaries, llm_nodes, strict=True):
        assert by_id[summary.caller_id or ""].name == "pipeline"  # called by pipeline
        assert llm_node.caller_id == summary.id  # the model call belongs to summarize
        assert summary.metadata["doc"] == "Summarize a text in one line."
    # render_range callers=0: the second summary's prompt holds none of the first call
    second = openai_server.requests[1].json["messages"]
    assert "a long text" not in str(second)


def test_same_option_errors_as_method_options() -> None:
    with pytest.raises(ValueError) as method_error:

        class Bad(Agent):
            method_options = {"f": {"expose": "everything"}}

            def f(self) -> None:
                pass

    with pytest.raises(ValueError) as function_error:

        @agentic_function(expose="everything")  # noqa: OP104 (the error under test)
        def f() -> None:
            pass

    code, message = str(method_error.value).split(" (in class")[0].split(" ", 1)
    assert code == "OP104"
    assert str(function_error.value).startswith(f"{code} {message} (in function ")
    with pytest.raises(ValueError, match=r"^OP106 'timeout' is a tool-only option"):

        @agentic_function(timeout=3)  # noqa: OP106 (the error under test)
        def g() -> None:
            pass


def test_tool_option_registers_and_dispatches(openai_server: OpenAIServer) -> None:
    seen: list[str] = []

    @agentic_function(tool=True, register_globally=False)
    def lookup(city: str) -> str:
        """Look up the weather of a city."""
        seen.append(city)
        return f"sunny in {city}"

    assert lookup.spec["name"] == "lookup"
    assert lookup.spec["parameters"]["properties"]["city"]["type"] == "string"
    assert "lookup" not in REGISTRY.names()
    assert lookup.execute(city="Oslo") == "sunny in Oslo" and seen == ["Oslo"]


def test_runtime_is_bound_inside_the_scope(openai_server: OpenAIServer) -> None:
    from openprogram.runtime import create_runtime

    rt = create_runtime("openai:m", base_url=openai_server.base_url)
    openai_server.reply_text("ok")

    @agentic_function
    def ask(question: str, runtime: object = None) -> str:
        assert runtime is rt  # injected from the caller's runtime, hidden from the inputs
        return llm(question)

    class Host(Agent):
        def run(self) -> str:
            return ask("hi")

    assert Host(runtime=rt).run() == "ok"
    rt.close()


def test_lint_reports_decorator_arguments_with_the_runtime_message(tmp_path: Path) -> None:
    source = (
        "from openprogram import agentic_function\n\n\n"
        '@agentic_function(expose="everything")\n'
        "def f() -> None:\n    pass\n"
    )
    path = tmp_path / "prog.py"
    path.write_text(source, encoding="utf-8")
    proc = subprocess.run(
        [OPENPROGRAM, "lint", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    run = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    runtime_line = run.stderr.strip().splitlines()[-1]
    raised = "openprogram.errors.RuleViolation: "  # a ValueError: `except ValueError` holds
    assert runtime_line.startswith(raised + "OP104 "), runtime_line
    message = runtime_line.removeprefix(raised).split(" (in function")[0]
    assert f"prog.py:4:26: {message}" in proc.stdout, proc.stdout
