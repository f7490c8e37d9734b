"""Read-only queries of run records for editor tooling (stdlib ``sqlite3`` only).

Importable without the engine runtime (no httpx/pydantic). Tables are documented in
``openprogram.durable.schema``. A missing database or a store without run tables yields
empty results.
"""

from __future__ import annotations

import os
import sqlite3
from contextlib import closing
from typing import NamedTuple

__all__ = [
    "NodeRow",
    "RunRow",
    "StepRow",
    "get_run",
    "list_runs",
    "paused_runs_by_function",
    "recorded_step_sequences",
    "run_steps",
    "session_nodes",
    "store_version",
]

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


class RunRow(NamedTuple):
    """One run as the editor shows it (JSON columns left as text: decode on demand)."""

    id: str
    entry: str
    program_path: str | None
    function_qualname: str
    status: str
    args_json: str
    result_json: str | None
    error: str | None
    paused_step: str | None
    paused_occurrence: int | None
    pause_reason: str | None
    session_id: str | None
    owner_pid: int | None
    owner_host: str | None
    created_at: float
    updated_at: float


class StepRow(NamedTuple):
    """One step identity of a run (``run_steps``), result as JSON text or error text."""

    step_key: str
    scope: str
    position: int
    kind: str
    name: str
    occurrence: int
    status: str
    result: str | None
    started_at: float
    finished_at: float | None


_RUN_COLUMNS = (
    "id, entry, program_path, function_qualname, status, args, result, error, paused_step,"
    " paused_occurrence, pause_reason, session_id, owner_pid, owner_host, created_at, updated_at"
)


def _run_row(r: tuple[object, ...]) -> RunRow:
    return RunRow(
        id=str(r[0]),
        entry=str(r[1]),
        program_path=r[2] if isinstance(r[2], str) else None,
        function_qualname=str(r[3]),
        status=str(r[4]),
        args_json=str(r[5] or "{}"),
        result_json=r[6] if isinstance(r[6], str) else None,
        error=r[7] if isinstance(r[7], str) else None,
        paused_step=r[8] if isinstance(r[8], str) else None,
        paused_occurrence=r[9] if isinstance(r[9], int) else None,
        pause_reason=r[10] if isinstance(r[10], str) else None,
        session_id=r[11] if isinstance(r[11], str) else None,
        owner_pid=r[12] if isinstance(r[12], int) else None,
        owner_host=r[13] if isinstance(r[13], str) else None,
        created_at=float(r[14] or 0.0),  # type: ignore[arg-type]
        updated_at=float(r[15] or 0.0),  # type: ignore[arg-type]
    )


def list_runs(
    db_path: str | os.PathLike[str], program_path: str | None = None, limit: int = 200
) -> list[RunRow]:
    """Runs newest first (at most ``limit``); ``program_path`` keeps one Program's runs."""
    conn = _connect(db_path)
    if conn is None:
        return []
    extra, params = _path_filter(program_path)
    where = f"WHERE 1=1{extra}" if extra else ""
    with closing(conn):
        try:
            rows = conn.execute(
                f"SELECT {_RUN_COLUMNS} FROM runs {where} ORDER BY created_at DESC LIMIT ?",
                (*params, int(limit)),
            ).fetchall()
        except sqlite3.Error:
            return []
    return [_run_row(r) for r in rows]


def get_run(db_path: str | os.PathLike[str], run_id: str) -> RunRow | None:
    """One run, or None (no store, no such run)."""
    conn = _connect(db_path)
    if conn is None:
        return None
    with closing(conn):
        try:
            row = conn.execute(
                f"SELECT {_RUN_COLUMNS} FROM runs WHERE id = ?", (run_id,)
            ).fetchone()
        except sqlite3.Error:
            return None
    return _run_row(row) if row is not None else None


def run_steps(db_path: str | os.PathLike[str], run_id: str) -> list[StepRow]:
    """The run's step identities in call order (by start time; scopes interleaved)."""
    conn = _connect(db_path)
    if conn is None:
        return []
    with closing(conn):
        try:
            rows = conn.execute(
                "SELECT step_key, scope, position, kind, name, occurrence, status, result,"
                " started_at, finished_at FROM run_steps WHERE run_id = ?"
                " ORDER BY started_at, scope, position",
                (run_id,),
            ).fetchall()
        except sqlite3.Error:
            return []
    return [StepRow._make(r) for r in rows]  # columns are NOT NULL / typed by the schema


def store_version(db_path: str | os.PathLike[str]) -> tuple[int, int, int, int]:
    """A cheap fingerprint that changes when anything is committed (file and WAL stats)."""
    out: list[int] = []
    for suffix in ("", "-wal"):
        try:
            st = os.stat(f"{os.fspath(db_path)}{suffix}")
            out += [st.st_mtime_ns, st.st_size]
        except OSError:
            out += [0, 0]
    return (out[0], out[1], out[2], out[3])


class NodeRow(NamedTuple):
    """One session-DAG node as stored: ``input``/``output`` kept as JSON text (a graph of
    10,000 nodes shows previews of them; decoding every one would be the slowest part)."""

    id: str
    seq: int
    kind: str
    name: str
    caller_id: str | None
    predecessor_id: str | None
    input_json: str | None
    output_json: str | None
    status: str
    metadata_json: str | None
    created_at: float


def session_nodes(db_path: str | os.PathLike[str], session_id: str) -> list[NodeRow]:
    """The session's nodes in ``seq`` order, read-only ([] without a store or session)."""
    if not os.path.isfile(db_path):
        return []
    try:
        conn = sqlite3.connect(f"file:{os.fspath(db_path)}?mode=ro", uri=True, timeout=5.0)
    except sqlite3.Error:
        return []
    with closing(conn):
        try:
            rows = conn.execute(
                "SELECT id, seq, kind, name, caller_id, predecessor_id, input, output, status,"
                " metadata, created_at FROM nodes WHERE session_id = ? ORDER BY seq",
                (session_id,),
            ).fetchall()
        except sqlite3.Error:
            return []
    return [NodeRow(*r) for r in rows]


def llm_usage(db_path: str | os.PathLike[str], session_id: str) -> tuple[int, tuple[int, int]]:
    """``(model calls, (input tokens, output tokens))`` recorded so far in a session."""
    if not os.path.isfile(db_path):
        return 0, (0, 0)
    try:
        conn = sqlite3.connect(f"file:{os.fspath(db_path)}?mode=ro", uri=True, timeout=0.2)
    except sqlite3.Error:
        return 0, (0, 0)
    with closing(conn):
        try:
            row = conn.execute(
                "SELECT COUNT(*),"
                " COALESCE(SUM(json_extract(metadata, '$.usage.input_tokens')), 0),"
                " COALESCE(SUM(json_extract(metadata, '$.usage.output_tokens')), 0)"
                " FROM nodes WHERE session_id = ? AND kind = 'llm'",
                (session_id,),
            ).fetchone()
        except sqlite3.Error:  # busy with a writer, or an older store: show what we had
            return 0, (0, 0)
    return int(row[0]), (int(row[1]), int(row[2]))
