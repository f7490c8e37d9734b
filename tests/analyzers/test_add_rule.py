"""``scripts/add_rule.py`` as a newcomer runs it, on a copy of the repository: the rule file,
its README row, and the rule everywhere else (codes, --explain, --list-rules) with
nothing else registered."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_add_rule_creates_the_file_and_the_readme_row(tmp_path: Path) -> None:
    copy = tmp_path / "repo"
    for part in ("analyzers", "scripts"):
        shutil.copytree(ROOT / part, copy / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "README.md", copy / "README.md")
    r = subprocess.run(
        [
            sys.executable,
            "scripts/add_rule.py",
            "OP109",
            "options-too-long",
            "method_options entry with too many keys",
            "--severity",
            "warning",
        ],
        cwd=copy,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "op109_options_too_long.py" in r.stdout
    rule_file = copy / "analyzers/openprogram_analyzers/rules/op109_options_too_long.py"
    text = rule_file.read_text()
    assert "Why:" in text and "Fix safety:" in text and "range=(" in text
    rows = [line for line in (copy / "README.md").read_text().splitlines() if "<a id=" in line]
    row = '| <a id="op109"></a>`OP109` | options-too-long | warning | method_options entry with too many keys |'
    assert rows[rows.index(row) - 1].startswith('| <a id="op108"></a>')  # in code order
    env = _env_of(copy)
    show = (
        "from openprogram_analyzers.codes import ALL_CODES\n"
        "from openprogram_analyzers.rules import RULES\n"
        "r = RULES['OP109']\n"
        "print('OP109' in ALL_CODES, r.severity, r.readme_row() in open('README.md').read())\n"
        "print(r.explain())\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", show], cwd=copy, env=env, capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    first, _, explain = r.stdout.partition("\n")
    assert first == "True warning True"
    assert explain.startswith("OP109 (options-too-long): method_options entry with too many keys")
    assert "Example:" in explain and "Use instead:" in explain and "Fix safety:" in explain


def _env_of(copy: Path) -> dict[str, str]:
    """The environment that imports the copy's analyzer (the engine as the tests import
    it: the tree under test when PYTHONPATH names it, else the installed package)."""
    paths = [str(copy / "analyzers"), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def _copy_repo(tmp_path: Path) -> Path:
    copy = tmp_path / "repo"
    for part in ("analyzers", "scripts"):
        shutil.copytree(ROOT / part, copy / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "README.md", copy / "README.md")
    return copy


def test_rule_table_regenerates_a_stale_readme(tmp_path: Path) -> None:
    copy = _copy_repo(tmp_path)
    readme = copy / "README.md"
    good = readme.read_text()
    op104 = next(line for line in good.splitlines() if line.startswith('| <a id="op104"'))
    readme.write_text(good.replace(op104 + "\n", "").replace("| malformed render_range |", "| x |"))
    run = [sys.executable, "scripts/rule_table.py"]
    check = subprocess.run([*run, "--check"], cwd=copy, capture_output=True, text=True)
    assert check.returncode == 1 and "out of date" in check.stdout
    subprocess.run(run, cwd=copy, check=True, capture_output=True)
    assert readme.read_text() == good
    check = subprocess.run([*run, "--check"], cwd=copy, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout


OLD_FORMAT_RULE = '''"""OP102: unknown option key (with a did-you-mean)."""

from __future__ import annotations

from typing import Any, ClassVar

import libcst as cst

from openprogram.options import OPTIONS, did_you_mean
from openprogram_analyzers.literals import string_literal_like, string_value
from openprogram_analyzers.rule import Context, FamilyRule, Invalid


class RuleOP102(FamilyRule):
    """Option keys come from the one table in ``openprogram.options``. An unknown key is
    almost always a typo; the fix replaces it with the closest valid key.
    """

    code = "OP102"
    name = "unknown-option-key"
    summary = "unknown option key (with a did-you-mean)"
    family = "options_family"
    fix_safe = False
    VALID: ClassVar[list[str]] = [
        'from openprogram import agentic_function\\n\\n\\n@agentic_function(expose="io")\\ndef f(text: str) -> str:\\n    return "\\\\n"\\n',
    ]
    INVALID: ClassVar[list[tuple[str, Invalid]]] = [
        (
            'from openprogram import Agent\\n\\n\\nclass A(Agent):\\n    method_options = {"f": {"expsoe": "io"}}\\n\\n    def f(self) -> None:\\n        pass\\n',
            Invalid(
                "OP102",
                5,
                29,
                5,
                37,
                "unknown method_options key 'expsoe' (method 'f'); did you mean 'expose'?",
                fixed='from openprogram import Agent\\n\\n\\nclass A(Agent):\\n    method_options = {"f": {"expose": "io"}}\\n\\n    def f(self) -> None:\\n        pass\\n',
            ),
        ),
    ]

    def fix_for(
        self, ctx: Context, finding: Any
    ) -> tuple[str, list[tuple[cst.CSTNode, str]]] | None:
        node = finding.node
        key = string_value(node) if isinstance(node, cst.BaseExpression) else None
        best = did_you_mean(key, OPTIONS) if key is not None else None
        if best is None or not isinstance(node, cst.BaseExpression):
            return None
        return (f"replace {key!r} by {best!r}", [(node, string_literal_like(node, best))])
'''


def test_migrate_rewrites_an_old_format_rule_and_keeps_its_examples(tmp_path: Path) -> None:
    """A rule added the old way on another branch: after the migration it is the same rule
    (same example sources, ranges, messages, fixes) in the one-readable-file format; the
    rule examples run on it; new-format files are left alone."""
    copy = _copy_repo(tmp_path)
    rules = copy / "analyzers/openprogram_analyzers/rules"
    target = rules / "op102_unknown_option.py"
    target.write_text(OLD_FORMAT_RULE)
    untouched = {p: p.read_text() for p in rules.glob("op*.py") if p != target}
    script = [sys.executable, "scripts/migrate_rule_examples.py"]
    r = subprocess.run(script, cwd=copy, capture_output=True, text=True, check=True)
    assert "1 rule file(s) rewritten" in r.stdout, r.stdout + r.stderr
    assert {p: p.read_text() for p in untouched} == untouched
    new = target.read_text()
    assert "ClassVar[list[str]]" not in new and "range=(5, 29, 5, 37)" in new
    assert "family = options_family.findings_for" in new
    assert '"""Why: Option keys come' in new and "Fix safety: Unsafe:" in new
    env = _env_of(copy)
    show = (
        "from openprogram_analyzers.rules import RULES\n"
        "r = RULES['OP102']\n"
        "print(repr([v.source for v in r.VALID]))\n"
        "print(repr([(i.source, i.range, i.message, i.fixed, i.code) for i in r.INVALID]))\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", show], cwd=copy, env=env, capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    valid, invalid = r.stdout.splitlines()
    src = 'from openprogram import Agent\n\n\nclass A(Agent):\n    method_options = {"f": {"expsoe": "io"}}\n\n    def f(self) -> None:\n        pass\n'
    fixed = src.replace("expsoe", "expose")
    assert valid == repr(
        [
            'from openprogram import agentic_function\n\n\n@agentic_function(expose="io")\ndef f(text: str) -> str:\n    return "\\n"\n'
        ]
    )
    message = "unknown method_options key 'expsoe' (method 'f'); did you mean 'expose'?"
    assert invalid == repr([(src, (5, 29, 5, 37), message, fixed, None)])
    again = subprocess.run(script, cwd=copy, capture_output=True, text=True, check=True)
    assert "0 rule file(s) rewritten" in again.stdout
