"""Programs and a subprocess helper for the run/resume CLI tests."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

OPENPROGRAM = str(Path(sys.executable).parent / "openprogram")
LINT = str(Path(sys.executable).parent / "openprogram-lint")

PROGRAM = '''
import os
import time

from openprogram import step, workflow

HERE = os.path.dirname(os.path.abspath(__file__))


def act(name: str, value: int) -> dict:
    """Record a call; fail while fail_<name> exists; block while block_<name> exists."""
    with open(os.path.join(HERE, "calls.log"), "a", encoding="utf-8") as f:
        f.write(name + " " + str(value) + "\\n")
    while os.path.exists(os.path.join(HERE, "block_" + name)):
        time.sleep(0.01)
    if os.path.exists(os.path.join(HERE, "fail_" + name)):
        raise RuntimeError("injected failure in " + name)
    return {"name": name, "value": value}


def wait_here(tag: str) -> str:
    """Orchestration-free waiting point (a workflow body): blocks while block_<tag> exists."""
    with open(os.path.join(HERE, "calls.log"), "a", encoding="utf-8") as f:
        f.write("wait " + tag + "\\n")
    while os.path.exists(os.path.join(HERE, "block_" + tag)):
        time.sleep(0.01)
    return tag


def main(n: int = 1) -> dict:
    a = step("a", act, "a", n)
    b = step("slow", act, "slow", a["value"] + 1)
    c = step("c", act, "c", b["value"] + 1)
    return {"total": c["value"]}


def waiting(n: int = 1) -> dict:
    a = step("a", act, "a", n)
    workflow("pause-point", wait_here, "gate")
    c = step("c", act, "c", a["value"] + 1)
    return {"total": c["value"]}


def plain(x: int) -> int:
    return x * 2


main.__agent_options__ = {"resumable": True}
waiting.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["main", "waiting", "plain"]
'''


def write_program(folder: Path) -> Path:
    path = folder / "prog.py"
    path.write_text(PROGRAM, encoding="utf-8")
    return path


def calls(folder: Path) -> list[str]:
    log = folder / "calls.log"
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def env() -> dict[str, str]:
    """Environment without any model configured."""
    out = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENPROGRAM_", "OPENAI_", "ANTHROPIC_"))
    }
    out["PYTHONUNBUFFERED"] = "1"
    return out


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [OPENPROGRAM, *args], capture_output=True, text=True, timeout=120, cwd=cwd, env=env()
    )


def lint(
    *args: str, cwd: Path, extra_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``openprogram-lint --no-cache ARGS`` (``extra_env``: variables added to :func:`env`)."""
    return subprocess.run(
        [LINT, "--no-cache", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={**env(), **(extra_env or {})},
    )


def cli_json(*args: str, cwd: Path) -> tuple[int, dict[str, Any]]:
    proc = cli(*args, "--json", cwd=cwd)
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1, (proc.stdout, proc.stderr)
    return proc.returncode, json.loads(lines[0])


def spawn_interruptible(*args: str, cwd: Path) -> subprocess.Popen[str]:
    """Start ``openprogram ARGS`` so that a SIGINT sent to it arrives as a Ctrl-C.

    A process started with SIGINT ignored passes that on to its children (POSIX), and a
    shell without job control ignores SIGINT in everything it starts with ``&`` -- so a
    test session launched in the background (``nohup ... &``, a CI script) would spawn a
    CLI that silently drops the signal. The child gets the default disposition back.
    """
    return subprocess.Popen(
        [OPENPROGRAM, *args],
        cwd=cwd,
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_sigint,  # only signal.signal: no lock another thread may hold
    )


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def ignores_sigint(pid: int) -> bool:
    """Whether process ``pid`` ignores SIGINT (Linux: its SigIgn mask; else ``False``)."""
    status = Path(f"/proc/{pid}/status")
    if not status.exists():
        return False
    for line in status.read_text(encoding="utf-8").splitlines():
        if line.startswith("SigIgn:"):
            return bool(int(line.split()[1], 16) & (1 << (signal.SIGINT - 1)))
    return False


def ctrl_c_in_step_slow(folder: Path, *extra: str, store: str = "st") -> tuple[int, str, str]:
    """``openprogram run prog.py:main --store STORE EXTRA`` interrupted by a Ctrl-C
    (SIGINT) while its step 'slow' executes: ``(returncode, stdout, stderr)``."""
    (folder / "block_slow").touch()
    proc = spawn_interruptible("run", "prog.py:main", "--store", store, *extra, cwd=folder)
    try:
        while "slow 2" not in calls(folder):
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        assert not ignores_sigint(proc.pid), "the CLI was started with SIGINT ignored"
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:  # never leave a blocked CLI behind
            proc.kill()
            proc.communicate()
    return proc.returncode, stdout, stderr


def python(script: str, *, cwd: Path, store: str = "st") -> subprocess.CompletedProcess[str]:
    """``python SCRIPT`` in ``cwd`` (a Program called directly from Python), its runs in
    ``cwd/store`` (``OPENPROGRAM_STORE``), no model configured."""
    return subprocess.run(
        [sys.executable, script],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={**env(), "OPENPROGRAM_STORE": str(cwd / store)},
    )
