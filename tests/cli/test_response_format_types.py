"""``llm(..., response_format={"name": str})``: Python types (the decision schema
shorthand) are not a JSON schema. ``openprogram-lint`` reports the literal with OP307 and
``openprogram run`` refuses the call, before any request, with the same code and
message (it failed with a StoreError about a non-JSON node input)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from cli_programs import OPENPROGRAM, env, lint

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine"))
from loopback import OpenAIServer
from loopback import openai_server as openai_server

PROGRAM = """\
from openprogram import llm


def main() -> object:
    return llm("Extract the person", response_format={"name": str, "age": int})


PROGRAM_ENTRIES = ["main"]
"""


def test_python_types_in_response_format_are_refused_with_lints_code_and_message(
    tmp_path: Path, openai_server: OpenAIServer
) -> None:
    (tmp_path / "prog.py").write_text(PROGRAM, encoding="utf-8")
    linted = lint("prog.py", cwd=tmp_path)
    assert linted.returncode == 1, linted.stdout + linted.stderr
    first = next(ln for ln in linted.stdout.splitlines() if " OP307 " in ln)
    said = first.split(": ", 1)[1]
    assert said.startswith("OP307 ") and 'found str; write {"type": "string"}' in said
    openai_server.reply_text('{"name": "Ann", "age": 3}')
    ran = subprocess.run(
        [OPENPROGRAM, "run", "prog.py:main", "--store", "st"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={
            **env(),
            "OPENAI_BASE_URL": openai_server.base_url,
            "OPENAI_API_KEY": "sk-test",
            "OPENPROGRAM_MODEL": "openai:test-model",
        },
    )
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert "StoreError" not in ran.stderr, ran.stderr
    (failed,) = [ln for ln in ran.stderr.splitlines() if " failed: " in ln]
    reason = failed.split(" failed: ResponseFormatViolation: ", 1)[1]
    assert reason.split(" (in ", 1)[0] == said, (reason, said)
    assert "(in response_format['name'])" in reason
    assert openai_server.requests == []  # refused before any request
