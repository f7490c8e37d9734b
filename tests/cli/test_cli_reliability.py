"""The CLI under faults, in real subprocesses (issue 16, items 11-14 and 16).

``sys.exit()`` inside a run, Ctrl-C under ``--json``, hostile ``--args`` and imports, a
full disk mid-run (a 4 MiB tmpfs the Program fills), a read-only store (a read-only bind
mount as root, permissions otherwise), and one exit-code table for the same
store fault across every command.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_programs import (
    OPENPROGRAM,
    calls,
    cli,
    cli_json,
    ctrl_c_in_step_slow,
    env,
    write_program,
)

EXITING = '''
import os
import sys
import time

from openprogram import step, workflow

HERE = os.path.dirname(os.path.abspath(__file__))


def record(name: str) -> str:
    return name


def gate() -> str:
    """Blocks while block_gate exists (a workflow body, outside any step)."""
    with open(os.path.join(HERE, "calls.log"), "a", encoding="utf-8") as f:
        f.write("exit gate\\n")
    while os.path.exists(os.path.join(HERE, "block_gate")):
        time.sleep(0.01)
    return "open"


def entry_exits(code: int = 3) -> str:
    sys.exit(code)


def step_exits(code: int = 4) -> str:
    step("before", record, "before")
    return step("quit", sys.exit, code)


def exits_after_gate(code: int = 5) -> str:
    step("before", record, "before")
    workflow("gate", gate)
    sys.exit(code)


step_exits.__agent_options__ = {"resumable": True}
exits_after_gate.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["entry_exits", "step_exits", "exits_after_gate"]
'''

FILLING = """
import os

from openprogram import step


def fill_disk(path: str) -> int:
    \"\"\"Write ``path`` until the disk is full, to the last byte.\"\"\"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    written = 0
    try:
        for size in (1 << 16, 1 << 12, 1):
            while True:
                try:
                    written += os.write(fd, b"x" * size)
                except OSError:
                    break
    finally:
        os.close(fd)
    return written


def blob(i: int) -> str:
    return str(i) * 65536


def fill(ballast: str) -> str:
    step("fill", fill_disk, ballast)
    return step("blob", blob, 1)


fill.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["fill"]
"""


@pytest.fixture()
def work(tmp_path: Path) -> Path:
    write_program(tmp_path)
    (tmp_path / "exiting.py").write_text(EXITING, encoding="utf-8")
    return tmp_path


def run_status(work: Path, run_id: str) -> str:
    proc = cli("runs", "--json", "--store", "st", cwd=work)
    [run] = [r for r in json.loads(proc.stdout) if r["run_id"] == run_id]
    return str(run["status"])


# -- item 11: sys.exit() and Ctrl-C ---------------------------------------------------


@pytest.mark.parametrize(("entry", "code"), [("entry_exits", 3), ("step_exits", 4)])
def test_sys_exit_in_a_run_is_a_failed_run_with_its_json(work: Path, entry: str, code: int) -> None:
    status, out = cli_json("run", f"exiting.py:{entry}", "--store", "st", cwd=work)
    assert status == 1
    assert out["status"] == "failed" and f"sys.exit({code})" in out["error"]
    assert run_status(work, out["run_id"]) == "failed"


def test_sys_exit_does_not_end_a_resume_all_interrupted_batch(work: Path) -> None:
    # two runs killed while waiting outside any step: both are resumed by --all-interrupted
    (work / "block_gate").touch()
    ids = []
    for entry, line in (
        ("exiting.py:exits_after_gate", "exit gate"),
        ("prog.py:waiting", "wait gate"),
    ):
        proc = subprocess.Popen(
            [OPENPROGRAM, "run", entry, "--store", "st"],
            cwd=work,
            env=env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        while line not in calls(work):
            assert proc.poll() is None
            time.sleep(0.05)
        proc.kill()
        proc.wait()
        ids.append(
            json.loads(cli("runs", "--json", "--store", "st", cwd=work).stdout)[-1]["run_id"]
        )
    (work / "block_gate").unlink()
    proc = cli("resume", "--all-interrupted", "--json", "--store", "st", cwd=work)
    outcomes = {o["run_id"]: o for o in json.loads(proc.stdout)["runs"]}
    assert outcomes[ids[0]]["status"] == "failed"
    assert "sys.exit(5)" in outcomes[ids[0]]["error"]
    assert outcomes[ids[1]]["status"] == "completed"  # the batch went on after sys.exit
    assert proc.returncode == 1


def test_ctrl_c_under_json_still_prints_the_runs_json(work: Path) -> None:
    returncode, stdout, stderr = ctrl_c_in_step_slow(work, "--json")
    assert returncode == 130, stderr
    out = json.loads(stdout)
    assert out["status"] == "paused" and "interrupted" in out["error"]
    assert run_status(work, out["run_id"]) == "paused"
    assert "Traceback" not in stderr


# -- item 12: one line, not a traceback ---------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["run", "prog.py:plain"],
        ["submit", "prog.py:plain", "--store", "st"],
        ["submit", "prog.py:plain", "--store", "st", "--json"],
    ],
)
def test_a_5000_digit_integer_in_args_is_one_line(work: Path, args: list[str]) -> None:
    """``run`` and ``submit`` read ``--args`` the same way (``submit`` printed a traceback)."""
    proc = cli(*args, "--args", '{"x": ' + "9" * 5000 + "}", cwd=work)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("openprogram: error: --args cannot be read")


def test_a_module_whose_import_raises_is_one_line(work: Path) -> None:
    (work / "broken_mod.py").write_text("x = 1 / 0\ndef main():\n    return 1\n")
    for ref in ("broken_mod:main", "broken_mod.py:main"):
        proc = cli("run", ref, "--store", "st", cwd=work)
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr
        [line] = proc.stderr.strip().splitlines()
        assert "ZeroDivisionError" in line


# -- item 13: the store stops accepting writes mid-run ------------------------------------


@pytest.fixture()
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs (root only: mounting needs it)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "disk"
    mnt.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mnt)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr!r}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=True)


def test_a_full_disk_mid_run_prints_the_run_id_and_exits_1(work: Path, small_disk: Path) -> None:
    (work / "filling.py").write_text(FILLING, encoding="utf-8")
    store = small_disk / "st"
    args = json.dumps({"ballast": str(small_disk / "ballast")})
    proc = cli("run", "filling.py:fill", "--args", args, "--store", str(store), "--json", cwd=work)
    assert proc.returncode == 1, proc.stderr
    out = json.loads(proc.stdout)
    assert out["run_id"] and out["status"] == "failed"
    assert "could not be written" in out["error"] and out["run_id"] in out["error"]
    assert "Traceback" not in proc.stderr
    (small_disk / "ballast").unlink()  # room again: the id names a real run
    runs = json.loads(cli("runs", "--json", "--store", str(store), cwd=work).stdout)
    assert out["run_id"] in [r["run_id"] for r in runs]


# -- item 14: a read-only store can be listed -------------------------------------------


@pytest.fixture()
def read_only_store(work: Path) -> Iterator[tuple[Path, str]]:
    """A store with one completed run whose directory cannot be written."""
    code, out = cli_json("run", "prog.py:plain", "--args", '{"x": 4}', "--store", "st", cwd=work)
    assert code == 0
    store = work / "st"
    if os.geteuid() == 0:  # root ignores permissions: a read-only bind mount instead
        ro = work / "ro"
        ro.mkdir()
        mounted = subprocess.run(["mount", "--bind", str(store), str(ro)], capture_output=True)
        if mounted.returncode != 0:
            pytest.skip(f"cannot bind-mount as root here: {mounted.stderr!r}")
        try:
            subprocess.run(["mount", "-o", "remount,ro,bind", str(ro)], check=True)
            yield ro, out["run_id"]
        finally:
            subprocess.run(["umount", str(ro)], check=True)
        return
    for path in [store, *store.iterdir()]:
        path.chmod(0o555 if path.is_dir() else 0o444)
    try:
        yield store, out["run_id"]
    finally:
        for path in [store, *store.iterdir()]:
            path.chmod(0o755 if path.is_dir() else 0o644)


def test_a_read_only_store_can_be_listed_and_shown(
    work: Path, read_only_store: tuple[Path, str]
) -> None:
    store, run_id = read_only_store
    runs = cli("runs", "--json", "--store", str(store), cwd=work)
    assert runs.returncode == 0, runs.stderr
    assert [r["run_id"] for r in json.loads(runs.stdout)] == [run_id]
    sessions = cli("sessions", "--json", "--store", str(store), cwd=work)
    assert sessions.returncode == 0, sessions.stderr
    assert run_id in [s["id"] for s in json.loads(sessions.stdout)]
    show = cli("show", run_id, "--store", str(store), cwd=work)
    assert show.returncode == 0, show.stderr
    assert "plain" in show.stdout
    # a writing command says why it cannot write
    proc = cli("run", "prog.py:plain", "--args", '{"x": 1}', "--store", str(store), cwd=work)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_a_read_only_store_that_needs_a_migration_says_so_a_writable_one_migrates(
    work: Path, read_only_store: tuple[Path, str]
) -> None:
    store, _ = read_only_store
    db = work / "st" / "openprogram.db"
    if os.geteuid() != 0:
        pytest.skip("the schema is edited through the writable path only as root")
    conn = sqlite3.connect(db)
    with conn:  # make it a store of the OpenProgram before run leases (schema 4)
        conn.execute("DROP VIEW run_steps")  # v6: step records in nodes, undone
        conn.execute("DROP VIEW nodes_all")  # v8: the step log, undone
        conn.execute("DROP TABLE node_log")
        conn.execute("DROP INDEX nodes_run_step")
        for (column,) in conn.execute(
            "SELECT name FROM pragma_table_info('nodes') WHERE name = 'run_id' OR name LIKE 'step%'"
        ).fetchall():
            conn.execute(f"ALTER TABLE nodes DROP COLUMN {column}")
        conn.execute("ALTER TABLE run_steps_nodeless RENAME TO run_steps")
        conn.execute("DROP INDEX runs_queue")
        for column in ("owner_token", "owner_proc", "lease_expires_at", "cancel_requested"):
            conn.execute(f"ALTER TABLE runs DROP COLUMN {column}")
        conn.execute("ALTER TABLE runs DROP COLUMN queue")
        conn.execute("DELETE FROM schema_version WHERE version > 4")
    conn.close()
    for args in (("runs",), ("sessions",), ("show", "x")):
        proc = cli(*args, "--store", str(store), cwd=work)
        assert proc.returncode == 2, (args, proc.stderr)
        [line] = proc.stderr.strip().splitlines()
        assert "needs a migration" in line and "read-only" in line
    # the same store through a writable path is migrated and listed
    proc = cli("runs", "--json", "--store", "st", cwd=work)
    assert proc.returncode == 0 and len(json.loads(proc.stdout)) == 1, proc.stderr


# -- item 16: one exit code and message for the same fault in every command -------------

COMMANDS = [
    ("run", "prog.py:plain", "--args", '{"x": 1}'),
    ("resume", "some-run"),
    ("runs",),
    ("cancel", "some-run"),
    ("pause", "some-run"),
    ("sessions",),
    ("show", "some-run"),
]


def store_fault(work: Path, fault: str) -> Path:
    if fault == "a file":
        (work / "afile").write_text("not a store")
        return work / "afile"
    store = work / fault.replace(" ", "_")
    store.mkdir()
    (store / "openprogram.db").write_bytes(b"garbage" * 1000)
    return store


@pytest.mark.parametrize("fault", ["a file", "corrupted"])
def test_the_same_store_fault_gives_every_command_the_same_exit(work: Path, fault: str) -> None:
    store = store_fault(work, fault)
    results = {}
    for command in COMMANDS:
        proc = cli(*command, "--store", str(store), cwd=work)
        assert "Traceback" not in proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("openprogram: error: "), proc.stderr
        results[command[0]] = (proc.returncode, proc.stdout)
    assert {code for code, _ in results.values()} == {2}, results
    assert all(stdout == "" for _, stdout in results.values()), results


def test_a_locked_store_gives_every_command_the_same_exit_and_hint(work: Path) -> None:
    cli("run", "prog.py:plain", "--args", '{"x": 1}', "--store", "st", cwd=work)
    holder = sqlite3.connect(work / "st" / "openprogram.db", isolation_level=None)
    holder.execute("PRAGMA locking_mode = EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("CREATE TABLE held (x)")  # takes the write lock and keeps it
    try:
        procs = {
            c[0]: subprocess.Popen(
                [OPENPROGRAM, *c, "--store", "st"],
                cwd=work,
                env=env(),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for c in COMMANDS
        }
        done = {name: (p.communicate(timeout=120), p.returncode) for name, p in procs.items()}
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    for name, ((stdout, stderr), code) in done.items():
        assert code == 2, (name, stderr)
        assert "locked" in stderr and "retry when the other process is done" in stderr, name
        assert len(stderr.strip().splitlines()) == 1 and stdout == "", (name, stderr)


def test_an_unknown_id_is_the_same_usage_error_everywhere(work: Path) -> None:
    cli("run", "prog.py:plain", "--args", '{"x": 1}', "--store", "st", cwd=work)
    for command in (("resume", "nope"), ("cancel", "nope"), ("pause", "nope"), ("show", "nope")):
        proc = cli(*command, "--store", "st", cwd=work)
        assert proc.returncode == 2, (command, proc.stderr)
        [line] = proc.stderr.strip().splitlines()
        assert line.startswith("openprogram: error: ") and "'nope'" in line
