"""A PostgreSQL store lost mid-run, from the CLI user's side: a real ``openprogram run``
subprocess against a throwaway cluster of its own, stopped while the run executes. The
store reconnects, and the pool's warnings of its failed attempts never reach stderr (the
README: an error is one line ``openprogram: error: ...``), nor does the URL's password."""

from __future__ import annotations

import json
import os
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
