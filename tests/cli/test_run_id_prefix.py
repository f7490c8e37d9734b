"""A run id on the command line may be a unique prefix of it, as git takes a commit id:
``show``, ``resume``, ``cancel``, ``replay``, ``approve`` and ``deny``, in real subprocesses
on a real SQLite store. An exact id wins, several matches are an error naming them (exit
2), a prefix shorter than 4 characters is refused, and no match is ``no run``. A prefix
is matched as written on both store backends (``_`` and ``%`` are no wildcards).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from cli_programs import cli, cli_json, env, write_program

from pgcluster import BACKENDS, store_for


@pytest.fixture()
def work(tmp_path: Path) -> Path:
    write_program(tmp_path)
    return tmp_path


def ids_listed(work: Path) -> list[str]:
    """The RUN_ID column of ``openprogram runs``, as a user copies it from the table."""
    proc = cli("runs", "--store", "st", cwd=work)
    assert proc.returncode == 0, proc.stderr
    header, *rows = proc.stdout.splitlines()
    assert header.split()[0] == "RUN_ID"
    return [row.split()[0] for row in rows]


def run_with_ids(work: Path, *run_ids: str, store: str = "st") -> None:
    """Runs of ``prog.py:main`` with these ids, one after another (``start_run(run_id=)``,
    the API's way to name a run)."""
    script = (
        "import sys\n"
        "from openprogram.durable import start_run\n"
        "for rid in sys.argv[2:]:\n"
        "    run = start_run('prog.py:main', {}, store=sys.argv[1], run_id=rid)\n"
        "    assert run.status == 'completed'\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, store, *run_ids],
        cwd=work, env=env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr


def error_line(proc: subprocess.CompletedProcess[str]) -> str:
    [line] = proc.stderr.splitlines()
    return line


def test_the_first_characters_of_an_id_from_runs_name_the_run(work: Path) -> None:
    (work / "fail_c").touch()
    assert cli("run", "prog.py:main", "--store", "st", cwd=work).returncode == 1
    assert cli("run", "prog.py:main", "--store", "st", cwd=work).returncode == 1
    first, second = ids_listed(work)
    assert first[:8] != second[:8]

    # the whole id, copied from the table, and its first 8 characters
    shown = cli("show", first, "--store", "st", cwd=work)
    assert shown.returncode == 0 and shown.stdout.startswith(f"session {first}:"), shown.stderr
    shown = cli("show", first[:8], "--store", "st", cwd=work)
    assert shown.returncode == 0 and shown.stdout.startswith(f"session {first}:"), shown.stderr

    (work / "fail_c").unlink()
    resumed = cli("resume", first[:8], "--store", "st", cwd=work)
    assert resumed.returncode == 0, resumed.stderr
    assert f"run {first} completed" in resumed.stdout

    code, out = cli_json("cancel", second[:6], "--store", "st", cwd=work)
    assert (code, out) == (0, {"run_id": second, "status": "cancelled", "cancel": "cancelled"})

    code, out = cli_json("replay", first[:5], "--store", "st", cwd=work)
    assert code == 0 and out["replayed"] == first and out["matches"] is True

    for command in ("approve", "deny"):
        decided = cli(command, second[:8], "--store", "st", cwd=work)
        assert decided.returncode == 2
        assert error_line(decided) == (
            f"openprogram: error: run {second} is cancelled and not awaiting approval"
        )


def test_a_prefix_of_several_runs_names_them_and_changes_nothing(work: Path) -> None:
    run_with_ids(work, "deadbeef01", "c0ffee", *(f"c0ffee{i:02d}" for i in range(1, 8)))
    (work / "calls.log").unlink()

    expected = (
        "openprogram: error: run id prefix 'c0ffee0' is ambiguous: 7 runs match, newest "
        "first: c0ffee07 (main, completed), c0ffee06 (main, completed), c0ffee05 (main, "
        "completed), c0ffee04 (main, completed), c0ffee03 (main, completed) and 2 more; "
        "give more characters of the id"
    )
    for command in ("show", "resume", "cancel", "replay"):
        proc = cli(command, "c0ffee0", "--store", "st", cwd=work)
        assert proc.returncode == 2, (command, proc.stdout)
        assert error_line(proc) == expected and proc.stdout == "", command
    code, out = cli_json("cancel", "c0ffee0", "--store", "st", cwd=work)
    assert (code, out["run_id"], out["status"]) == (2, "c0ffee0", "error")
    assert out["error"] == expected.removeprefix("openprogram: error: ")
    assert not (work / "calls.log").exists()  # nothing ran
    listed = json.loads(cli("runs", "--json", "--store", "st", cwd=work).stdout)
    assert [r["status"] for r in listed] == ["completed"] * 9

    # 4 characters are enough when they name one run; a run whose id is the prefix itself
    # is that run; one more character names one run
    shown = cli("show", "dead", "--store", "st", cwd=work)
    assert shown.returncode == 0 and shown.stdout.startswith("session deadbeef01:"), shown.stderr
    shown = cli("show", "c0ffee", "--store", "st", cwd=work)
    assert shown.returncode == 0 and shown.stdout.startswith("session c0ffee:"), shown.stderr
    code, out = cli_json("cancel", "c0ffee03", "--store", "st", cwd=work)
    assert code == 2 and out["error"].startswith("run c0ffee03 is already completed")


def test_a_short_or_unknown_prefix_is_refused(work: Path) -> None:
    assert cli("run", "prog.py:main", "--store", "st", cwd=work).returncode == 0
    [rid] = ids_listed(work)

    for command in ("show", "resume", "cancel"):
        proc = cli(command, rid[:3], "--store", "st", cwd=work)
        assert proc.returncode == 2
        assert error_line(proc) == (
            f"openprogram: error: run id prefix {rid[:3]!r} is too short: give at least 4 "
            "characters of the id (`openprogram runs` lists them)"
        )
    code, out = cli_json("resume", rid[:3], "--store", "st", cwd=work)
    assert code == 2 and out["run_id"] == rid[:3] and "too short" in out["error"]

    unknown = "zzzz" + rid[4:]
    proc = cli("cancel", unknown, "--store", "st", cwd=work)
    assert proc.returncode == 2
    assert re.fullmatch(rf"openprogram: error: no run '{unknown}' in .*", error_line(proc))
    proc = cli("show", "zzzz", "--store", "st", cwd=work)
    assert proc.returncode == 2 and "no session 'zzzz' in " in error_line(proc)


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An SQLite store, or a PostgreSQL database ordering text as ICU's ``en-US`` does
    (case and punctuation weigh less than letters: ``job_01 < JOB_01 < job%01``)."""
    return store_for(request, tmp_path, icu_locale="en-US")


def test_a_prefix_is_matched_as_written_on_both_backends(work: Path, store: str) -> None:
    run_with_ids(
        work, "job_01", "jobx01", "job%01", "JOB_01", *(f"job_{i:02d}" for i in range(2, 8)),
        store=store,
    )  # fmt: skip

    # ``_`` is the character itself, not "any character"; case counts
    expected = (
        "openprogram: error: run id prefix 'job_' is ambiguous: 7 runs match, newest first: "
        "job_07 (main, completed), job_06 (main, completed), job_05 (main, completed), "
        "job_04 (main, completed), job_03 (main, completed) and 2 more; give more "
        "characters of the id"
    )
    proc = cli("show", "job_", "--store", store, cwd=work)
    assert proc.returncode == 2 and error_line(proc) == expected
    # ``%`` is the character itself, not "any characters"; an upper-case prefix names the
    # upper-case id only
    for prefix, run_id in (("job%", "job%01"), ("JOB_", "JOB_01"), ("jobx", "jobx01")):
        shown = cli("show", prefix, "--store", store, cwd=work)
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout.startswith(f"session {run_id}:"), shown.stdout
    code, out = cli_json("cancel", "job_01", "--store", store, cwd=work)
    assert code == 2 and out["error"].startswith("run job_01 is already completed")
