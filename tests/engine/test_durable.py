"""Durable steps on a real store — SQLite and PostgreSQL, every test on both: skipping,
occurrences, workflows, parallel, incompatibility pauses, code-change policies,
determinism refusal and bad input."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from durable_programs import HEADER, LINEAR, calls, write_program

from openprogram.durable import (
    DeterminismError,
    ProgramLoadError,
    RunNotFound,
    RunStateError,
    cancel_run,
    list_runs,
    parallel,
    resume_run,
    start_run,
    step,
    workflow,
)
from openprogram.programs.loader import EntryError
from openprogram.store.runs import read_run_store
from pgcluster import BACKENDS, store_for


@pytest.fixture()
def prog_dir(tmp_path: Path) -> Path:
    d = tmp_path / "prog"
    d.mkdir()
    return d


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return store_for(request, tmp_path)


def ref(path: Path) -> str:
    return f"{path}:main"


def steps_of(store: str, run_id: str) -> list[tuple[str, str, str]]:
    runs = read_run_store(store)
    assert runs is not None
    with runs:
        return [(s.step_key, s.kind, s.status) for s in runs.load_steps(run_id)]


def test_completed_run_records_steps_and_session(prog_dir: Path, store: str) -> None:
    path = write_program(prog_dir, LINEAR)
    out = start_run(ref(path), {"n": 5}, store=store)
    assert out.status == "completed"
    assert out.result == {"total": 7}
    assert calls(prog_dir) == ["a 5", "b 6", "c 7"]
    assert steps_of(store, out.run_id) == [
        ("a#0", "step", "completed"),
        ("b#0", "step", "completed"),
        ("c#0", "step", "completed"),
    ]
    from openprogram.store import SessionStore

    with SessionStore(store) as s:
        nodes = s.list_nodes(out.run_id)
    assert [n.name for n in nodes] == ["main", "a", "b", "c"]
    assert all(n.status == "completed" for n in nodes)
    assert nodes[1].caller_id == nodes[0].id


def test_resume_skips_completed_steps(prog_dir: Path, store: str) -> None:
    path = write_program(prog_dir, LINEAR)
    (prog_dir / "fail_b").touch()
    out = start_run(ref(path), {"n": 1}, store=store)
    assert out.status == "failed"
    assert "injected failure in b" in (out.error or "")
    assert calls(prog_dir) == ["a 1", "b 2"]
    (prog_dir / "fail_b").unlink()
    again = resume_run(out.run_id, store=store)
    assert again.status == "completed"
    assert again.result == {"total": 3}
    # a was not called again; b (failed) re-ran; c ran once
    assert calls(prog_dir) == ["a 1", "b 2", "b 2", "c 3"]
    with pytest.raises(RunStateError, match="completed"):
        resume_run(out.run_id, store=store)


def test_repeated_names_are_told_apart_by_occurrence(prog_dir: Path, store: str) -> None:
    body = """
def main(n: int = 3) -> list:
    out = []
    for i in range(n):
        out.append(step("item", act, "item", i)["value"])
    out.append(step("last", act, "last", 0)["value"])
    return out
"""
    path = write_program(prog_dir, body)
    (prog_dir / "fail_last").touch()
    out = start_run(ref(path), {}, store=store)
    assert out.status == "failed"
    (prog_dir / "fail_last").unlink()
    done = resume_run(out.run_id, store=store)
    assert done.status == "completed" and done.result == [0, 1, 2, 0]
    assert calls(prog_dir) == ["item 0", "item 1", "item 2", "last 0", "last 0"]
    keys = [k for k, _, _ in steps_of(store, out.run_id)]
    assert keys == ["item#0", "item#1", "item#2", "last#0"]


def test_workflow_nests_keys_and_resumes_inside(prog_dir: Path, store: str) -> None:
    body = """
def inner(base: int) -> int:
    x = step("x", act, "x", base)
    y = step("y", act, "y", x["value"] + 1)
    return y["value"]


def main() -> list:
    first = workflow("part", inner, 10)
    second = workflow("part", inner, 20)
    return [first, second]
"""
    path = write_program(prog_dir, body)
    (prog_dir / "fail_y").touch()
    out = start_run(ref(path), {}, store=store)
    assert out.status == "failed"
    (prog_dir / "fail_y").unlink()
    done = resume_run(out.run_id, store=store)
    assert done.result == [11, 21]
    assert calls(prog_dir) == ["x 10", "y 11", "y 11", "x 20", "y 21"]
    keys = {k for k, _, _ in steps_of(store, out.run_id)}
    assert {"part#0", "part#0/x#0", "part#0/y#0", "part#1", "part#1/x#0"} <= keys


def test_parallel_branches_keep_their_own_progress(prog_dir: Path, store: str) -> None:
    body = """
def left(n: int) -> int:
    a = step("l1", act, "l1", n)
    b = step("l2", act, "l2", a["value"] + 1)
    return b["value"]


def right(n: int) -> int:
    return step("r1", act, "r1", n)["value"]


def main() -> dict:
    res = parallel({"left": (left, (1,), {}), "right": (right, (), {"n": 100})})
    return step("join", act, "join", res["left"] + res["right"])
"""
    path = write_program(prog_dir, body)
    (prog_dir / "fail_r1").touch()
    out = start_run(ref(path), {}, store=store)
    assert out.status == "failed"
    # the left branch finished although the right one failed
    assert sorted(calls(prog_dir)) == ["l1 1", "l2 2", "r1 100"]
    status = {k: s for k, _, s in steps_of(store, out.run_id)}
    assert status["parallel#0/left#0"] == "completed"
    assert status["parallel#0/right#0"] == "failed"
    (prog_dir / "fail_r1").unlink()
    done = resume_run(out.run_id, store=store)
    assert done.status == "completed"
    assert done.result == {"name": "join", "value": 102}
    assert sorted(calls(prog_dir)) == ["join 102", "l1 1", "l2 2", "r1 100", "r1 100"]


def test_parallel_list_of_thunks_delegates_to_control_flow() -> None:
    assert parallel([lambda: 1, lambda: 2]) == [1, 2]


def test_step_outside_a_run_just_calls() -> None:
    assert step("plain", abs, -3) == 3
    assert workflow("plain", abs, -4) == 4


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        ("c_input", "b"),  # b's input changed
        ("reorder", "a"),
        ("rename", "b"),
        ("remove", "b"),
    ],
)
def test_incompatible_edit_pauses_naming_the_step(
    prog_dir: Path, store: str, edit: str, named: str
) -> None:
    body = """
def main() -> list:
    a = step("a", act, "a", 1)
    b = step("b", act, "b", 2)
    c = step("c", act, "c", 3)
    return [a["value"], b["value"], c["value"]]
"""
    path = write_program(prog_dir, body)
    (prog_dir / "fail_c").touch()
    out = start_run(ref(path), {}, store=store)
    assert out.status == "failed"
    before = steps_of(store, out.run_id)
    edited = {
        "c_input": body.replace('act, "b", 2', 'act, "b", 22'),
        "reorder": body.replace(
            'a = step("a", act, "a", 1)\n    b = step("b", act, "b", 2)',
            'b = step("b", act, "b", 2)\n    a = step("a", act, "a", 1)',
        ),
        "rename": body.replace('step("b", act, "b", 2)', 'step("b2", act, "b", 2)'),
        "remove": body.replace('b = step("b", act, "b", 2)', 'b = {"value": 2}'),
    }[edit]
    write_program(prog_dir, edited)
    paused = resume_run(out.run_id, store=store, policy="use_latest")
    assert paused.status == "paused"
    assert paused.pause_reason == "incompatible"
    assert paused.paused_step == named
    assert f"'{named}'" in (paused.error or "")
    assert steps_of(store, out.run_id) == before  # progress untouched
    runs = read_run_store(store)
    assert runs is not None
    with runs:
        (rec,) = runs.list_runs("paused")
        assert (rec.id, rec.paused_step, rec.paused_occurrence) == (out.run_id, named, 0)
        # a keep_original run with its saved source resumes that source: no edit breaks it
        assert runs.recorded_step_sequences(str(path)) == {}
        assert runs.recorded_step_sequences(str(prog_dir / "other.py")) == {}


def test_removed_trailing_step_pauses(prog_dir: Path, store: str) -> None:
    body = """
def main() -> int:
    a = step("a", act, "a", 1)
    step("b", act, "b", 2)
    return a["value"]
"""
    path = write_program(
        prog_dir, body.replace("    return", '    step("c", act, "c", 3)\n    return')
    )
    (prog_dir / "fail_c").touch()
    out = start_run(ref(path), {}, store=store)
    write_program(prog_dir, body)
    paused = resume_run(out.run_id, store=store, policy="use_latest")
    assert paused.status == "paused" and paused.paused_step == "c"
    assert "no longer called" in (paused.error or "")


def test_keep_original_vs_use_latest(prog_dir: Path, store: str) -> None:
    body = """
def label(x: int) -> str:
    return "v1-" + str(x)


def main() -> list:
    a = step("a", act, "a", 1)
    b = step("b", act, "b", 2)
    return [label(a["value"]), b["value"]]
"""
    path = write_program(prog_dir, body)
    (prog_dir / "fail_b").touch()
    first = start_run(ref(path), {}, store=store)
    second = start_run(ref(path), {}, store=store)
    assert first.status == second.status == "failed"
    (prog_dir / "fail_b").unlink()
    write_program(prog_dir, body.replace('"v1-"', '"v2-"'))
    kept = resume_run(first.run_id, store=store)
    assert kept.result == ["v1-1", 2]
    latest = resume_run(second.run_id, store=store, policy="use_latest")
    assert latest.result == ["v2-1", 2]


def test_determinism_violation_is_refused_with_the_rule_code(prog_dir: Path, store: str) -> None:
    body = """
import time


def main() -> float:
    started = time.time()
    step("a", act, "a", 1)
    return started
"""
    path = write_program(prog_dir, body)
    with pytest.raises(DeterminismError) as err:
        start_run(ref(path), {}, store=store)
    text = str(err.value)
    assert "OP205" in text
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if "time.time()" in t)
    assert f"prog.py:{line}:" in text
    assert calls(prog_dir) == []
    assert list_runs(store=store) == []


def test_bad_step_usage_fails_the_run_clearly(prog_dir: Path, store: str) -> None:
    cases = {  # a lambda written in the call is refused before the run (OP213, lint's)
        "closure": 'step("a", make_closure())',
        "args": 'step("a", act, "a", {1, 2})',
        "result": 'step("a", as_set)',
    }
    for kind, call in cases.items():
        body = f"""
def as_set() -> set:
    return {{1}}


def make_closure():
    k = 1

    def inner():
        return k

    return inner


def main():
    return {call}
"""
        path = write_program(prog_dir, body, name=f"bad_{kind}.py")
        out = start_run(f"{path}:main", {}, store=store)
        assert out.status == "failed", kind
        assert "step 'a'" in (out.error or ""), (kind, out.error)
    # a result that is not JSON fails its step (a resume runs it again), saying why
    assert "returned a set, which is not JSON" in (out.error or ""), out.error
    assert steps_of(store, out.run_id) == [("a#0", "step", "failed")]


def test_entry_and_argument_errors(prog_dir: Path, store: str) -> None:
    path = write_program(prog_dir, LINEAR)
    with pytest.raises(EntryError, match="entries: main"):
        start_run(f"{path}:nope", {}, store=store)
    with pytest.raises(EntryError, match="unknown argument 'zzz'"):
        start_run(ref(path), {"zzz": 1}, store=store)
    body = LINEAR.replace("n: int = 1", "n: int")
    path2 = write_program(prog_dir, body, name="req.py")
    with pytest.raises(EntryError, match=r"missing required argument 'n' \(int\)"):
        start_run(f"{path2}:main", {}, store=store)
    with pytest.raises(EntryError, match="not found"):
        start_run(f"{prog_dir}/missing.py:main", {}, store=store)


def test_resume_errors_leave_progress_untouched(prog_dir: Path, store: str) -> None:
    path = write_program(prog_dir, LINEAR)
    (prog_dir / "fail_c").touch()
    out = start_run(ref(path), {}, store=store)
    before = steps_of(store, out.run_id)
    with pytest.raises(RunNotFound):
        resume_run("no-such-run", store=store)
    path.rename(prog_dir / "moved.py")
    with pytest.raises(ProgramLoadError, match=r"^cannot resume run .*no longer exists"):
        resume_run(out.run_id, store=store)
    assert steps_of(store, out.run_id) == before
    (run,) = list_runs(store=store)
    assert run.status == "failed"


def test_pause_and_cancel(prog_dir: Path, store: str) -> None:
    body = """
from openprogram.durable import current_run_id, pause_run


def pause_me(store: str) -> str:
    pause_run(current_run_id(), store=store)
    return "asked"


def main(store: str) -> list:
    a = step("ask", pause_me, store)
    b = step("b", act, "b", 2)
    return [a, b["value"]]
"""
    path = write_program(prog_dir, body)
    out = start_run(ref(path), {"store": store}, store=store)
    assert out.status == "paused"
    assert out.pause_reason == "requested" and out.paused_step == "b"
    assert calls(prog_dir) == []
    cancel_run(out.run_id, store=store)
    (run,) = list_runs(store=store, status="cancelled")
    assert run.id == out.run_id
    with pytest.raises(RunStateError, match="cancelled"):
        resume_run(out.run_id, store=store)
    with pytest.raises(RunStateError):
        cancel_run(out.run_id, store=store)


def test_newer_store_schema_is_refused(prog_dir: Path, store: str) -> None:
    path = write_program(prog_dir, LINEAR)
    start_run(ref(path), {}, store=store)
    if store.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(store) as c:
            c.execute("INSERT INTO schema_version VALUES (999, 'future', 0)")
    else:
        with sqlite3.connect(Path(store) / "openprogram.db") as c:
            c.execute("INSERT INTO schema_version VALUES (999, 'future', 0)")
    from openprogram.errors import StoreError

    with pytest.raises(StoreError):
        start_run(ref(path), {}, store=store)


def test_header_is_lint_clean() -> None:
    from openprogram_analyzers.determinism import check_resumable

    src = HEADER + LINEAR + "\nmain.__agent_options__ = {'resumable': True}\n"
    assert [f.code for f in check_resumable(src, "p.py", "main")] == []


def test_bound_agent_method_entry_resumes_with_saved_source(prog_dir: Path, store: str) -> None:
    src = (
        HEADER
        + """
from openprogram import Agent


class Reporter(Agent):
    method_options = {"report": {"resumable": True}}

    def tag(self, value: int) -> str:
        return "v1:" + str(value)

    def report(self, n: int = 1) -> list:
        a = step("a", act, "a", n)
        b = step("b", act, "b", n + 1)
        return [self.tag(a["value"]), b["value"]]


reporter = Reporter(model="scripted:none")
report = reporter.report
PROGRAM_ENTRIES = ["report"]
"""
    )
    path = prog_dir / "agent_prog.py"
    path.write_text(src)
    (prog_dir / "fail_b").touch()
    out = start_run(f"{path}:report", {"n": 4}, store=store)
    assert out.status == "failed", out.error
    (prog_dir / "fail_b").unlink()
    path.write_text(src.replace('"v1:"', '"v2:"'))
    import os

    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    done = resume_run(out.run_id, store=store)
    assert done.status == "completed", done.error
    assert done.result == ["v1:4", 5]
    assert calls(prog_dir) == ["a 4", "b 5", "b 5"]
    (run,) = list_runs(store=store)
    assert run.function_qualname == "Reporter.report"


SLOW_IMPORT = """
import time

from openprogram import step

time.sleep(0.3)  # a Program whose import takes a while (loading a model, a big table)


def double(x: int) -> int:
    return 2 * x


def main(x: int) -> int:
    return step("double", double, x)


main.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["main"]
"""


def test_runs_started_from_several_threads_share_one_complete_import(
    prog_dir: Path, store: str
) -> None:
    """Threads starting runs of the same Program (a web app, a worker with --concurrency)
    all see the whole module: a thread arriving while another was still importing it got
    the half-executed module ("'main' is not in PROGRAM_ENTRIES; entries: none")."""
    from concurrent.futures import ThreadPoolExecutor

    path = prog_dir / "slow_import.py"
    path.write_text(SLOW_IMPORT, encoding="utf-8")
    with ThreadPoolExecutor(max_workers=4) as pool:
        outcomes = list(pool.map(lambda x: start_run(ref(path), {"x": x}, store=store), range(4)))
    assert [(o.status, o.result, o.error) for o in outcomes] == [
        ("completed", 2 * x, None) for x in range(4)
    ]


HIDDEN = """
from openprogram import agentic_function


@agentic_function(expose="hidden")
def quietly(v: int) -> dict:
    return step("h", act, "h", v)


def main(n: int = 1) -> dict:
    a = step("a", act, "a", n)
    h = quietly(a["value"] + 1)
    c = step("c", act, "c", h["value"] + 1)
    return {"total": c["value"]}
"""


def test_steps_under_a_hidden_function_are_recorded_without_a_node(
    prog_dir: Path, store: str
) -> None:
    # h's record has no DAG node (its frame is hidden): a step record between two that
    # nodes hold, written, replayed and followed by a re-run on both backends
    path = write_program(prog_dir, HIDDEN)
    (prog_dir / "fail_c").touch()
    out = start_run(ref(path), {"n": 1}, store=store)
    assert out.status == "failed"
    assert steps_of(store, out.run_id) == [
        ("a#0", "step", "completed"),
        ("h#0", "step", "completed"),
        ("c#0", "step", "failed"),
    ]
    (prog_dir / "fail_c").unlink()
    again = resume_run(out.run_id, store=store)
    assert (again.status, again.result) == ("completed", {"total": 3})
    assert calls(prog_dir) == ["a 1", "h 2", "c 3", "c 3"]  # a and h replayed, c re-run
    assert [s[2] for s in steps_of(store, out.run_id)] == ["completed"] * 3
    from openprogram.store import SessionStore

    with SessionStore(store) as s:
        names = [n.name for n in s.list_nodes(out.run_id) if n.kind == "code"]
    assert names == ["main", "a", "c", "main", "c"]  # no node of h; the resume's own
