"""``openprogram run`` on a terminal: a live progress line (real subprocess on a pty)."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
import time
from pathlib import Path

from openprogram.cli.progress import progress_line

OPENPROGRAM = str(Path(sys.executable).parent / "openprogram")

PROGRAM = """\
import time as t
from openprogram import llm, step


def ask(question: str) -> str:
    return llm(question)


def wait(seconds: float) -> float:
    t.sleep(seconds)
    return seconds


def main() -> str:
    answer = step("ask", ask, "hello")
    step("wait", wait, 1.5)
    return answer


main.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["main"]
"""


def _run_on_pty(cwd: Path) -> tuple[int, str, str]:
    master, slave = pty.openpty()
    env = {**os.environ, "OPENPROGRAM_MODEL": "scripted:echo"}
    proc = subprocess.Popen(
        [OPENPROGRAM, "run", "prog.py:main", "--json"],
        cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    os.close(slave)
    chunks = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            data = os.read(master, 4096)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    out = proc.stdout.read().decode() if proc.stdout else ""
    return proc.wait(timeout=60), out, b"".join(chunks).decode("utf-8", "replace")


def test_progress_line_moves_inside_a_step_and_counts_model_calls(tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(PROGRAM)
    code, out, terminal = _run_on_pty(tmp_path)
    assert code == 0, terminal
    assert json.loads(out)["status"] == "completed"  # --json stdout untouched
    lines = [part for part in terminal.split("\r\x1b[2K") if part.strip()]
    waiting = [
        float(m.group(1))
        for line in lines
        if (
            m := re.search(r"run: 1 steps done · current: wait#0 ([\d.]+) s · model calls: 1", line)
        )
    ]
    assert len(set(waiting)) >= 2, lines  # redrawn while the step runs, not only at its edges
    assert terminal.endswith("\r\x1b[2K")  # the line is cleared at the end


def test_no_progress_drawn_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(PROGRAM.replace("1.5", "0.3"))
    proc = subprocess.run(
        [OPENPROGRAM, "run", "prog.py:main"],
        cwd=tmp_path, env={**os.environ, "OPENPROGRAM_MODEL": "scripted:echo"},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0 and "\x1b" not in proc.stderr and "steps done" not in proc.stderr


def test_progress_line_text() -> None:
    assert (
        progress_line("resume", 3, "fetch#2", 1.42, 2, (120, 45), 5.2)
        == "resume: 3 steps done · current: fetch#2 1.4 s · model calls: 2 (120→45 tokens) · 5.2 s"
    )
    assert progress_line("run", 0, "", 0, 0, (0, 0), 0.04) == (
        "run: 0 steps done · current: - · model calls: 0 · 0.0 s"
    )


def test_system_exit_at_import_is_a_normal_error(tmp_path: Path) -> None:
    (tmp_path / "quits.py").write_text("import sys\nsys.exit(4)\n")
    proc = subprocess.run(
        [OPENPROGRAM, "run", "quits.py:main", "--json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 2  # usage error, not the Program's 4
    assert json.loads(proc.stdout) == {
        "run_id": None,
        "status": "error",
        "error": "quits.py: importing the Program failed: SystemExit(4) (at quits.py:2)",
    }
