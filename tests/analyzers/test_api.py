"""Analyzer API: shared option checks, determinism entry points, OP209 store adapter,
suppressions and import weight."""

from __future__ import annotations

import inspect
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from openprogram.options import OPTIONS, check_method_options
from openprogram_analyzers import (
    LintConfig,
    analyze_source,
    check_planner_code,
    check_resumable,
    suppression_fix,
)
from openprogram_analyzers.fixes import apply_edits, fix_until_stable
from openprogram_analyzers.store_adapter import recorded_steps

AGENT = textwrap.dedent(
    """\
    from openprogram import Agent


    class A(Agent):
        method_options = {"f": {"expsoe": "io", "cache": True, "timeout": "x"}}

        def f(self, x: str) -> None:
            pass
    """
)


def test_runtime_check_and_lint_share_codes_and_messages() -> None:
    def f(self: object, x: str) -> None: ...

    runtime = check_method_options(
        {"f": {"expsoe": "io", "cache": True, "timeout": "x"}}, {"f": inspect.signature(f)}
    )
    lint = analyze_source(AGENT, "a.py")
    assert [(p.code, p.message) for p in runtime] == [(f.code, f.message) for f in lint]
    # timeout is tool-only *and* of the wrong type: both are reported
    assert sorted(p.code for p in runtime) == ["OP102", "OP103", "OP106", "OP106"]


def test_option_table_covers_spec_keys() -> None:
    for key in (
        "expose",
        "render_range",
        "input",
        "system",
        "resumable",
        "tool",
        "as_tool",
        "name",
        "description",
        "parameters",
        "label",
        "toolset",
        "unsafe_in",
        "check_fn",
        "can_use",
        "available_if",
        "requires_env",
        "max_result_chars",
        "persist_full",
        "head_ratio",
        "requires_approval",
        "cache",
        "cache_ttl",
        "timeout",
        "defer",
        "register_globally",
    ):
        assert key in OPTIONS, key
    assert OPTIONS["cache"].tool_only and not OPTIONS["expose"].tool_only
    assert OPTIONS["max_result_chars"].default == 30_000


def test_parse_error_is_a_finding_never_a_crash() -> None:
    for src in ("def f(:\n", "x = (\n", "\t  if\n", "class A(:\n  pass", "@\n"):
        found = analyze_source(src + "\nimport openprogram\n", "bad.py")
        assert [f.code for f in found] == ["OP001"]
        assert found[0].line >= 1 and found[0].column >= 1


def test_check_resumable_reports_helpers_with_call_chain() -> None:
    src = textwrap.dedent(
        """\
        import random
        from openprogram import step


        def jitter() -> float:
            return random.random()


        def report() -> float:
            return step("s", float, jitter())
        """
    )
    found = check_resumable(src, "prog.py", "report")
    assert [(f.code, f.line) for f in found] == [("OP205", 6)]
    assert found[0].related and found[0].related[0].line == 10
    assert "calls 'jitter'" in found[0].related[0].message
    assert check_resumable("def f(:\n", "p.py", "f")[0].code == "OP001"
    assert check_resumable(src, "prog.py", "missing")[0].message.startswith(
        "resumable function 'missing' not found"
    )


def test_related_locations_are_the_findings_own_call_chain() -> None:
    """Each resumable function's findings link the calls that reach them from that
    function only (the chain of one root leaked into the next root's findings: the
    n-th of n Agents' findings carried n links, most of them about other Agents, and a
    2,000-line Program published 528 KB of diagnostics per keystroke)."""
    parts = ["from openprogram import Agent as Base, llm\n"]
    for i in range(4):
        parts.append(
            f"\n\nclass Writer{i}(Base):\n"
            f'    method_options = {{"report": {{"resumable": True}}}}\n\n'
            f"    def report(self, topic):\n        return self.helper(topic)\n\n"
            f"    def helper(self, text):\n        return llm(text)\n"
        )
    found = [f for f in analyze_source("".join(parts), "prog.py") if f.code == "OP206"]
    assert len(found) == 4
    for i, f in enumerate(found):
        assert [r.message for r in f.related] == [
            f"'Writer{i}.report' calls 'Writer{i}.helper' here"
        ]
    # the leaked chain also made the next roots look like helpers: an async resumable
    # method after one with a finding was not OP208
    later_async = "".join(parts) + textwrap.dedent(
        """

        class Late(Base):
            method_options = {"run": {"resumable": True}}

            async def run(self, topic):
                return topic
        """
    )
    assert "OP208" in {f.code for f in analyze_source(later_async, "prog.py")}


def test_planner_check() -> None:
    ok = "def workflow():\n    plan = llm('plan')\n    return route(plan, ['a', 'b'])\n"
    assert check_planner_code(ok, ["llm", "route"]) == []
    bad = "import os\n\ndef workflow():\n    return os.getcwd()\n\ndef workflow():\n    pass\n"
    found = check_planner_code(bad, ["llm"])
    assert {f.code for f in found} == {"OP210"}  # the import is the Planner check's own
    assert "imports are not allowed in Planner code" in found[0].message
    assert check_planner_code("def workflow(:\n", [])[0].code == "OP001"


def _store(tmp_path: Path, steps: list[tuple[str, int]], status: str = "paused") -> Path:
    from openprogram.store.runs import open_run_store

    open_run_store(tmp_path).close()  # the real store's tables

    db = sqlite3.connect(tmp_path / "openprogram.db")
    db.execute(
        "INSERT INTO runs (id, entry, function_qualname, status, created_at, updated_at) "
        "VALUES (?, ?, ?, ?, 0, 0)",
        ("run1", "p.py:report", "Reporter.report", status),
    )
    for pos, (name, occ) in enumerate(steps):
        db.execute(
            "INSERT INTO run_steps (run_id, step_key, scope, position, kind, name, occurrence, "
            "input_hash, status, started_at) VALUES (?, ?, '', ?, 'step', ?, ?, 'h', 'completed', 0)",
            ("run1", f"{name}#{occ}", pos, name, occ),
        )
    db.commit()
    db.close()
    return tmp_path


PROGRAM = textwrap.dedent(
    """\
    from openprogram import Agent, step


    class Reporter(Agent):
        method_options = {"report": {"resumable": True}}

        def report(self, topic: str) -> str:
            a = step("fetch", str.upper, topic)
            b = step("summarize", str.lower, a)
            return step("write", str.title, b)
    """
)


def test_op209_against_a_real_store(tmp_path: Path) -> None:
    store = _store(tmp_path, [("fetch", 0), ("summarize", 0)])
    rec = recorded_steps(str(store))
    assert rec == {"Reporter.report": [[("fetch", 0), ("summarize", 0)]]}
    assert analyze_source(PROGRAM, "p.py", recorded_steps=rec) == []
    renamed = PROGRAM.replace('"fetch"', '"download"')
    (found,) = analyze_source(renamed, "p.py", recorded_steps=rec)
    assert found.code == "OP209"
    assert found.message == (
        "step 'download' replaces step 'fetch' recorded for 'Reporter.report': "
        "this edit breaks 1 unfinished run"
    )
    # at the renamed step(...) call, not on the function
    assert (found.line, found.column, found.end_line) == (8, 13, 8)
    reordered = (
        PROGRAM.replace('step("fetch"', 'step("tmp"')
        .replace('step("summarize"', 'step("fetch"')
        .replace('step("tmp"', 'step("summarize"')
    )
    (moved,) = analyze_source(reordered, "p.py", recorded_steps=rec)
    assert (
        moved.code == "OP209" and moved.line == 8 and "'summarize' now runs before" in moved.message
    )


def test_op209_counts_the_runs_each_change_breaks() -> None:
    runs = [[("fetch", 0), ("summarize", 0)], [("fetch", 0)], [("fetch", 0), ("summarize", 0)]]
    recorded = {"Reporter.report": runs}
    renamed = PROGRAM.replace('step("summarize"', 'step("digest"')
    (found,) = analyze_source(renamed, "p.py", recorded_steps=recorded)
    assert (found.line, found.column) == (9, 13)  # the renamed step(...) call
    assert found.message.endswith("this edit breaks 2 unfinished runs")  # not the fetch-only run
    deleted_src = PROGRAM.replace('step("fetch", str.upper, topic)', "topic")
    (deleted,) = analyze_source(deleted_src, "p.py", recorded_steps=recorded)
    assert (deleted.line, deleted.column, deleted.end_column) == (7, 9, 15)  # def report
    assert deleted.message == (
        "step 'fetch' recorded for 'Reporter.report' no longer exists: "
        "this edit breaks 3 unfinished runs"
    )


EVALUATED = textwrap.dedent(
    """\
    from openprogram import Agent, step


    def ask(i: int, b: int = 0) -> int:
        return i


    class Reporter(Agent):
        method_options = {"report": {"resumable": True}}

        def report(self, n: int) -> int:
            BODY

        def hook(self, a: int) -> int:
            return step("hook", ask, a)
    """
)

#: a body, and the steps it runs in the order Python evaluates them
IN_EVALUATION_ORDER = {
    "argument": ('return step("last", ask, self.hook(n))', ["hook", "last"]),
    "keyword": ('return step("last", ask, n, b=self.hook(n))', ["hook", "last"]),
    "star after keyword": (
        'return step("last", ask, b=self.hook(n), *[step("first", ask, n)])',
        ["first", "hook", "last"],
    ),
    "receiver": ('return self.hook(n).__add__(step("after", ask, n))', ["hook", "after"]),
    "into a helper": ('return self.hook(step("arg", ask, n))', ["arg", "hook"]),
    "assignment": (
        'd = {}; d[step("key", ask, n)] = step("value", ask, n); return 0',
        ["value", "key"],
    ),
    "condition": ('return step("a", ask, n) if step("cond", ask, n) else 0', ["cond", "a"]),
    "comprehension": (
        'return sum([step("elt", ask, i) for i in step("iter", ask, [n])])',
        ["iter", "elt"],
    ),
}


@pytest.mark.parametrize(
    ("body", "order"), IN_EVALUATION_ORDER.values(), ids=list(IN_EVALUATION_ORDER)
)
def test_op209_follows_the_evaluation_order(body: str, order: list[str]) -> None:
    """A run recorded its steps in the order Python ran them: arguments (nested calls, a
    helper's steps) before the call, keyword arguments after positional ones, the value of
    an assignment before its target. That order is no edit; the reverse is."""
    source = EVALUATED.replace("BODY", body)
    ran = {"Reporter.report": [[(name, 0) for name in order]]}
    assert analyze_source(source, "p.py", recorded_steps=ran) == []
    backwards = {"Reporter.report": [[(name, 0) for name in reversed(order)]]}
    (moved,) = analyze_source(source, "p.py", recorded_steps=backwards)
    assert moved.code == "OP209" and "now runs before" in moved.message, moved


def test_store_adapter_tolerates_missing_tables(tmp_path: Path) -> None:
    assert recorded_steps(str(tmp_path)) == {}
    sqlite3.connect(tmp_path / "openprogram.db").close()
    assert recorded_steps(str(tmp_path)) == {}
    other = tmp_path / "completed"
    other.mkdir()
    assert recorded_steps(str(_store(other, [("a", 0)], "completed"))) == {}


def test_suppressions_and_fix() -> None:
    src = AGENT.replace('"timeout": "x"}}', '"timeout": "x"}}  # noqa: OP102')
    codes = [f.code for f in analyze_source(src, "a.py")]
    assert "OP102" not in codes and "OP106" in codes
    other = AGENT.replace(
        '"timeout": "x"}}', '"timeout": "x"}}  # openprogram: ignore[OP106, OP203]'
    )
    found = analyze_source(other, "a.py")
    assert "OP106" not in [f.code for f in found]
    assert [f.message for f in found if f.code == "OP900"] == [
        "unused suppression of OP203: no OP203 finding on this line"
    ]
    assert analyze_source("# openprogram: noqa\n" + AGENT, "a.py") == []
    first = analyze_source(AGENT, "a.py")[0]
    fixed = apply_edits(AGENT, suppression_fix(AGENT, first).edits)
    assert first.code not in [f.code for f in analyze_source(fixed, "a.py")]


def test_config_selection() -> None:
    cfg = LintConfig(select=("OP1",), ignore=("OP106",))
    codes = {f.code for f in analyze_source(AGENT, "a.py", config=cfg)}
    assert codes == {"OP102", "OP103"}
    cfg2 = LintConfig(per_file_ignores={"a.py": ("OP1",)})
    assert analyze_source(AGENT, "a.py", config=cfg2) == []


def test_import_is_light() -> None:
    code = (
        "import sys, openprogram_analyzers as oa; from openprogram_analyzers import LintConfig; "
        "bad = [m for m in ('httpx', 'pydantic', 'libcst', 'openprogram.store', 'openprogram.runtime', 'sqlite3') "
        "if m in sys.modules]; print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
    code2 = (
        "import sys; from openprogram_analyzers import analyze_source, RULES; "
        "analyze_source('import openprogram\\n'); "
        "print(','.join(m for m in ('httpx', 'pydantic', 'openprogram.store', 'openprogram.runtime') if m in sys.modules))"
    )
    out2 = subprocess.run([sys.executable, "-c", code2], capture_output=True, text=True, check=True)
    assert out2.stdout.strip() == ""


def test_a_fix_after_which_the_file_would_not_parse_is_not_applied() -> None:
    # the safety net under every fix (--fix and the language server's fix-all): a fix that
    # would break the parse is reported back, the others still apply
    from dataclasses import replace

    from openprogram_analyzers.findings import Fix, TextEdit

    src = "from openprogram import step\n\nA = 1  # noqa: OP203\nB = 2\n"
    [unused] = analyze_source(src, "x.py")
    broken = replace(unused, line=4, fix=Fix("break it", (TextEdit(4, 6, 4, 7, "2 +"),), safe=True))

    def analyze(text: str) -> list:  # as a rule whose fix were broken: found every pass
        return [*analyze_source(text, "x.py"), broken]

    result = fix_until_stable(src, analyze, [unused, broken])
    assert result.source == "from openprogram import step\n\nA = 1\nB = 2\n"
    assert result.applied == 1
    assert [(r.finding.fix.description, r.reason) for r in result.rejected] == [
        ("break it", "file does not parse: invalid syntax (line 4)")
    ]
    # alone, the broken fix leaves the source as it was
    only = fix_until_stable(src, analyze, [broken])
    assert only.source == src and only.applied == 0 and len(only.rejected) == 1
