"""Per-rule tests generated from each rule's embedded VALID / INVALID examples."""

from __future__ import annotations

from pathlib import Path

import pytest

from openprogram_analyzers import RULES, analyze_source, check_planner_code
from openprogram_analyzers.findings import Finding
from openprogram_analyzers.fixes import apply_edits
from openprogram_analyzers.rule import DOC_HEADINGS, Invalid

PLANNER_CODES = ("OP210", "OP211")  # reported by check_planner_code, not analyze_source

CASES_VALID = [
    (code, i, valid.source)
    for code, rule in sorted(RULES.items())
    for i, valid in enumerate(rule.VALID)
]
CASES_INVALID = [
    (code, i, inv.source, inv)
    for code, rule in sorted(RULES.items())
    for i, inv in enumerate(rule.INVALID)
]


def _analyze(code: str, src: str) -> list[Finding]:
    if code in PLANNER_CODES:
        return check_planner_code(src, ["llm"])
    return analyze_source(src, "example.py", recorded_steps=getattr(RULES[code], "RECORDED", None))


def test_every_code_has_examples() -> None:
    from openprogram_analyzers.codes import ALL_CODES

    assert sorted(RULES) == sorted(ALL_CODES)
    for code, rule in RULES.items():
        assert rule.VALID and rule.INVALID, code
        assert rule.__doc__ and code in rule.explain()


def test_every_rule_documents_the_fixed_headings() -> None:
    for code, rule in RULES.items():
        assert list(rule.sections()) == list(DOC_HEADINGS), code
        text = rule.explain()
        headings = [line for line in text.splitlines() if line and not line.startswith(" ")]
        assert headings[1:] == [
            "What it does:",
            "Why:",
            "Example:",
            "Use instead:",
            "Fix safety:",
        ], code


def test_readme_rule_table_is_the_rule_classes() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    rows = [line for line in readme.splitlines() if line.startswith('| <a id="op')]
    assert rows == [RULES[code].readme_row() for code in sorted(RULES)], (
        "README.md's rule table is out of date: run python scripts/rule_table.py"
    )


@pytest.mark.parametrize(("code", "index", "src"), CASES_VALID)
def test_valid_example_has_no_finding(code: str, index: int, src: str) -> None:
    assert _analyze(code, src) == []


@pytest.mark.parametrize(("code", "index", "src", "inv"), CASES_INVALID)
def test_invalid_example(code: str, index: int, src: str, inv: Invalid) -> None:
    findings = [f for f in _analyze(code, src) if f.code == (inv.code or code)]
    assert len(findings) == 1, findings
    f = findings[0]
    assert (f.line, f.column, f.end_line, f.end_column) == inv.range
    assert inv.message in f.message
    assert f.severity == RULES[code].severity
    if code == "OP001" or code in PLANNER_CODES:  # parse errors, Planner code: no suppression
        assert f.fix is None
        return
    assert f.fix is not None  # every finding offers at least the suppression fix
    if inv.fixed is not None:
        assert f.fix.safe == RULES[code].fix_safe  # a did-you-mean guess is unsafe
        fixed = apply_edits(src, f.fix.edits)
        assert fixed == inv.fixed
        assert not [g for g in _analyze(code, fixed) if g.code == code]
    elif code != "OP900":
        # the suppression fix silences exactly this finding
        assert not f.fix.safe and "suppress" in f.fix.description
        suppressed = apply_edits(src, f.fix.edits)
        assert not [g for g in _analyze(code, suppressed) if g.code == code]
        assert not [g for g in _analyze(code, suppressed) if g.code == "OP900"]
