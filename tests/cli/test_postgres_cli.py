"""Every run/session command and ``openprogram-lint --store`` against a PostgreSQL store
(a temporary server the tests start), through the real CLI in subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent

PROGRAM = '''
import os

from openprogram import step
from openprogram.durable import current_run_id, pause_run

HERE = os.path.dirname(os.path.abspath(__file__))


def act(name: str) -> str:
    with open(os.path.join(HERE, "calls.log"), "a", encoding="utf-8") as f:
        f.write(name + "\\n")
    return name


def stop(store: str) -> str:
    """Ask for a pause of this very run: it pauses before its next step."""
    pause_run(current_run_id(), store=store)
    return "stop"


def main(store: str) -> list:
    return [step("a", act, "a"), step("stop", stop, store), step("c", act, "c")]


main.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["main"]
'''


def run(*args: str, cwd: Path, tool: str = "openprogram") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / tool), *args], cwd=cwd, capture_output=True, text=True, timeout=180
    )


@pytest.fixture()
def work(tmp_path: Path) -> Path:
    (tmp_path / "prog.py").write_text(PROGRAM, encoding="utf-8")
    return tmp_path


def test_run_pause_lint_resume_show_cancel_on_postgresql(work: Path, pg_dsn: str) -> None:
    from openprogram.durable import start_run

    args = json.dumps({"store": pg_dsn})
    # use_latest: the run resumes the current source, so an edit can break it (OP209)
    out = start_run(
        f"{work / 'prog.py'}:main", {"store": pg_dsn}, store=pg_dsn, policy="use_latest"
    )
    assert out.status == "paused", out
    rid = out.run_id
    listed = json.loads(run("runs", "--json", "--store", pg_dsn, cwd=work).stdout)
    assert [(r["run_id"], r["status"]) for r in listed] == [(rid, "paused")]
    # the table and `show` say why it paused, as on SQLite
    [row] = run("runs", "--store", pg_dsn, cwd=work).stdout.splitlines()[1:]
    assert row.split()[:5] == [rid, "paused", "(requested)", "main", "c"], row
    shown = run("show", rid, "--store", pg_dsn, cwd=work).stdout.splitlines()[0]
    assert shown.endswith("; run paused (requested) at step 'c'"), shown
    # the linter reads the recorded steps of the paused run from PostgreSQL (OP209)
    edited = PROGRAM.replace('step("a", act, "a")', 'step("a2", act, "a")')
    (work / "prog.py").write_text(edited, encoding="utf-8")
    lint = run("--store", pg_dsn, "--format", "json", "prog.py", cwd=work, tool="openprogram-lint")
    assert "OP209" in [d["code"] for d in json.loads(lint.stdout)], lint.stderr
    (work / "prog.py").write_text(PROGRAM, encoding="utf-8")
    proc = run("resume", rid, "--store", pg_dsn, "--json", cwd=work)
    assert proc.returncode == 0 and json.loads(proc.stdout)["result"] == ["a", "stop", "c"]
    assert (work / "calls.log").read_text().split() == ["a", "c"]
    sessions = run("sessions", "--store", pg_dsn, cwd=work)
    assert rid in sessions.stdout, sessions.stderr
    show = run("show", rid, "--store", pg_dsn, cwd=work)
    assert show.returncode == 0 and "code main [completed]" in show.stdout, show.stderr
    proc = run("run", "prog.py:main", "--args", args, "--store", pg_dsn, "--json", cwd=work)
    second = json.loads(proc.stdout)["run_id"]
    cancel = run("cancel", second, "--store", pg_dsn, "--json", cwd=work)
    assert cancel.returncode == 0, cancel.stderr
    assert json.loads(cancel.stdout) == {
        "run_id": second,
        "status": "cancelled",
        "cancel": "cancelled",
    }
    listed = json.loads(
        run("runs", "--status", "cancelled", "--json", "--store", pg_dsn, cwd=work).stdout
    )
    assert [r["run_id"] for r in listed] == [second]


def test_unreachable_postgresql_is_one_line_error(work: Path) -> None:
    """The server's own reason, at once: not the pool's retry warnings followed, half a
    minute later, by "pool initialization incomplete"."""
    url = f"postgresql://nobody@/nodb?host={work}&port=1"
    proc = run("runs", "--store", url, cwd=work)
    assert proc.returncode == 2, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith(f"openprogram: error: store {url}: "), line
    assert f"{work}/.s.PGSQL.1" in line and "No such file or directory" in line, line


ASKING = """
from openprogram import llm, step


def ask(topic: str) -> str:
    return llm(f"one word about {topic}")


def main(topic: str) -> list:
    return [step("first", ask, topic), step("second", ask, topic + "!")]


main.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["main"]
"""


def test_replay_and_cassette_export_of_a_run_stored_in_postgresql(
    tmp_path: Path, pg_dsn: str
) -> None:
    """``openprogram replay`` reads the run and its model calls from PostgreSQL and re-runs
    it there (it used to turn the URL into a directory name)."""
    import os

    (tmp_path / "ask.py").write_text(ASKING, encoding="utf-8")
    env = {**os.environ, "OPENPROGRAM_MODEL": "scripted:echo"}
    first = subprocess.run(
        [str(BIN / "openprogram"), "run", "ask.py:main", "--args", '{"topic": "tea"}',
         "--store", pg_dsn, "--json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=180, env=env,
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    rid = json.loads(first.stdout)["run_id"]
    replayed = run("replay", rid, "--store", pg_dsn, "--json", cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stderr
    out = json.loads(replayed.stdout)
    assert out["replayed"] == rid and out["matches"] is True
    assert out["result"] == json.loads(first.stdout)["result"]
    assert not any(p.name.startswith("postgres") for p in tmp_path.rglob("*"))
    cassette = tmp_path / "calls.jsonl"
    exported = run("replay", rid, "--cassette", str(cassette), "--store", pg_dsn, cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    assert len(cassette.read_text().splitlines()) == 2


def _tables(dsn: str) -> list[str]:
    import psycopg

    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        return sorted(r[0] for r in rows)


def test_sessions_and_show_read_a_read_only_database(work: Path, pg_dsn: str) -> None:
    """README: ``runs``, ``sessions`` and ``show`` open the store read-only; point read-only
    tooling at a read replica. A database that refuses writes (a replica, here
    ``default_transaction_read_only``) is read by every one of them; ``sessions`` and
    ``show`` used to fail: "cannot execute CREATE TABLE in a read-only transaction"."""
    import psycopg

    args = json.dumps({"store": pg_dsn})
    first = run("run", "prog.py:main", "--args", args, "--store", pg_dsn, "--json", cwd=work)
    rid = json.loads(first.stdout)["run_id"]
    database = pg_dsn.split("?")[0].rsplit("/", 1)[1]
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{database}" SET default_transaction_read_only = on')
    sessions = run("sessions", "--store", pg_dsn, cwd=work)
    assert sessions.returncode == 0 and rid in sessions.stdout, sessions.stderr
    for fmt in ("tree", "json", "mermaid", "html"):
        show = run("show", rid, "--format", fmt, "--store", pg_dsn, cwd=work)
        assert show.returncode == 0 and show.stdout, (fmt, show.stderr)
    listed = run("runs", "--json", "--store", pg_dsn, cwd=work)
    assert [r["run_id"] for r in json.loads(listed.stdout)] == [rid], listed.stderr
    refused = run("run", "prog.py:main", "--args", args, "--store", pg_dsn, cwd=work)
    assert refused.returncode == 2 and "read-only transaction" in refused.stderr


def test_reading_an_empty_database_creates_nothing(work: Path, pg_dsn: str) -> None:
    """An empty database holds no store yet: the reading commands say so and leave it
    empty (they used to create the schema)."""
    sessions = run("sessions", "--store", pg_dsn, cwd=work)
    assert sessions.returncode == 0 and sessions.stdout.strip() == "No sessions."
    show = run("show", "0123456789abcdef", "--store", pg_dsn, cwd=work)
    assert show.returncode == 2, show.stderr
    [line] = show.stderr.strip().splitlines()
    assert line.startswith("openprogram: error: no session '0123456789abcdef': there is no")
    assert run("runs", "--store", pg_dsn, cwd=work).stdout.strip() == "no runs"
    assert _tables(pg_dsn) == []
