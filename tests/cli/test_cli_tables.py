"""``openprogram runs``, ``sessions`` and ``show`` print aligned tables on a terminal (issue 14,
item 7): real subprocesses writing to a pseudo-terminal of a known width, and to a pipe."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

from openprogram.cli.table import cell_width

ROOT = Path(__file__).resolve().parents[2]
OPENPROGRAM = str(Path(sys.executable).parent / "openprogram")

WIDE = """\
from openprogram import step


def 集計(n: int) -> int:
    return n + 1


def 長い名前の報告を作る関数(n: int = 1) -> int:
    return step("集計", 集計, n)


長い名前の報告を作る関数.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["長い名前の報告を作る関数"]
"""


def on_tty(cwd: Path, *args: str, columns: int) -> list[str]:
    """Run the CLI with stdout on a pseudo-terminal ``columns`` wide; its output lines."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["PYTHONIOENCODING"] = "utf-8"
    proc = subprocess.Popen(
        [OPENPROGRAM, *args], cwd=cwd, stdin=subprocess.DEVNULL, stdout=slave,
        stderr=subprocess.PIPE, env=env,
    )  # fmt: skip
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.wait(timeout=60) == 0, proc.stderr.read() if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    return b"".join(chunks).decode("utf-8").replace("\r\n", "\n").splitlines()


def piped(cwd: Path, *args: str) -> list[str]:
    proc = subprocess.run(
        [OPENPROGRAM, *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=True,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
    )  # fmt: skip
    return proc.stdout.splitlines()


def column_starts(line: str, header: str, names: list[str]) -> list[int]:
    """Display columns at which the header's ``names`` start (for data lines: the same cells)."""
    return [cell_width(header[: header.index(n)]) for n in names]


def cells_start_at(line: str, starts: list[int]) -> bool:
    """Each start column of ``line`` is a cell boundary: a space before it, text at it."""
    col, at = 0, {}
    for ch in line:
        at[col] = ch
        col += cell_width(ch)
    return all(at.get(s, " ") != " " and at.get(s - 2, " ") == " " for s in starts)


def cells_end_at(line: str, end: int) -> bool:
    """A cell ends at display column ``end``: text there, a space after it."""
    col, at = 0, {}
    for ch in line:
        at[col] = ch
        col += cell_width(ch)
    return at.get(end, " ") != " " and at.get(end + 1, " ") == " "


def test_runs_and_show_are_aligned_tables_fitted_to_the_terminal(tmp_path: Path) -> None:
    (tmp_path / "report_pipeline.py").write_text(
        (ROOT / "examples" / "report_pipeline.py").read_text()
    )
    (tmp_path / "wide.py").write_text(WIDE, encoding="utf-8")
    for ref, args in (
        ("report_pipeline.py:build_report", {"topic": "tides"}),
        ("wide.py:長い名前の報告を作る関数", {"n": 2}),
    ):
        out = subprocess.run(
            [OPENPROGRAM, "run", ref, "--args", json.dumps(args), "--json"],
            cwd=tmp_path, capture_output=True, text=True, timeout=120, check=True,
        )  # fmt: skip
        assert json.loads(out.stdout)["status"] == "completed"
    listed = json.loads(piped(tmp_path, "runs", "--json")[0])
    [report_id] = [r["run_id"] for r in listed if r["function"] == "build_report"]

    # Wide enough: every cell whole, columns aligned by display width (CJK counts two).
    lines = on_tty(tmp_path, "runs", columns=120)
    header = lines[0]
    assert header.split() == ["RUN_ID", "STATUS", "ENTRY", "PAUSED_STEP", "UPDATED"]
    starts = column_starts(header, header, ["STATUS", "ENTRY", "PAUSED_STEP", "UPDATED"])
    assert len(lines) == 3 and all(cells_start_at(line, starts) for line in lines[1:])
    assert any("長い名前の報告を作る関数" in line for line in lines)
    # Narrow: the entry column is cut with an ellipsis and no line is wider than the terminal.
    narrow = on_tty(tmp_path, "runs", columns=80)
    assert all(cell_width(line) <= 80 for line in narrow), narrow
    assert any("…" in line for line in narrow) and not any(
        "長い名前の報告を作る関数" in ln for ln in narrow
    )
    starts = column_starts(narrow[0], narrow[0], ["STATUS", "ENTRY", "PAUSED_STEP", "UPDATED"])
    assert all(cells_start_at(line, starts) for line in narrow[1:])
    # A pipe gets every cell whole, whatever its length (scripts read it).
    assert any("長い名前の報告を作る関数" in line for line in piped(tmp_path, "runs"))

    sessions = on_tty(tmp_path, "sessions", columns=100)
    assert sessions[0].split() == ["ID", "NAME", "NODES", "UPDATED"] and len(sessions) == 3

    # show RUN on a terminal: the call tree as NODE / STATUS / DURATION / OUTPUT columns.
    shown = on_tty(tmp_path, "show", report_id, columns=80)
    assert shown[0].startswith(f"session {report_id}: 14 nodes")
    assert shown[1].split() == ["NODE", "STATUS", "DURATION", "OUTPUT"]
    starts = column_starts(shown[1], shown[1], ["STATUS", "OUTPUT"])
    assert len(shown) == 2 + 14 and all(cells_start_at(line, starts) for line in shown[2:])
    # DURATION is right-aligned: every duration ends where the header does
    end = column_starts(shown[1], shown[1], ["DURATION"])[0] + len("DURATION") - 1
    assert all(cells_end_at(line, end) for line in shown[2:]), shown
    assert all(cell_width(line) <= 80 for line in shown)
    assert shown[-1].split()[1:4] == ["code", "publish", "completed"]
    # piped, show keeps one line per node
    assert piped(tmp_path, "show", report_id)[1].startswith("code build_report [completed] ")


PAUSING = """
import os

from openprogram import step
from openprogram.durable import current_run_id, pause_run

HERE = os.path.dirname(os.path.abspath(__file__))


def charge(i: int) -> int:
    if i == 2 and os.path.exists(os.path.join(HERE, "crash")):
        os._exit(9)  # the process dies inside the step: its result is never saved
    return i


def ask_pause(i: int) -> int:
    pause_run(current_run_id())
    return i


def billing(n: int = 3) -> int:
    total = 0
    for i in range(n):
        total += step("charge", charge, i)
    return total


def pausing() -> int:
    step("ask", ask_pause, 1)
    return step("after", charge, 0)


billing.__agent_options__ = {"resumable": True}
pausing.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["billing", "pausing"]
"""


def test_runs_and_show_say_why_a_run_paused(tmp_path: Path) -> None:
    """A run paused on an uncertain step and one paused on request: ``runs`` tells them
    apart (the ``pause_reason`` of ``--json``), fitted to a terminal; ``show`` says the same."""
    (tmp_path / "billing.py").write_text(PAUSING, encoding="utf-8")
    (tmp_path / "crash").touch()

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [OPENPROGRAM, *args], cwd=tmp_path, capture_output=True, text=True, timeout=120,
            env={**os.environ, "PYTHONIOENCODING": "utf-8"},
        )  # fmt: skip

    assert cli("run", "billing.py:billing").returncode == 9  # died inside charge #2
    [dead] = [r["run_id"] for r in json.loads(cli("runs", "--json").stdout)]
    resumed = cli("resume", dead, "--json")
    assert resumed.returncode == 3 and json.loads(resumed.stdout)["paused_step"] == "charge"
    requested = cli("run", "billing.py:pausing", "--json")
    assert requested.returncode == 3, requested.stderr
    asked = json.loads(requested.stdout)["run_id"]

    listed = {r["run_id"]: r for r in json.loads(cli("runs", "--json").stdout)}
    assert {rid: r["pause_reason"] for rid, r in listed.items()} == {
        dead: "uncertain",
        asked: "requested",
    }
    for lines in (piped(tmp_path, "runs"), on_tty(tmp_path, "runs", columns=80)):
        header = lines[0]
        assert header.split() == ["RUN_ID", "STATUS", "ENTRY", "PAUSED_STEP", "UPDATED"]
        rows = {line.split()[0]: line for line in lines[1:]}
        assert rows[dead].split()[1:5] == ["paused", "(uncertain)", "billing", "charge"]
        assert rows[asked].split()[1:5] == ["paused", "(requested)", "pausing", "after"]
        starts = column_starts(header, header, ["STATUS", "ENTRY", "PAUSED_STEP", "UPDATED"])
        assert all(cells_start_at(line, starts) for line in lines[1:]), lines
        assert all(cell_width(line) <= 80 for line in lines), lines

    assert piped(tmp_path, "show", dead)[0].endswith(
        "; run paused (uncertain) at step 'charge' (occurrence 2)"
    )
    assert on_tty(tmp_path, "show", asked, columns=80)[0].endswith(
        "; run paused (requested) at step 'after'"
    )
