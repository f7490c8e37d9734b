"""The VS Code extension's Node integration test, run against this interpreter's server.

`npm run test:integration` (in `vscode-extension/`) starts `openprogram-lsp` through the
extension's own launch code and checks the diagnostics over real LSP. It needs the
extension's `node_modules` (CI runs `npm ci` before pytest).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXTENSION_DIR = Path(__file__).resolve().parents[2] / "vscode-extension"

pytestmark = pytest.mark.slow


def test_extension_launches_server_and_gets_op_codes() -> None:
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed")
    if not (EXTENSION_DIR / "node_modules").is_dir():
        pytest.skip("vscode-extension/node_modules missing: run `npm ci` in vscode-extension/")
    env = {**os.environ, "OPENPROGRAM_TEST_PYTHON": sys.executable}
    proc = subprocess.run(
        [npm, "run", "--silent", "test:integration"],
        cwd=EXTENSION_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-6000:]
    assert "# fail 0" in output, output[-6000:]
    passed = re.search(r"^# pass (\d+)$", output, re.MULTILINE)
    assert passed is not None and int(passed.group(1)) >= 2, output[-6000:]
