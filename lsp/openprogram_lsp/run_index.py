"""Read-only view of durable runs in the store, for code lenses and OP209.

Reads the ``runs`` / ``run_steps`` tables (``openprogram.durable.schema``) of
``<store>/openprogram.db`` directly with a read-only SQLite connection and a short busy
timeout: a missing store, a missing table or a locked database yields no runs, never an
exception or a hang.
"""

from __future__ import annotations

import logging
import os
import socket
import sqlite3
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

DB_NAME = "openprogram.db"
BUSY_TIMEOUT_S = 0.2


@dataclass(frozen=True)
class RunInfo:
    id: str
    function_qualname: str
    entry: str
    status: str
    paused_step: str | None
    paused_occurrence: int | None
    error: str | None
    updated_at: float
    owner_pid: int | None = None
    owner_host: str | None = None
    current_step: str | None = None  # last dispatched top-level step of a running run
    pause_reason: str | None = None  # uncertain | incompatible | requested | approval

    @property
    def orphaned(self) -> bool:
        """A ``running`` run whose owner process on this host is gone (killed, crashed)."""
        if self.status != "running" or not self.owner_pid:
            return False
        if self.owner_host and self.owner_host != socket.gethostname():
            return False
        return not _pid_alive(self.owner_pid)

    @property
    def resumable(self) -> bool:
        return self.status == "paused" or self.orphaned

    @property
    def resume_step(self) -> str | None:
        return self.paused_step if self.status == "paused" else self.current_step


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    try:  # a zombie (exited, not yet reaped) is not alive
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _connect(store_dir: Path) -> sqlite3.Connection | None:
    db = Path(store_dir) / DB_NAME
    if not db.is_file():
        return None
    try:
        conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S)
    except sqlite3.Error as exc:
        log.warning("cannot open store %s: %s", db, exc)
        return None
    return conn


def _same_file(a: str | None, b: str) -> bool:
    if not a:
        return False
    try:
        return os.path.realpath(a) == os.path.realpath(b)
    except OSError:
        return False


def runs_for_file(store_dir: Path, program_path: str) -> list[RunInfo]:
    """Runs whose Program is ``program_path``, newest first ([] if unavailable)."""
    conn = _connect(store_dir)
    if conn is None:
        return []
    try:
        rows = conn.execute(
            "SELECT id, function_qualname, entry, status, paused_step, paused_occurrence,"
            " error, updated_at, program_path, owner_pid, owner_host,"
            " (SELECT name || '#' || occurrence FROM run_steps s WHERE s.run_id = runs.id"
            "  AND s.scope = '' ORDER BY s.position DESC LIMIT 1), pause_reason"
            " FROM runs ORDER BY updated_at DESC"
        ).fetchall()
    except sqlite3.Error as exc:  # missing table (older store), locked, corrupt
        log.info("no runs from %s: %s", store_dir, exc)
        return []
    finally:
        conn.close()
    out = []
    for r in rows:
        entry_path = str(r[2]).rpartition(":")[0]
        if _same_file(r[8], program_path) or (not r[8] and _same_file(entry_path, program_path)):
            out.append(
                RunInfo(
                    id=str(r[0]),
                    function_qualname=str(r[1]),
                    entry=str(r[2]),
                    status=str(r[3]),
                    paused_step=r[4],
                    paused_occurrence=r[5],
                    error=r[6],
                    updated_at=float(r[7] or 0.0),
                    owner_pid=r[9],
                    owner_host=r[10],
                    current_step=r[11],
                    pause_reason=r[12],
                )
            )
    return out


def recorded_steps_for(
    store_dir: Path, program_path: str | None
) -> dict[str, list[list[tuple[str, int]]]] | None:
    """``recorded_steps`` argument of ``analyze_source`` (OP209): qualname -> runs -> steps.

    Each step is ``(name, occurrence)``; None when no run of the file can be broken by an
    edit. The analyzer's reader (each run's recorded policy applied) is the one query.
    """
    if not program_path:
        return None
    from openprogram_analyzers.store_adapter import recorded_steps

    return recorded_steps(str(store_dir), program_path) or None
