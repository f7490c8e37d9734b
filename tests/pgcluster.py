"""A temporary PostgreSQL cluster from the installed server binaries (tests, benchmarks).

``initdb`` and ``postgres`` refuse to run as root, and CI runs as root: then they run as
the ``postgres`` system user (``runuser -u postgres --``) in a private directory owned by
it. The server listens only on a Unix socket in that directory (no TCP port to collide
with). ``.ci/run`` installs the Debian package ``postgresql`` where the binaries are
missing.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import uuid
from pathlib import Path
from typing import Any

PORT = 5432
#: ``params`` of a fixture that runs a test on both store backends (see ``store_for``).
BACKENDS = ["sqlite", "postgresql"]


def find_bindir() -> Path | None:
    """Directory of ``initdb``/``pg_ctl`` (newest installed version), or ``None``."""
    env = os.environ.get("OPENPROGRAM_PG_BINDIR")
    candidates = [env] if env else sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    for c in candidates:
        if c and (Path(c) / "initdb").is_file() and (Path(c) / "pg_ctl").is_file():
            return Path(c)
    found = shutil.which("initdb")
    return Path(found).parent if found else None


class Cluster:
    """``Cluster(...).start()`` ... ``stop()``: one throwaway server."""

    def __init__(
        self, bindir: Path, *, fsync: bool = False, server_env: dict[str, str] | None = None
    ) -> None:
        """``server_env``: variables the server runs with (a benchmark's ``LD_PRELOAD``)."""
        self.bindir = bindir
        self.fsync = fsync
        self.server_env = dict(server_env or {})
        self.base = Path(tempfile.mkdtemp(prefix="openprogram-pg-"))
        self.data = self.base / "data"
        self.as_root = os.geteuid() == 0
        if self.as_root:
            pw = pwd.getpwnam("postgres")
            os.chown(self.base, pw.pw_uid, pw.pw_gid)
        os.chmod(self.base, 0o755)

    def _run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        cmd = [str(self.bindir / argv[0]), *argv[1:]]
        if self.server_env:  # through env(1): runuser may not pass the caller's variables
            cmd = ["env", *(f"{k}={v}" for k, v in self.server_env.items()), *cmd]
        if self.as_root:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False)

    def _check(self, proc: subprocess.CompletedProcess[str], what: str) -> None:
        if proc.returncode != 0:
            log = self.base / "log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(f"{what} failed: {proc.stderr or proc.stdout}\n{tail}")

    def start(self) -> Cluster:
        proc = self._run(
            "initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "-E", "UTF8",
            "--no-sync", "--no-instructions",
        )  # fmt: skip
        self._check(proc, "initdb")
        self._pg_ctl("start")
        return self

    def _pg_ctl(self, action: str) -> None:
        opts = (
            f"-k {self.base} -p {PORT} -c listen_addresses='' -c max_connections=200 "
            f"-c fsync={'on' if self.fsync else 'off'} -c shared_buffers=64MB"
        )
        args = ["pg_ctl", "-D", str(self.data), "-l", str(self.base / "log"), "-w", "-t", "120"]
        if action == "stop":
            args += ["-m", "fast", "stop"]
        elif action == "restart":
            args += ["-m", "fast", "-o", opts, "restart"]
        else:
            args += ["-o", opts, "start"]
        self._check(self._run(*args), f"pg_ctl {action}")

    def restart(self) -> None:
        """Restart the server (connections are dropped; data is kept)."""
        self._pg_ctl("restart")

    def down(self) -> None:
        """Stop the server (data kept; :meth:`up` starts it again)."""
        self._pg_ctl("stop")

    def up(self) -> None:
        self._pg_ctl("start")

    def processes(self) -> list[int]:
        """The server's processes: the postmaster (``postmaster.pid``) and its children."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        found = [postmaster]
        for proc in Path("/proc").iterdir():
            try:
                stat = (proc / "stat").read_text()
            except OSError:  # not a process, or gone
                continue
            if int(stat.rpartition(")")[2].split()[1]) == postmaster:  # field 4: ppid
                found.append(int(proc.name))
        return found

    def freeze(self) -> None:
        """Stop every process of the server (SIGSTOP), connections left open: a server
        that no longer answers, as in a network partition. :meth:`thaw` continues it."""
        for pid in self.processes():
            os.kill(pid, signal.SIGSTOP)

    def thaw(self) -> None:
        for pid in reversed(self.processes()):
            os.kill(pid, signal.SIGCONT)

    def dsn(self, dbname: str = "postgres") -> str:
        return f"postgresql://postgres@/{dbname}?host={self.base}&port={PORT}"

    def create_database(self, *, icu_locale: str | None = None) -> str:
        """A fresh empty database; returns its DSN. With ``icu_locale`` (``en-US``) its
        text is ordered as that locale orders it (a linguistic collation: case and
        punctuation weigh less than letters) rather than as the cluster's locale."""
        import psycopg

        name = "t_" + uuid.uuid4().hex[:12]
        options = (
            f" LOCALE_PROVIDER icu ICU_LOCALE '{icu_locale}' TEMPLATE template0"
            if icu_locale
            else ""
        )
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"{options}')
        return self.dsn(name)

    def stop(self) -> None:
        try:
            if (self.data / "postmaster.pid").exists():
                self._pg_ctl("stop")
        finally:
            shutil.rmtree(self.base, ignore_errors=True)


def store_for(request: Any, tmp_path: Path, *, icu_locale: str | None = None) -> str:
    """A store location for ``request.param``: an SQLite directory or, for
    ``"postgresql"``, the URL of a fresh database (the ``pg_dsn`` fixture; with
    ``icu_locale``, one ordering text as that locale does)."""
    if request.param == "postgresql":
        if icu_locale:
            cluster = request.getfixturevalue("pg_cluster")
            return str(cluster.create_database(icu_locale=icu_locale))
        return str(request.getfixturevalue("pg_dsn"))
    return str(tmp_path / "store")
