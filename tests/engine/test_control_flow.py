"""Control-flow primitives with the scripted provider: every judgement is a decision."""

from __future__ import annotations

import json
import re
import threading
from typing import Any

import pytest

from openprogram.agentic_programming.control_flow import (
    conditional,
    judge,
    parallel,
    repeat_until,
    route,
    validate_and_retry,
)
from openprogram.decision import DecisionError
from openprogram.runtime import Runtime, ScriptedProvider
from openprogram.runtime.types import ModelRequest
from openprogram.scope import call_scope, current_runtime, use_writer
from openprogram.store import SessionNodeWriter, SessionStore


def last_user_text(request: ModelRequest) -> str:
    content = [m for m in request.messages if m.role == "user"][-1].content
    return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)


class LineCountJudge:
    """Answers yes/no decisions by counting lines of the judged text (a stand-in model)."""

    def __init__(self, need: int) -> None:
        self.need = need
        self.judged: list[str] = []

    def __call__(self, request: ModelRequest) -> str:
        text = last_user_text(request)
        assert set(request.choices) == {"yes", "no"}, "a judgement must offer a yes/no menu"
        assert not request.tools
        subject = re.search(r"\n(?:Result|Context):\n(.*)\n\nChoose", text, re.S)
        assert subject is not None
        self.judged.append(subject.group(1))
        ok = len(subject.group(1).splitlines()) >= self.need
        return f"Looking at it...\n```json\n{json.dumps({'call': 'yes' if ok else 'no'})}\n```"


def runtime_with(function: Any) -> tuple[Runtime, ScriptedProvider]:
    provider = ScriptedProvider(function=function)
    return Runtime(provider=provider), provider


def sequence(*values: str) -> Any:
    it = iter(values)
    made: list[str] = []

    def step() -> str:
        value = next(it)
        made.append(value)
        return value

    step.made = made  # type: ignore[attr-defined]
    return step


# ------------------------------------------------------------------ validate_and_retry


def test_validate_and_retry_judges_each_attempt() -> None:
    judge_fn = LineCountJudge(need=3)
    rt, provider = runtime_with(judge_fn)
    action = sequence("a.py")
    retry = sequence("a.py\nb.py", "a.py\nb.py\nc.py", "never")
    result = validate_and_retry(action, "at least 3 files", retry=retry, max_retries=3, runtime=rt)
    assert result == "a.py\nb.py\nc.py"
    assert judge_fn.judged == ["a.py", "a.py\nb.py", "a.py\nb.py\nc.py"]
    assert retry.made == ["a.py\nb.py", "a.py\nb.py\nc.py"]
    assert "Condition: at least 3 files" in last_user_text(provider.requests[0])


def test_validate_and_retry_returns_last_result_when_never_valid() -> None:
    judge_fn = LineCountJudge(need=10)
    rt, _ = runtime_with(judge_fn)
    action = sequence("one", "two", "three")
    assert validate_and_retry(action, "10 files", max_retries=2, runtime=rt) == "three"
    assert judge_fn.judged == ["one", "two"]  # the final attempt is returned as is


def test_validate_and_retry_passing_first_time_skips_retry() -> None:
    rt, provider = runtime_with(LineCountJudge(need=1))
    retry = sequence()
    assert validate_and_retry(lambda: "ok", "non-empty", retry=retry, runtime=rt) == "ok"
    assert retry.made == [] and len(provider.requests) == 1


def test_callable_check_is_judged_in_python_without_model_calls() -> None:
    rt = Runtime(provider=ScriptedProvider.block())
    action = sequence("a", "a\nb", "a\nb\nc")
    result = validate_and_retry(action, lambda r: r.count("\n") >= 2, runtime=rt)
    assert result == "a\nb\nc"


def test_yes_in_prose_is_not_a_yes() -> None:
    # A substring test for "YES" would pass here; the decision reads the JSON choice.
    rt, _ = runtime_with(lambda request: 'YES, I see... but no.\n{"call": "no"}')
    assert judge("the file list is complete", "a.py", runtime=rt) is False


def test_unparseable_judgement_is_retried_then_decision_error() -> None:
    rt, provider = runtime_with(lambda request: "YES")
    with pytest.raises(DecisionError) as err:
        validate_and_retry(lambda: "x", "looks right", runtime=rt)
    assert err.value.kind == "no_json"
    assert len(provider.requests) == 2  # the judgement and its one retry
    assert "Error (no_json)" in last_user_text(provider.requests[1])


# ------------------------------------------------------------------ route


STRATEGIES = ["direct migration", "refactor then migrate", "phased migration"]


def test_route_returns_the_chosen_option() -> None:
    seen: list[Any] = []

    def model(request: ModelRequest) -> str:
        seen.append(request.choices)
        text = last_user_text(request)
        assert "Which strategy?" in text and "Context:\nmany modules" in text
        return json.dumps({"call": "phased migration"})

    rt, _ = runtime_with(model)
    assert (
        route("Which strategy?", STRATEGIES, context="many modules", runtime=rt)
        == "phased migration"
    )
    assert seen == [STRATEGIES]


def test_route_answer_outside_options_is_retried() -> None:
    answers = iter(
        [json.dumps({"call": "rewrite everything"}), json.dumps({"call": "direct migration"})]
    )
    rt, provider = runtime_with(lambda request: next(answers))
    assert route("Which strategy?", STRATEGIES, runtime=rt) == "direct migration"
    retry_text = last_user_text(provider.requests[1])
    assert "Error (unknown_call)" in retry_text and '"rewrite everything"' in retry_text


def test_route_never_defaults_silently() -> None:
    rt, _ = runtime_with(lambda request: json.dumps({"call": "something else"}))
    with pytest.raises(DecisionError) as err:
        route("Which strategy?", STRATEGIES, runtime=rt)
    assert err.value.kind == "unknown_call"


def test_route_with_descriptions() -> None:
    def model(request: ModelRequest) -> str:
        assert "  for small changes" in last_user_text(request)
        return json.dumps({"call": "fast"})

    rt, _ = runtime_with(model)
    assert (
        route("How?", {"fast": "for small changes", "slow": "for big ones"}, runtime=rt) == "fast"
    )


@pytest.mark.parametrize(
    ("options", "exc"), [([], ValueError), ([1, 2], TypeError), ("ab", TypeError)]
)
def test_route_rejects_bad_options(options: Any, exc: type[Exception]) -> None:
    with pytest.raises(exc):
        route("q", options, runtime=Runtime(provider=ScriptedProvider.block()))


# ------------------------------------------------------------------ conditional


@pytest.mark.parametrize(("context", "branch"), [("x\ny\nz", "detailed"), ("x", "brief")])
def test_conditional_runs_only_the_judged_branch(context: str, branch: str) -> None:
    rt, _ = runtime_with(LineCountJudge(need=3))
    ran: list[str] = []

    def detailed() -> str:
        ran.append("detailed")
        return "detailed"

    def brief() -> str:
        ran.append("brief")
        return "brief"

    assert conditional("the analysis is complex", context, detailed, brief, runtime=rt) == branch
    assert ran == [branch]


def test_conditional_with_callable_condition() -> None:
    rt = Runtime(provider=ScriptedProvider.block())
    assert (
        conditional(
            lambda c: "refactor" in c, "refactor then migrate", lambda: 1, lambda: 2, runtime=rt
        )
        == 1
    )
    assert conditional(lambda: False, None, lambda: 1, lambda: 2, runtime=rt) == 2


# ------------------------------------------------------------------ repeat_until


def test_repeat_until_stops_when_condition_holds() -> None:
    judge_fn = LineCountJudge(need=2)
    rt, _ = runtime_with(judge_fn)
    action = sequence("a", "a\nb", "a\nb\nc")
    assert repeat_until(action, "found all files", max_rounds=5, runtime=rt) == "a\nb"
    assert action.made == ["a", "a\nb"] and judge_fn.judged == ["a", "a\nb"]


def test_repeat_until_is_bounded() -> None:
    judge_fn = LineCountJudge(need=99)
    rt, _ = runtime_with(judge_fn)
    action = sequence("1", "2", "3", "4")
    assert repeat_until(action, "never", max_rounds=3, runtime=rt) == "3"
    assert action.made == ["1", "2", "3"] and judge_fn.judged == ["1", "2"]
    with pytest.raises(ValueError):
        repeat_until(action, "x", max_rounds=0, runtime=rt)


# ------------------------------------------------------------------ parallel


def test_parallel_preserves_order_and_bounds_concurrency() -> None:
    lock = threading.Lock()
    active, peak = [0], [0]
    gate = threading.Barrier(2, timeout=10)

    def branch(i: int) -> Any:
        def run() -> int:
            with lock:
                active[0] += 1
                peak[0] = max(peak[0], active[0])
            if i < 2:
                gate.wait()  # the first two run at the same time
            with lock:
                active[0] -= 1
            return i * 10

        return run

    assert parallel([branch(i) for i in range(6)], max_workers=2) == [0, 10, 20, 30, 40, 50]
    assert peak[0] == 2
    assert parallel([]) == []


@pytest.mark.parametrize("workers", [0, -1])
def test_parallel_rejects_fewer_than_one_worker(workers: int) -> None:
    # 0 is not "the default": it is refused like a negative count
    with pytest.raises(ValueError, match=f"max_workers must be >= 1, got {workers}"):
        parallel([lambda: 1, lambda: 2], max_workers=workers)


def test_parallel_raises_first_failure_in_order() -> None:
    def boom() -> None:
        raise KeyError("b1")

    with pytest.raises(KeyError, match="b1"):
        parallel([lambda: 1, boom, lambda: 3])
    with pytest.raises(TypeError):
        parallel([1])  # type: ignore[list-item]


def test_parallel_branches_see_runtime_and_are_recorded(tmp_path: Any) -> None:
    rt, provider = runtime_with(LineCountJudge(need=1))
    with SessionStore(tmp_path) as store:
        sid = store.create_session("p")
        writer = SessionNodeWriter(store, sid)
        with use_writer(writer), call_scope("workflow", runtime=rt):
            results = parallel(
                [
                    lambda: current_runtime() is rt,
                    lambda: judge("non-empty", "x"),
                    lambda: judge("non-empty", "y"),
                ]
            )
        nodes = store.list_nodes(sid)
    assert results == [True, True, True]
    outer = nodes[0]
    branches = {n.name: n for n in nodes if n.name.startswith("parallel[")}
    assert set(branches) == {"parallel[0]", "parallel[1]", "parallel[2]"}
    assert all(b.caller_id == outer.id and b.status == "completed" for b in branches.values())
    llm_callers = sorted(n.caller_id for n in nodes if n.kind == "llm")
    assert llm_callers == sorted([branches["parallel[1]"].id, branches["parallel[2]"].id])
    assert len(provider.requests) == 2
