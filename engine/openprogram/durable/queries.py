"""Read-only queries of run records for editor tooling (stdlib ``sqlite3`` only).

Importable without the engine runtime (no httpx/pydantic). Tables are documented in
``openprogram.durable.schema``. A missing database or a store without run tables yields
empty results.
"""

from __future__ import annotations

import os
import sqlite3
from contextlib import closing

__all__ = ["paused_runs_by_function", "recorded_step_sequences"]

StepId = tuple[str, int]


def _connect(db_path: str | os.PathLike[str]) -> sqlite3.Connection | None:
    if not os.path.isfile(db_path):
        return None
    try:
        conn = sqlite3.connect(f"file:{os.fspath(db_path)}?mode=ro", uri=True, timeout=5.0)
        has = conn.execute(
            "SELECT COUNT(*) FROM sqlite_master WHERE type='table' AND name IN ('runs','run_steps')"
        ).fetchone()[0]
    except sqlite3.Error:
        return None
    if has != 2:
        conn.close()
        return None
    return conn


def _path_filter(program_path: str | None) -> tuple[str, tuple[str, ...]]:
    if program_path is None:
        return "", ()
    return " AND program_path = ?", (os.path.realpath(program_path),)


def paused_runs_by_function(
    db_path: str | os.PathLike[str], program_path: str | None = None
) -> dict[str, list[tuple[str, str | None, int | None]]]:
    """``{function_qualname: [(run_id, paused_step_name, occurrence), ...]}`` of paused runs,
    oldest first; ``program_path`` limits the result to runs of that Program file."""
    conn = _connect(db_path)
    if conn is None:
        return {}
    extra, params = _path_filter(program_path)
    out: dict[str, list[tuple[str, str | None, int | None]]] = {}
    with closing(conn):
        try:
            rows = conn.execute(
                "SELECT function_qualname, id, paused_step, paused_occurrence FROM runs "
                f"WHERE status = 'paused'{extra} ORDER BY created_at",
                params,
            ).fetchall()
        except sqlite3.Error:
            return {}
    for qualname, run_id, step, occ in rows:
        out.setdefault(qualname, []).append((run_id, step, occ))
    return out


def recorded_step_sequences(
    db_path: str | os.PathLike[str], program_path: str | None = None
) -> dict[str, list[list[StepId]]]:
    """``{function_qualname: [[(name, occurrence), ...] per paused/running run]}``.

    Each sequence is the run's top-level calls (``step``, ``workflow``, ``parallel``) in
    call order: the identities an edit must keep for those runs to resume (OP209).
    """
    conn = _connect(db_path)
    if conn is None:
        return {}
    extra, params = _path_filter(program_path)
    out: dict[str, list[list[StepId]]] = {}
    with closing(conn):
        try:
            runs = conn.execute(
                "SELECT id, function_qualname FROM runs WHERE status IN ('paused', 'running')"
                f"{extra} ORDER BY created_at",
                params,
            ).fetchall()
            for run_id, qualname in runs:
                steps = conn.execute(
                    "SELECT name, occurrence FROM run_steps WHERE run_id = ? AND scope = '' "
                    "ORDER BY position",
                    (run_id,),
                ).fetchall()
                out.setdefault(qualname, []).append([(n, int(o)) for n, o in steps])
        except sqlite3.Error:
            return {}
    return out
