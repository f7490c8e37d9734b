"""Project-wide checks that keep the repository honest: the README matches the rulebook
and CI, and the code is formatted, lint-clean, type-clean and lints itself clean."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BIN = Path(sys.executable).parent


def test_readme_documents_every_rule() -> None:
    from openprogram_analyzers import RULES

    documented = set(re.findall(r'<a id="(op\d{3})"></a>', README))
    assert documented == {code.lower() for code in RULES}


def test_ci_runs_the_readme_test_command() -> None:
    blocks = re.findall(r"```sh\n(.*?)\n```", README, flags=re.S)
    test_command = next(b for b in blocks if "pytest" in b)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert test_command.replace("python3", "$PY") in ci


@pytest.mark.parametrize(
    "command",
    [
        ["ruff", "check", "."],
        ["ruff", "format", "--check", "."],
        pytest.param(["mypy"], marks=pytest.mark.slow),
        pytest.param(["openprogram-lint", "--no-cache", "."], marks=pytest.mark.slow),
    ],
    ids=["ruff-check", "ruff-format", "mypy", "openprogram-lint"],
)
def test_code_quality(command: list[str]) -> None:
    exe = BIN / command[0]
    out = subprocess.run(
        [str(exe), *command[1:]], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
