"""A PostgreSQL store lost mid-run, from the CLI user's side: a real ``openprogram run``
subprocess against a throwaway cluster of its own, stopped while the run executes. The
store reconnects, and the pool's warnings of its failed attempts never reach stderr (the
README: an error is one line ``openprogram: error: ...``), nor does the URL's password."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from resume_programs import OPENPROGRAM, env

from pgcluster import PORT, Cluster, find_bindir

SECRET = "lost-db-s3cret"

PROGRAM = '''
import os
import signal
import time

from openprogram import step

HERE = os.path.dirname(os.path.abspath(__file__))


def wait(name: str) -> str:
    """Mark the step as executing, then block until the gate file exists."""
    open(os.path.join(HERE, name + ".started"), "w").close()
    while not os.path.exists(os.path.join(HERE, "gate")):
        time.sleep(0.02)
    return name


def chain() -> str:
    return step("a", wait, "a") + step("b", wait, "b")


chain.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["chain"]
'''


@pytest.fixture()
def cluster() -> Iterator[Cluster]:
    """A cluster of this test's own (it is stopped mid-test), with a password role."""
    bindir = find_bindir()
    if bindir is None:
        pytest.skip("PostgreSQL server binaries not installed (see tests/conftest.py)")
    c = Cluster(bindir).start()
    try:
        hba = c.data / "pg_hba.conf"
        hba.write_text("local all pwrole scram-sha-256\n" + hba.read_text())
        with psycopg.connect(c.dsn(), autocommit=True) as conn:
            conn.execute(f"CREATE ROLE pwrole LOGIN PASSWORD '{SECRET}'")
            conn.execute("CREATE DATABASE lost OWNER pwrole")
            conn.execute("SELECT pg_reload_conf()")
        yield c
    finally:
        c.stop()


def _until(path: Path, proc: subprocess.Popen[str]) -> None:
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)


def test_a_lost_database_prints_no_pool_warnings(tmp_path: Path, cluster: Cluster) -> None:
    (tmp_path / "prog.py").write_text(PROGRAM, encoding="utf-8")
    url = f"postgresql://pwrole:{SECRET}@/lost?host={cluster.base}&port={PORT}"
    proc = subprocess.Popen(
        [OPENPROGRAM, "run", "prog.py:chain", "--json"],
        cwd=tmp_path, env={**env(), "OPENPROGRAM_STORE": url},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        _until(tmp_path / "a.started", proc)
        cluster.down()
        # Stand in for the lost server on its socket: every connection the store's pool
        # attempts is accepted and dropped at once (each a failed reconnect, which the pool
        # logs). Two attempts seen: the pool has retried; then the real server comes back.
        fake = socket.socket(socket.AF_UNIX)
        sock_path = cluster.base / f".s.PGSQL.{PORT}"
        fake.bind(str(sock_path))
        fake.listen(8)
        (tmp_path / "gate").touch()  # step a returns while the database is away
        for _ in range(2):
            conn, _ = fake.accept()
            conn.close()
        fake.close()
        os.unlink(sock_path)
        cluster.up()
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    result = json.loads(out)
    assert result["status"] == "completed" and result["result"] == "ab", (result, err)
    assert "pool" not in err and "error connecting" not in err, err
    assert SECRET not in err and SECRET not in out


def _start(tmp_path: Path, url: str, *args: str, wait: str | None) -> subprocess.Popen[str]:
    """``openprogram ARGS`` on ``url`` in ``tmp_path`` (``OPENPROGRAM_PG_WAIT_S=wait``)."""
    extra = {} if wait is None else {"OPENPROGRAM_PG_WAIT_S": wait}
    return subprocess.Popen(
        [OPENPROGRAM, *args],
        cwd=tmp_path, env={**env(), "OPENPROGRAM_STORE": url, **extra},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _finish(proc: subprocess.Popen[str], timeout: float) -> tuple[str, str]:
    try:
        return proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


WAIT_S = 2  # a short OPENPROGRAM_PG_WAIT_S
# The only time bound of the give-up tests: generous (start-up, a loaded machine), and
# still far below the four 30 s pool waits a lost database used to cost a run.
GIVE_UP_BOUND_S = 10 * WAIT_S + 30


def test_a_database_that_stays_away_ends_the_run_after_the_wait(
    tmp_path: Path, cluster: Cluster
) -> None:
    """``OPENPROGRAM_PG_WAIT_S=2``, the database stopped while a step executes and never
    back: the run gives up once (not once per statement of its last writes) and says so
    in its one error line, naming the setting."""
    (tmp_path / "prog.py").write_text(PROGRAM, encoding="utf-8")
    url = f"postgresql://pwrole:{SECRET}@/lost?host={cluster.base}&port={PORT}"
    proc = _start(tmp_path, url, "run", "prog.py:chain", wait=str(WAIT_S))
    _until(tmp_path / "a.started", proc)
    cluster.down()
    (tmp_path / "gate").touch()  # step a returns; the run's next write finds no database
    out, err = _finish(proc, GIVE_UP_BOUND_S)
    assert proc.returncode == 1, (out, err)
    (line,) = err.strip().splitlines()
    assert line.startswith("run ") and "stopped because the store could not be written" in line
    assert f"no connection to the database within {WAIT_S} s (OPENPROGRAM_PG_WAIT_S)" in line
    assert SECRET not in err and SECRET not in out


def test_a_worker_lets_go_of_a_run_whose_database_stays_away(
    tmp_path: Path, cluster: Cluster
) -> None:
    """The same for a worker: its run is interrupted after the wait (another worker takes
    it over once the lease expires), a stop request ends the worker at once although its
    claims keep failing, and each store error is logged once, not once per poll."""
    (tmp_path / "prog.py").write_text(PROGRAM, encoding="utf-8")
    url = f"postgresql://pwrole:{SECRET}@/lost?host={cluster.base}&port={PORT}"
    submit = _start(tmp_path, url, "submit", "prog.py:chain", "--queue", "q", wait=None)
    run_id = _finish(submit, 120)[0].strip()
    assert submit.returncode == 0 and run_id
    proc = _start(tmp_path, url, "worker", "--queue", "q", "--poll", "0.05", wait=str(WAIT_S))
    _until(tmp_path / "a.started", proc)
    cluster.down()
    (tmp_path / "gate").touch()
    time.sleep(3 * WAIT_S)  # claims meanwhile: dozens of polls, all failing
    proc.send_signal(signal.SIGTERM)
    out, err = _finish(proc, GIVE_UP_BOUND_S)
    assert proc.returncode == 0, (out, err)
    [line] = out.splitlines()  # the run's one line says why
    assert line.startswith(f"run {run_id} interrupted: store postgresql://"), (out, err)
    assert f"within {WAIT_S} s (OPENPROGRAM_PG_WAIT_S)" in line
    assert err.count("cannot claim a run") <= 1, err
    assert SECRET not in err and SECRET not in out


def test_a_restart_within_the_default_wait_completes_the_run(
    tmp_path: Path, cluster: Cluster
) -> None:
    """PostgreSQL restarted while a step executes, ``OPENPROGRAM_PG_WAIT_S`` unset: the
    run reconnects and completes, every step once."""
    (tmp_path / "prog.py").write_text(PROGRAM, encoding="utf-8")
    url = f"postgresql://pwrole:{SECRET}@/lost?host={cluster.base}&port={PORT}"
    proc = _start(tmp_path, url, "run", "prog.py:chain", "--json", wait=None)
    _until(tmp_path / "a.started", proc)
    cluster.restart()
    (tmp_path / "gate").touch()
    out, err = _finish(proc, 120)
    result = json.loads(out)
    assert result["status"] == "completed" and result["result"] == "ab", (result, err)
    assert err == ""


def test_a_bad_wait_setting_is_a_usage_error(tmp_path: Path, cluster: Cluster) -> None:
    (tmp_path / "prog.py").write_text(PROGRAM, encoding="utf-8")
    url = f"postgresql://pwrole:{SECRET}@/lost?host={cluster.base}&port={PORT}"
    for value in ("abc", "0", "-1", "nan", "inf"):
        for args in (["run", "prog.py:chain"], ["worker", "--exit-when-idle"]):
            proc = _start(tmp_path, url, *args, wait=value)
            out, err = _finish(proc, 120)
            assert proc.returncode == 2, (args, out, err)
            (line,) = err.strip().splitlines()
            assert line.startswith(f"openprogram: error: OPENPROGRAM_PG_WAIT_S={value!r} is not ")
            assert "seconds > 0" in line
    assert not (tmp_path / "a.started").exists()  # nothing ran
