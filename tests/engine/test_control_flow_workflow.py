"""Planner workflows: static check, checkpointed reruns, and revision after failures."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from openprogram.programs.workflow import (
    PLANNER_INSTRUCTIONS,
    Checkpoint,
    WorkflowCheckError,
    WorkflowFailed,
    injected_names,
    plan_and_run,
    run_workflow_code,
)
from openprogram.runtime import Runtime, ScriptedProvider
from openprogram.runtime.types import ModelRequest
from openprogram.scope import use_writer
from openprogram.store import SessionNodeWriter, SessionStore
from openprogram_analyzers import check_planner_code


def last_user_text(request: ModelRequest) -> str:
    content = [m for m in request.messages if m.role == "user"][-1].content
    # the prompt itself is the last block (history/context blocks come before it)
    return content if isinstance(content, str) else content[-1].get("text", "")


class FakeModel:
    """Answers agent/llm prompts from a table and yes/no judgements by a keyword."""

    def __init__(
        self,
        answers: dict[str, str],
        planner: list[str] | None = None,
        yes_words: tuple[str, ...] = ("oauth",),
    ) -> None:
        self.answers = answers
        self.yes_words = yes_words
        self.planner = list(planner or [])
        self.prompts: list[str] = []
        self.planner_prompts: list[str] = []

    def __call__(self, request: ModelRequest) -> Any:
        text = last_user_text(request)
        if request.system == PLANNER_INSTRUCTIONS:
            self.planner_prompts.append(text)
            return self.planner.pop(0)
        self.prompts.append(text)
        if request.choices is not None and set(request.choices) == {"yes", "no"}:
            subject = re.search(r"\n(?:Result|Context):\n(.*)\n\nChoose", text, re.S)
            assert subject is not None
            holds = any(w in subject.group(1) for w in self.yes_words)
            return json.dumps({"call": "yes" if holds else "no"})
        if isinstance(request.choices, list):  # route
            return json.dumps({"call": request.choices[-1]})
        for key, answer in self.answers.items():
            if text.startswith(key):
                return answer
        return f"answer to {text[:30]}"


def runtime_for(model: FakeModel) -> tuple[Runtime, ScriptedProvider]:
    provider = ScriptedProvider(function=model)
    return Runtime(provider=provider), provider


# ------------------------------------------------------------------ static check


NAMES = injected_names()


NOT_AVAILABLE = "is not available to Planner code"
TOP_LEVEL = "only `def workflow():` may appear at top level"


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("def workflow():\n    return llm('x')\n", []),
        ("import os\ndef workflow():\n    return 1\n", [("OP210", 1, "imports are not allowed")]),
        (
            "def workflow():\n    from os import path\n    return path\n",
            [("OP210", 2, "imports are not allowed")],
        ),
        (
            "def workflow():\n    return open('f').read()\n",
            [("OP210", 2, "'open' " + NOT_AVAILABLE)],
        ),
        ("def workflow(task):\n    return task\n", [("OP210", 1, "must take no arguments")]),
        (
            "def workflow():\n    return 1\ndef workflow():\n    return 2\n",
            [("OP210", 3, "defined more than once")],
        ),
        ("x = 1\ndef workflow():\n    return x\n", [("OP210", 1, TOP_LEVEL)]),
        (
            "def main():\n    return 1\n",
            [("OP210", 1, "no `def workflow():` found"), ("OP210", 1, TOP_LEVEL)],
        ),
        (
            "def workflow():\n    return ().__class__\n",
            [("OP211", 2, "dunder attribute '__class__'")],
        ),
        ("def workflow(:\n", [("OP001", 2, "does not parse")]),  # at the end of input
        ("def workflow():\n    return agnet('x')\n", [("OP210", 2, "'agnet' " + NOT_AVAILABLE)]),
        ("def workflow():\n    return exec('1')\n", [("OP201", 2, "must not use exec()")]),
        ("async def workflow():\n    return 1\n", [("OP210", 1, "not async")]),
        ("@llm\ndef workflow():\n    return 1\n", [("OP210", 1, "must not be decorated")]),
    ],
)
def test_static_check(code: str, expected: list[tuple[str, int, str]]) -> None:
    found = check_planner_code(code, NAMES)
    assert [(f.code, f.line) for f in found] == [(c, line) for c, line, _ in expected]
    for f, (_, _, fragment) in zip(found, expected, strict=True):
        assert fragment in f.message, f.message
        assert f.column >= 1 and (f.end_line, f.end_column) > (f.line, f.column)


def test_static_check_suggests_the_injected_name() -> None:
    (problem,) = check_planner_code("def workflow():\n    return agnet('x')\n", NAMES)
    assert "did you mean 'agent'" in problem.message
    assert (problem.line, problem.column, problem.end_line, problem.end_column) == (2, 12, 2, 17)


def test_namespace_builtins_are_the_checked_builtins() -> None:
    from openprogram.programs.workflow import Checkpoint, _build_namespace
    from openprogram_analyzers.planner import WORKFLOW_BUILTINS

    ns = _build_namespace(Checkpoint())
    assert set(ns["__builtins__"]) == WORKFLOW_BUILTINS
    assert set(NAMES) <= set(ns)
    assert check_planner_code("def workflow():\n    return sorted(zip([1], [2]))\n", NAMES) == []


def test_rejected_code_never_runs() -> None:
    rt = Runtime(provider=ScriptedProvider.block())
    with pytest.raises(WorkflowCheckError, match="OP210 imports are not allowed"):
        run_workflow_code("import os\ndef workflow():\n    return llm('x')\n", runtime=rt)


# ------------------------------------------------------------------ checkpoints

V1 = """
def workflow():
    files = agent("find auth files")
    analysis = agent("analyse " + files)
    return int(llm("count modules in " + analysis))
"""
V2 = V1.replace('llm("count modules in "', 'llm("how many modules, as a number: "')


def test_rerun_calls_the_model_only_after_the_change() -> None:
    model = FakeModel({"find": "auth.py", "analyse": "deps", "count": "many", "how many": "3"})
    rt, provider = runtime_for(model)
    ckpt = Checkpoint()
    with pytest.raises(ValueError):
        run_workflow_code(V1, runtime=rt, checkpoint=ckpt)
    assert [e["fn"] for e in ckpt.entries] == ["agent", "agent", "llm"]
    assert ckpt.entries[0] == {
        "call_index": 0,
        "fn": "agent",
        "prompt": "find auth files",
        "args": "",
        "result": "auth.py",
    }
    before = len(provider.requests)
    assert run_workflow_code(V2, runtime=rt, checkpoint=ckpt) == 3
    new_prompts = [last_user_text(r) for r in provider.requests[before:]]
    assert new_prompts == ["how many modules, as a number: deps"]
    assert (ckpt.hits, ckpt.misses) == (2, 1)


def test_a_changed_early_call_reruns_everything_after_it() -> None:
    model = FakeModel({"find": "auth.py", "analyse": "deps", "how many": "3"})
    rt, provider = runtime_for(model)
    ckpt = Checkpoint()
    run_workflow_code(V2, runtime=rt, checkpoint=ckpt)
    before = len(provider.requests)
    run_workflow_code(
        V2.replace("find auth files", "find auth modules"), runtime=rt, checkpoint=ckpt
    )
    assert len(provider.requests) - before == 3
    assert ckpt.hits == 0


def test_judgements_inside_control_flow_are_checkpointed(tmp_path: Path) -> None:
    code = """
def workflow():
    files = validate_and_retry(
        action=lambda: agent("find files"),
        check="includes oauth files",
        retry=lambda: agent("widen the search"),
    )
    return route(question="strategy?", options=["direct", "phased"], context=files)
"""
    model = FakeModel({"find": "auth.py", "widen": "auth.py oauth.py"})
    rt, provider = runtime_for(model)
    path = tmp_path / "ckpt.json"
    ckpt = Checkpoint(path=path)
    assert run_workflow_code(code, runtime=rt, checkpoint=ckpt) == "phased"
    saved = json.loads(path.read_text())
    assert [(e["call_index"], e["fn"]) for e in saved] == [
        (0, "agent"),
        (1, "llm"),
        (2, "agent"),
        (3, "llm"),
        (4, "llm"),
    ]
    assert "Condition: includes oauth files" in saved[1]["prompt"]
    assert json.loads(saved[1]["result"]) == {"call": "no"}
    before = len(provider.requests)
    # a fresh process: the checkpoint file alone lets the rerun skip every model call
    assert run_workflow_code(code, runtime=rt, checkpoint=Checkpoint(path=path)) == "phased"
    assert len(provider.requests) == before


def test_parallel_branches_checkpoint_by_branch() -> None:
    code = """
def workflow():
    parts = parallel([lambda: agent("front"), lambda: agent("back"), lambda: agent("db")])
    return parts + [llm("sum up " + parts[0])]
"""
    model = FakeModel({"front": "F", "back": "B", "db": "D", "sum up": "S"})
    rt, provider = runtime_for(model)
    ckpt = Checkpoint()
    assert run_workflow_code(code, runtime=rt, checkpoint=ckpt) == ["F", "B", "D", "S"]
    assert sorted(str(e["call_index"]) for e in ckpt.entries) == ["0.0.0", "0.1.0", "0.2.0", "1"]
    before = len(provider.requests)
    changed = code.replace('agent("back")', 'agent("server")')
    assert run_workflow_code(changed, runtime=rt, checkpoint=ckpt) == [
        "F",
        "answer to server",
        "D",
        "S",
    ]
    # sibling branches are reused; the call after the parallel block runs again
    assert [last_user_text(r) for r in provider.requests[before:]] == ["server", "sum up F"]


@pytest.mark.parametrize(
    ("first", "revised"),
    [
        (
            'agent("pick the strategy", choices=["direct", "phased"])',
            'agent("pick the strategy", choices=["stage_one", "stage_two"])',
        ),
        ('llm("summarise auth")', 'llm("summarise auth", system="Answer in French")'),
        ('llm("summarise auth", model="m1")', 'llm("summarise auth", model="m2")'),
        ('agent("summarise auth")', 'agent("summarise auth", tools=[])'),
        (
            'llm("summarise auth", response_format={"type": "object"})',
            'llm("summarise auth", response_format={"type": "array"})',
        ),
    ],
)
def test_a_call_with_changed_arguments_is_not_reused(first: str, revised: str) -> None:
    def model(request: ModelRequest) -> str:
        if isinstance(request.choices, list):
            return json.dumps({"call": request.choices[0]})
        if request.response_format is not None:
            return json.dumps([] if "array" in json.dumps(request.response_format) else {})
        return f"{request.system or 'plain'} {request.model_id}"

    provider = ScriptedProvider(function=model)
    rt = Runtime(provider=provider)
    ckpt = Checkpoint()
    old = run_workflow_code(f"def workflow():\n    return {first}\n", runtime=rt, checkpoint=ckpt)
    new = run_workflow_code(f"def workflow():\n    return {revised}\n", runtime=rt, checkpoint=ckpt)
    assert (ckpt.hits, len(provider.requests)) == (0, 2)  # the revised request was sent
    assert new != old or "tools" in revised
    # the same call with the same arguments is still reused
    again = run_workflow_code(
        f"def workflow():\n    return {revised}\n", runtime=rt, checkpoint=ckpt
    )
    assert (again, ckpt.hits, len(provider.requests)) == (new, 1, 2)


def test_request_args_cover_pydantic_formats_and_tools() -> None:
    from pydantic import BaseModel

    from openprogram.programs.workflow.checkpoint import request_args

    class Plan(BaseModel):
        steps: list[str]

    class Verdict(BaseModel):
        ok: bool

    def grep(pattern: str) -> str:
        """Search the workspace."""
        return pattern

    def glob_files(pattern: str) -> str:
        """List files."""
        return pattern

    assert request_args({}) == request_args({"runtime": object()}) == ""
    assert request_args({"response_format": Plan}) != request_args({"response_format": Verdict})
    assert request_args({"response_format": Plan}) == request_args({"response_format": Plan})
    assert request_args({"tools": [grep]}) != request_args({"tools": [glob_files]})
    assert request_args({"system": "a", "model": "m"}) == request_args(
        {"model": "m", "system": "a"}
    )


def test_positions_order() -> None:
    from openprogram.programs.workflow.checkpoint import _precedes

    assert _precedes((0,), (1,))
    assert _precedes((0, 1, 0), (0, 1, 1))
    assert _precedes((0, 1, 0), (1,))
    assert not _precedes((0, 1, 0), (0, 2, 0))  # sibling branches are independent
    assert not _precedes((1,), (0, 2, 0))


def test_workflow_run_is_recorded(tmp_path: Path) -> None:
    model = FakeModel({"find": "auth.py", "analyse": "deps", "how many": "3"})
    rt, _ = runtime_for(model)
    with SessionStore(tmp_path) as store:
        sid = store.create_session("w")
        with use_writer(SessionNodeWriter(store, sid)):
            run_workflow_code(V2, runtime=rt)
        nodes = store.list_nodes(sid)
    assert nodes[0].name == "workflow" and nodes[0].output == 3
    assert [n.kind for n in nodes[1:]] == ["llm", "llm", "llm"]


# ------------------------------------------------------------------ planner loop

GOOD = """Here is the plan.
```python
def workflow():
    files = agent("find auth files")
    return conditional(
        condition="the list mentions oauth",
        context=files,
        if_true=lambda: agent("plan oauth migration for " + files),
        if_false=lambda: agent("plan simple migration for " + files),
    )
```"""
WITH_IMPORT = "```python\nimport os\ndef workflow():\n    return os.getcwd()\n```"
CRASHING = (
    '```python\ndef workflow():\n    files = agent("find auth files")\n'
    '    count = llm("count the files in " + files)\n    return int(count)\n```'
)


def test_planner_revises_after_check_and_runtime_failures(tmp_path: Path) -> None:
    (tmp_path / "auth").mkdir()
    (tmp_path / "auth" / "oauth.py").write_text("def login():\n    pass\n")
    model = FakeModel(
        {"find": "auth/oauth.py", "plan oauth": "PLAN-OAUTH"},
        planner=[
            {"tool_calls": [{"name": "grep", "arguments": {"pattern": "def login"}}]},  # type: ignore[list-item]
            WITH_IMPORT,
            CRASHING,
            GOOD,
        ],
    )
    rt, provider = runtime_for(model)
    run = plan_and_run("migrate the auth module", runtime=rt, workspace=tmp_path, max_revisions=2)
    assert run.result == "PLAN-OAUTH" and run.revisions == 2
    # the grep tool result reached the planner
    tool_msgs = [m for r in provider.requests for m in r.messages if m.role == "tool"]
    assert "auth/oauth.py:1:def login():" in tool_msgs[0].content
    assert "OP210" in model.planner_prompts[2] and "import os" in model.planner_prompts[2]
    assert (
        "ValueError" in model.planner_prompts[3] and "workflow line 4" in model.planner_prompts[3]
    )
    # "find auth files" ran once (revision 1) and was reused by revision 2 (the reply
    # revision 1 failed on was the count's, tests/engine/test_workflow_reuse.py)
    assert model.prompts.count("find auth files") == 1


def test_a_revision_asks_again_the_decision_that_failed() -> None:
    code = """```python
def workflow():
    analysis = agent("analyse the auth module")
    return route(question="Which strategy?", options=["direct", "phased"], context=analysis)
```"""
    asked: list[str] = []

    def model(request: ModelRequest) -> str:
        text = last_user_text(request)
        if request.system == PLANNER_INSTRUCTIONS:
            return code  # the revision keeps the same workflow
        asked.append(text)
        if "Which strategy?" in text:  # a flaky model: two invalid replies, then a valid one
            tries = sum("Which strategy?" in t for t in asked)
            return json.dumps({"call": "sideways" if tries <= 2 else "phased"})
        return "token.py depends on login.py"

    rt = Runtime(provider=ScriptedProvider(function=model))
    run = plan_and_run("migrate the auth module", runtime=rt, max_revisions=2)
    assert (run.result, run.revisions) == ("phased", 1)
    # the analysis the workflow went on with is reused; the failed decision is asked again
    assert asked.count("analyse the auth module") == 1
    assert sum("Which strategy?" in t for t in asked) == 3


def test_planner_gives_up_after_max_revisions() -> None:
    model = FakeModel({}, planner=[WITH_IMPORT, WITH_IMPORT])
    rt, _ = runtime_for(model)
    with pytest.raises(WorkflowFailed, match="after 1 revision") as err:
        plan_and_run("task", runtime=rt, max_revisions=1)
    assert "OP210 imports are not allowed" in err.value.feedback


def test_workspace_tools_stay_inside_the_root(tmp_path: Path) -> None:
    from openprogram.programs.workflow import workspace_tools

    (tmp_path / "a.txt").write_text("hello\n")
    read_file, grep, glob_files, list_dir = workspace_tools(tmp_path)
    assert read_file("a.txt") == "hello\n"
    assert grep("hel+") == "a.txt:1:hello"
    assert glob_files("*.txt") == "a.txt"
    assert list_dir() == "a.txt"
    with pytest.raises(ValueError, match="outside the workspace"):
        read_file("../etc/passwd")
    assert re.search("no matches", grep("zzz"))


# ------------------------------------------------------------------ the example Program


def test_migrate_auth_example_runs_the_seed_flow() -> None:
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "examples" / "migrate_auth.py"
    spec = importlib.util.spec_from_file_location("migrate_auth_example", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    model = FakeModel(
        {
            "Find all files": "auth/login.py",
            "Widen the search": "auth/login.py\nauth/oauth.py\nauth/token.py",
            "Analyse": "login depends on token",
            "Write a detailed": "DETAILED PLAN",
            "Write brief": "BRIEF PLAN",
        },
        yes_words=("oauth", "phased"),
    )
    rt, _ = runtime_for(model)
    assert module.migrate_auth(runtime=rt) == "DETAILED PLAN"  # route picks "phased migration"
    judged = [p for p in model.prompts if p.startswith("Judge whether")]
    assert len(judged) == 3  # files (no), widened files (yes), strategy (yes)
    assert (
        "Analyse the dependencies and interfaces of these files: auth/login.py\nauth/oauth.py"
        in ("\n".join(model.prompts))
    )
    assert check_planner_code(module.MIGRATE_AUTH_WORKFLOW, NAMES) == []
