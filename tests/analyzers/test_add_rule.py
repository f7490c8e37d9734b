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
    env = {**os.environ, "PYTHONPATH": str(copy / "analyzers")}
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
