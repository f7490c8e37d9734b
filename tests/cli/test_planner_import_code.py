"""Planner code that imports something is refused by the Planner check with its own code,
OP210 (SPEC §3: "Planner code: a name that is not injected"), not OP202 (an import inside
a helper or resumable function): ``openprogram run`` of a Program running such code."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from cli_programs import OPENPROGRAM, env

PROGRAM = '''
from openprogram.programs.workflow import run_workflow_code

CODE = """
import os


def workflow():
    return llm("Where am I? " + os.getcwd())
"""


def migrate(q: str) -> str:
    return str(run_workflow_code(CODE))


PROGRAM_ENTRIES = ["migrate"]
'''


def test_planner_code_with_an_import_is_refused_as_op210(tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(PROGRAM, encoding="utf-8")
    ran = subprocess.run(
        [OPENPROGRAM, "run", "prog.py:migrate", "--args", '{"q": "x"}', "--store", "st", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**env(), "OPENPROGRAM_MODEL": "scripted:echo"},
    )
    assert ran.returncode == 1, ran.stdout + ran.stderr
    out = json.loads(ran.stdout)
    assert out["status"] == "failed"
    assert (
        "workflow code rejected: line 2, column 1: OP210 imports are not allowed in Planner "
        "code: use only the injected functions"
    ) in out["error"], out
