"""Recorded text the CLI prints in human format — a step's exception message, a model's
reply, an entry's or step's name — reaches the terminal inert: its control characters
(ESC, BEL, a C1 CSI, a carriage return) and bidirectional overrides are written as
visible escapes (``\\x1b``, ``\\u009b``, ``\\u202e``), so untrusted text cannot set the
window title, clear the screen or print a fake coloured line. Real CLI subprocesses, a
loopback server speaking the OpenAI wire format; ``--json`` stays JSON."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from cli_programs import cli, env

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine"))
from loopback import OpenAIServer
from loopback import openai_server as openai_server

OPENPROGRAM = str(Path(sys.executable).parent / "openprogram")

PROGRAM = """
from openprogram import llm, step


def boom(text: str) -> str:
    raise ValueError(text)


def raiser(text: str) -> str:
    return step("boom", boom, text)


def ask(text: str) -> str:
    return llm(text)


def asker(text: str) -> str:
    return step("model\\u202e", ask, text)


raiser.__agent_options__ = {"resumable": True}
asker.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["raiser", "asker"]
"""

# an OSC window title, a screen clear, a fake green line, a C1 CSI, a carriage return
# that would overwrite the line, and a right-to-left override
EVIL = "\x1b]0;pwned\x07\x1b[2J\x1b[32mALL TESTS PASSED\x1b[0m \x9b31m\rX\u202eabc"
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _assert_inert(text: str) -> None:
    assert not RAW.search(text), repr(text)


def _run_id(work: Path) -> str:
    proc = cli("runs", "--store", "st", "--json", cwd=work)
    return json.loads(proc.stdout)[0]["run_id"]


def test_a_step_error_is_printed_with_its_control_characters_escaped(tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(PROGRAM, encoding="utf-8")
    args = json.dumps({"text": EVIL})
    proc = cli("run", "prog.py:raiser", "--store", "st", "--args", args, cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    _assert_inert(proc.stdout + proc.stderr)
    assert "failed: ValueError: \\x1b]0;pwned\\x07\\x1b[2J\\x1b[32mALL" in proc.stderr

    rid = _run_id(tmp_path)
    shown = cli("show", rid, "--store", "st", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    _assert_inert(shown.stdout + shown.stderr)
    assert "-> error: ValueError: \\x1b]0;pwned\\x07" in shown.stdout
    for fmt in ("mermaid",):
        other = cli("show", rid, "--store", "st", "--format", fmt, cwd=tmp_path)
        _assert_inert(other.stdout)

    # the JSON of a failed run keeps the exact text (JSON escapes it itself)
    as_json = cli("show", rid, "--store", "st", "--format", "json", cwd=tmp_path)
    nodes = json.loads(as_json.stdout)["nodes"]
    assert any(n["output"] == {"error": f"ValueError: {EVIL}"} for n in nodes), nodes

    # the error line of a resume of the failed run
    resumed = cli("resume", rid, "--store", "st", cwd=tmp_path)
    _assert_inert(resumed.stdout + resumed.stderr)


def test_a_model_reply_is_printed_with_its_control_characters_escaped(
    tmp_path: Path, openai_server: OpenAIServer
) -> None:
    (tmp_path / "prog.py").write_text(PROGRAM, encoding="utf-8")
    environment = env()
    environment["OPENAI_BASE_URL"] = openai_server.base_url
    openai_server.reply_text(EVIL)
    command = ["run", "prog.py:asker", "--model", "openai:loop", "--store", "st"]
    proc = subprocess.run(
        [OPENPROGRAM, *command, "--args", '{"text": "hi"}'],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=environment,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    _assert_inert(proc.stdout + proc.stderr)  # the result printed after "run … completed"
    # escaped as JSON escapes: the printed result still reads back as the reply
    assert json.loads(proc.stdout.split("\n", 1)[1]) == EVIL

    rid = _run_id(tmp_path)
    shown = cli("show", rid, "--store", "st", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    _assert_inert(shown.stdout)
    llm_line = next(line for line in shown.stdout.splitlines() if "llm loop" in line)
    assert "-> \\x1b]0;pwned\\x07\\x1b[2J\\x1b[32mALL TESTS" in llm_line, llm_line
    assert "code model\\u202e" in shown.stdout  # a step's name too


def test_json_output_escapes_c1_controls_and_bidi_overrides_but_not_other_text(
    tmp_path: Path,
) -> None:
    """``runs --json``, ``run --json``, ``resume --json`` and ``show --format json`` printed
    a C1 CSI (U+009B) and the bidirectional overrides and isolates raw (``ensure_ascii=
    False``): a terminal obeyed them. Now each is a ``\\uXXXX`` escape, as the C0 ones
    are; other non-ASCII text (``é``, ``日本``, U+200E) stays readable, and the JSON reads
    back as the recorded text."""
    (tmp_path / "prog.py").write_text(PROGRAM, encoding="utf-8")
    hostile = "".join(chr(c) for c in [*range(0x80, 0xA0), *range(0x202A, 0x202F)])
    hostile += "".join(chr(c) for c in range(0x2066, 0x206A))
    text = f"é 日本 \u200e \x1b[2J {hostile}"
    args = json.dumps({"text": text})
    ran = cli("run", "prog.py:raiser", "--store", "st", "--args", args, "--json", cwd=tmp_path)
    rid = json.loads(ran.stdout)["run_id"]
    outputs = [
        ran.stdout,
        cli("runs", "--store", "st", "--json", cwd=tmp_path).stdout,
        cli("resume", rid, "--store", "st", "--json", cwd=tmp_path).stdout,
        cli("show", rid, "--store", "st", "--format", "json", cwd=tmp_path).stdout,
    ]
    for out in outputs:
        _assert_inert(out)
        assert "é 日本 \u200e \\u001b[2J \\u0080\\u0081" in out, out
        assert "\\u009b" in out and "\\u202e" in out and "\\u2069" in out
        assert any(f"ValueError: {text}" in s for s in _strings(json.loads(out)))


def _strings(value: object) -> list[str]:
    """Every string in a decoded JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    return [s for v in value for s in _strings(v)] if isinstance(value, list) else []


def test_a_name_with_a_newline_stays_on_its_one_line(tmp_path: Path) -> None:
    """A session or node name holding a newline (written through the store's public API)
    split ``show``'s tree and ``sessions``' table: the text after it printed as a line of
    its own, which could pass for another node. Each stays on its line, the newline shown
    as ``\\n``."""
    from openprogram.store import SessionStore
    from openprogram.store.session_store import SessionNodeWriter

    store = SessionStore(tmp_path / "st")
    sid = store.create_session("two\nFAKE session")
    SessionNodeWriter(store, sid).append(
        "code", "fetch\nFAKE [completed]", output="ok", status="completed"
    )
    store.close()

    shown = cli("show", sid, "--store", "st", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert not [line for line in lines if line.lstrip().startswith("FAKE")], shown.stdout
    assert any("fetch\\nFAKE [completed]" in line for line in lines), shown.stdout

    listed = cli("sessions", "--store", "st", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert not [line for line in listed.stdout.splitlines() if line.startswith("FAKE")]
    assert "two\\nFAKE session" in listed.stdout, listed.stdout
