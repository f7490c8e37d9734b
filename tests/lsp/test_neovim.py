"""Inlay hints work in any LSP client (issue 14, item 5): headless Neovim 0.7 (Debian's
``neovim``) starts ``openprogram-lsp`` with ``vim.lsp.start_client``, opens a Program with a
completed and a paused run, and asks for ``textDocument/inlayHint`` as any client would.

Skips when ``nvim`` is not installed (``.ci/run`` installs it on Debian/Ubuntu)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

OPENPROGRAM = str(Path(sys.executable).parent / "openprogram")
SCRIPT = Path(__file__).with_name("neovim") / "inlay_hints.lua"

PROGRAM = '''\
from openprogram import step
from openprogram.durable import current_run_id, pause_run


def square(n: int) -> int:
    return n * n


def wait_for_review(n: int) -> int:
    """Ask for a pause before the next step (someone reviews first)."""
    pause_run(current_run_id())
    return n


def report(n: int) -> dict:
    return {"n": n}


def pipeline(n: int = 3) -> dict:
    x = step("square", square, n)
    y = step("review", wait_for_review, x)
    return step("report", report, y)


pipeline.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["pipeline"]
'''


def test_neovim_gets_the_step_hints(tmp_path: Path) -> None:
    nvim = shutil.which("nvim")
    if nvim is None:
        pytest.skip("nvim is not installed (apt-get install neovim): Neovim client not checked")
    program = tmp_path / "pipeline.py"
    program.write_text(PROGRAM)
    run = subprocess.run(
        [OPENPROGRAM, "run", "pipeline.py:pipeline", "--args", '{"n": 3}', "--json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert json.loads(run.stdout)["status"] == "paused", run.stderr
    out = tmp_path / "hints.json"
    env = {
        **os.environ,
        "OP_PYTHON": sys.executable,
        "OP_WS": str(tmp_path),
        "OP_FILE": str(program),
        "OP_OUT": str(out),
        "HOME": str(tmp_path),  # no user config, shada or plugins
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
    }
    proc = subprocess.run(
        [nvim, "--headless", "--clean", "-n", "-c", f"luafile {SCRIPT}"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip
    assert out.exists(), f"nvim wrote nothing (exit {proc.returncode}): {proc.stderr}"
    answer = json.loads(out.read_text())
    assert answer["error"] is None and answer["provider"] is True, answer
    lines = PROGRAM.splitlines()
    by_line = {h["position"]["line"]: h["label"] for h in answer["hints"]}
    square = next(i for i, t in enumerate(lines) if 'step("square"' in t)
    review = next(i for i, t in enumerate(lines) if 'step("review"' in t)
    report = next(i for i, t in enumerate(lines) if 'step("report"' in t)
    assert by_line[square].startswith("✓ ") and by_line[square].endswith(" → 9")
    assert by_line[review].startswith("✓ ") and by_line[review].endswith(" → 9")
    assert by_line[report] == "‖ paused here"  # the pause was asked for before "report"
    assert set(by_line) == {square, review, report}
    hint = next(h for h in answer["hints"] if h["position"]["line"] == square)
    assert hint["position"]["character"] == len(lines[square])  # at the end of the line
