"""The Program model: the runtime refuses exactly what the analyzer flags, and the rules see
Python the way people write it (aliases, Agent instances, inheritance, loops)."""

from __future__ import annotations

import os
import re
import tempfile
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openprogram.durable import DeterminismError, StepUsageError, start_run
from openprogram_analyzers import analyze_source

PRE_RUN = {f"OP20{i}" for i in range(1, 9)}
STEP_RULES = {"OP212", "OP213"}

# (import, expression in the orchestration body, code the analyzer must give or None)
IMPORTS = [
    ("import time as t", "t.time()", "OP205"),
    ("from random import choice", "choice([1])", "OP205"),
    ("from time import monotonic", "monotonic()", "OP205"),
    ("from secrets import token_hex", "token_hex(2)", "OP205"),
    ("from importlib import import_module", 'import_module("json")', "OP201"),
    ("from subprocess import check_output", 'check_output(["true"])', "OP206"),
    ("import os", 'os.getenv("HOME")', "OP205"),
    ("import json as j", "j.dumps(1)", None),
    ("from math import floor", "floor(1.5)", None),
    ("from os.path import join", 'join("a", "b")', None),
]
FUNCTIONS = ["double", "lambda n: n", "inner"]

PROGRAM = """\
{imp}
from openprogram import step


def double(n: int) -> int:
    return 2 * n


def main() -> object:
    def inner(n: int) -> int:
        return n

    value = {expr}{noqa}
    return [str(value), step({name!r}, {fn}, 1)]


main.__agent_options__ = {{"resumable": True}}
PROGRAM_ENTRIES = ["main"]
"""


def _codes(text: str) -> set[str]:
    return set(re.findall(r":\d+:\d+: (OP\d{3}) ", text))


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    imp=st.sampled_from(IMPORTS),
    name=st.text(alphabet="ab/# ", max_size=3),
    fn=st.sampled_from(FUNCTIONS),
    suppress=st.booleans(),
)
def test_runtime_refuses_exactly_what_the_analyzer_flags(
    imp: tuple[str, str, str | None], name: str, fn: str, suppress: bool
) -> None:
    line, expr, expected = imp
    noqa = f"  # noqa: {expected}" if suppress and expected else ""
    src = PROGRAM.format(imp=line, expr=expr, noqa=noqa, name=name, fn=fn)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "prog.py"
        path.write_text(src, encoding="utf-8")
        findings = [f for f in analyze_source(src, str(path)) if f.severity == "error"]
        flagged = {f.code for f in findings}
        assert flagged <= PRE_RUN | STEP_RULES, findings
        # the import spelling is seen (unless suppressed, which lint honours too)
        assert (expected in flagged) == (expected is not None and not noqa)
        os.environ["OPENPROGRAM_CHECK_CACHE"] = str(Path(tmp) / "cache")
        try:
            outcome = start_run(f"{path}:main", store=Path(tmp) / "store")
        except DeterminismError as exc:  # the step rules too: before anything is recorded
            assert _codes(str(exc)) == flagged
        else:
            assert not flagged
            assert outcome.status == "completed", outcome.error
        finally:
            del os.environ["OPENPROGRAM_CHECK_CACHE"]


def _codes_of(src: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in analyze_source(textwrap.dedent(src), "prog.py")]


def test_class_attribute_bound_to_a_function_is_a_method() -> None:
    src = """\
    from openprogram import Agent


    def _impl(self, text: str) -> str:
        return text


    class Classifier(Agent):
        method_options = {"classify": {"expose": "io"}}
        classify = _impl
    """
    assert _codes_of(src) == []
    assert _codes_of(src.replace("classify = _impl", "other = _impl"))[0][0] == "OP101"


def test_agent_options_set_in_a_loop_make_functions_resumable() -> None:
    src = """\
    import time

    from openprogram import step


    def first() -> float:
        return time.time()


    def second() -> int:
        return step("one", int, "1")


    for fn in (first, second):
        fn.__agent_options__ = {"resumable": True}
    """
    assert _codes_of(src) == [("OP205", 7)]


def test_model_calls_in_a_workflow_body_are_flagged() -> None:
    src = """\
    from openprogram import llm, step, workflow


    def review(text: str) -> str:
        return llm("review " + text)


    def outline(text: str) -> str:
        return llm("outline " + text)


    def main(text: str) -> list:
        return [workflow("review", review, text), step("outline", outline, text)]


    main.__agent_options__ = {"resumable": True}
    """
    # a nested workflow is orchestration: its model call runs again on resume;
    # the step function's model call is checkpointed and fine
    assert _codes_of(src) == [("OP206", 5)]


def test_shadowing_local_is_not_the_import() -> None:
    src = """\
    import time as t

    from openprogram import step


    class Clock:
        def time(self) -> int:
            return 1


    def main() -> int:
        t = Clock()
        return step("one", int, str(t.time()))


    main.__agent_options__ = {"resumable": True}
    """
    assert _codes_of(src) == []


@pytest.mark.parametrize(
    ("call", "code"),
    [
        ('step("a/b", double, 1)', "OP212"),
        ('step("", double, 1)', "OP212"),
        ('step("x", lambda n: n, 1)', "OP213"),
        ('parallel({"a#1": (double, (1,), {})})', "OP212"),
        ('step("ok", double, 1)', None),
    ],
)
def test_step_name_rules_match_the_runtime(call: str, code: str | None) -> None:
    src = f"from openprogram import parallel, step\n\n\ndef double(n):\n    return n\n\n\ndef main():\n    return {call}\n"
    found = [f for f in analyze_source(src, "prog.py") if f.code in STEP_RULES]
    namespace: dict[str, object] = {}
    exec(compile(src, "prog.py", "exec"), namespace)  # the real runtime, outside a run
    try:
        namespace["main"]()  # type: ignore[operator]
    except StepUsageError as exc:
        (finding,) = found
        assert (finding.code, str(exc)) == (code, f"{finding.code} {finding.message}")
    else:
        assert code is None and found == []


@pytest.mark.parametrize(
    ("line", "suppresses"),
    [
        ("# openprogram: noqa", True),
        ("# OpenProgram : NOQA", True),
        ('NOTE = "# openprogram: noqa"', False),  # in a string: not a comment
        ('DOC = """\n# openprogram: noqa\n"""', False),  # inside a triple-quoted string
    ],
)
def test_file_level_noqa_same_in_analyzer_and_incremental_pass(line: str, suppresses: bool) -> None:
    from openprogram_lsp.incremental import IncrementalAnalyzer

    src = (
        "from openprogram import Agent\n\n\n"
        'class A(Agent):\n    method_options = {"f": {"expsoe": "io"}}\n\n'
        "    def f(self) -> str:\n        return 'x'\n\n\n" + line + "\n"
    )
    full = analyze_source(src, "p.py")
    inc = IncrementalAnalyzer()
    inc.set_base(src.replace("expsoe", "expose"), ())
    fast = inc.fast(src, "p.py", None, None)
    assert [f.code for f in full] == [f.code for f in fast] == ([] if suppresses else ["OP102"])


def test_duplicate_key_in_a_dict_literal_menu() -> None:
    src = """\
    from openprogram import decision


    def pick() -> object:
        return decision.make("Pick", {"yes": "agree", "no": "disagree", "yes": "again"})
    """
    assert _codes_of(src) == [("OP306", 5)]
    assert _codes_of(src.replace(', "yes": "again"', "")) == []


def test_agent_options_checked_with_the_method_options_table() -> None:
    src = """\
    def main(n: int = 1) -> int:
        return n


    main.__agent_options__ = {"resumable": True, "exposee": "io", "label": 3}
    PROGRAM_ENTRIES = ["main"]
    """
    found = analyze_source(textwrap.dedent(src), "prog.py")
    assert [(f.code, f.line) for f in found] == [("OP405", 5), ("OP405", 5)]
    assert "did you mean 'expose'" in found[0].message
    assert "['label'] must be str or None" in found[1].message
    fixed = src.replace('"exposee"', '"expose"').replace('"label": 3', '"label": "Main"')
    assert _codes_of(fixed) == []


def test_entry_naming_a_constant() -> None:
    src = """\
    def main() -> int:
        return 1


    LIMIT = 3
    PROGRAM_ENTRIES = ["main", "LIMIT"]
    """
    (found,) = analyze_source(textwrap.dedent(src), "prog.py")
    assert (found.code, found.line) == ("OP403", 6)
    assert found.message == "entry 'LIMIT' is an int, not a function or bound Agent method"


PAUSING = """\
from openprogram import step


def main() -> str:
    a = step("fetch", str.upper, "x")
    return step("write", str.lower, a)


main.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["main"]
"""


@pytest.mark.parametrize(("policy", "broken"), [("keep_original", False), ("use_latest", True)])
def test_op209_reads_each_runs_policy(tmp_path: Path, policy: str, broken: bool) -> None:
    from openprogram.durable import pause_run, resume_run
    from openprogram_analyzers.store_adapter import recorded_steps

    program = tmp_path / "prog.py"
    program.write_text(PAUSING, encoding="utf-8")
    store = tmp_path / "store"

    def pause_after_fetch(event: str, key: str) -> None:
        if event == "done" and key.startswith("fetch"):
            pause_run("r1", store=store)

    first = start_run(
        f"{program}:main", store=store, policy=policy, run_id="r1", on_progress=pause_after_fetch
    )
    assert first.status == "paused"
    renamed = PAUSING.replace('"fetch"', '"download"')
    rec = recorded_steps(str(store), str(program))
    codes = [f.code for f in analyze_source(renamed, str(program), recorded_steps=rec)]
    assert codes == (["OP209"] if broken else [])
    # resume agrees: the keep_original run resumes its saved source after the rename
    program.write_text(renamed, encoding="utf-8")
    outcome = resume_run("r1", store=store)
    assert outcome.status == ("paused" if broken else "completed"), outcome


OVERRIDES = """\
from openprogram import Agent, step


class Report(Agent):
    method_options = {"report": {"resumable": True}}

    def report(self, topic: str) -> str:
        text = self.gather(topic)
        return step("write", str.lower, text)

    def gather(self, topic: str) -> str:
        return topic


class LocalReport(Report):
    def gather(self, topic: str) -> str:
        return step("fetch", str.upper, topic)


class WebReport(Report):
    def gather(self, topic: str) -> str:
        query = step("search", str.strip, topic)
        return step("fetch", str.upper, query)


local = LocalReport().report
web = WebReport().report
PROGRAM_ENTRIES = ["local", "web"]
"""


def test_op209_follows_self_hook_to_the_class_a_run_ran_on(tmp_path: Path) -> None:
    """Two subclasses override ``self.gather()`` with different steps: a paused run of
    ``web`` recorded search, fetch. Its class's sequence still produces them, so the
    unchanged source (and an edit of the other subclass) breaks nothing; before, the
    overrides of every class were read as one sequence (fetch, search, fetch, write) and
    the run was reported broken ("step 'fetch' now runs before ..."). A rename in
    WebReport still breaks it, as its resume says."""
    from openprogram.durable import pause_run, resume_run
    from openprogram_analyzers.store_adapter import recorded_steps

    program = tmp_path / "prog.py"
    program.write_text(OVERRIDES, encoding="utf-8")
    store = tmp_path / "store"

    def pause_after_fetch(event: str, key: str) -> None:
        if event == "done" and key.startswith("fetch"):
            pause_run("r1", store=store)

    first = start_run(
        f"{program}:web",
        store=store,
        policy="use_latest",
        run_id="r1",
        args={"topic": " x "},
        on_progress=pause_after_fetch,
    )
    assert first.status == "paused"
    rec = recorded_steps(str(store), str(program))
    assert rec == {"Report.report": [[("search", 0), ("fetch", 0)]]}
    assert analyze_source(OVERRIDES, str(program), recorded_steps=rec) == []
    other = OVERRIDES.replace('step("fetch", str.upper, topic)', 'step("load", str.upper, topic)')
    assert analyze_source(other, str(program), recorded_steps=rec) == []
    renamed = OVERRIDES.replace('"search"', '"lookup"')
    (found,) = analyze_source(renamed, str(program), recorded_steps=rec)
    assert found.code == "OP209"
    assert found.message == (
        "step 'lookup' replaces step 'search' recorded for 'Report.report': "
        "this edit breaks 1 unfinished run"
    )
    program.write_text(other, encoding="utf-8")
    assert resume_run("r1", store=store).status == "completed"
