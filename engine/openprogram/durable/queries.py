"""Read-only queries of run records for editor tooling (stdlib ``sqlite3`` only).

Importable without the engine runtime (no httpx/pydantic). Tables are documented in
``openprogram.durable.schema``. A missing database or a store without run tables yields
empty results.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from contextlib import closing
from typing import NamedTuple

__all__ = [
    "GraphNodeRow",
    "RunRow",
    "StepRow",
    "get_run",
    "graph_node_objects",
    "list_runs",
    "paused_runs_by_function",
    "recorded_step_sequences",
    "run_steps",
    "step_starts",
    "step_view_objects",
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


def step_starts(db_path: str | os.PathLike[str], run_id: str) -> list[tuple[str, int, float]]:
    """``(name, occurrence, started_at)`` of the run's steps by start time (the run graph's
    step labels: no results read)."""
    conn = _connect(db_path)
    if conn is None:
        return []
    with closing(conn):
        try:
            return conn.execute(
                "SELECT name, occurrence, started_at FROM run_steps WHERE run_id = ?"
                " ORDER BY started_at, scope, position",
                (run_id,),
            ).fetchall()
        except sqlite3.Error:
            return []


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


# -- JSON built by SQLite -------------------------------------------------------------------
# The views of a 10,000-step run: SQLite writes each row's JSON object (C, no Python object
# per field), the caller joins the texts into one answer. ``json_valid`` guards every
# ``json_extract`` so one malformed column yields nulls, not a failed query.

_STEP_VIEW_SQL = """
SELECT json_object(
    'key', step_key, 'scope', scope, 'kind', kind, 'name', name, 'occurrence', occurrence,
    'label', name || ' #' || occurrence, 'state', state,
    'durationMs', CASE
        WHEN finished_at IS NOT NULL THEN max(0.0, finished_at - started_at) * 1000.0
        WHEN state = 'running' THEN max(0.0, :now - started_at) * 1000.0 END,
    'result', CASE WHEN state = 'completed' THEN op_short(result) ELSE '' END,
    'error', CASE WHEN state = 'failed' THEN op_short(result) ELSE '' END)
FROM (
    SELECT *, CASE
        WHEN status IN ('completed', 'failed') THEN status
        WHEN :live THEN 'running'
        WHEN name = :paused_name AND occurrence = :paused_occurrence THEN 'paused'
        ELSE 'uncertain' END AS state
    FROM run_steps WHERE run_id = :run_id ORDER BY started_at, scope, position)
"""


def step_view_objects(
    db_path: str | os.PathLike[str],
    run_id: str,
    *,
    live: bool,
    paused_at: tuple[str, int] | None,
    now: float,
    shorten: Callable[[str | None], str],
) -> list[str]:
    """The run's steps in call order, each a JSON object text for the Runs view.

    Keys: ``key scope kind name occurrence label state durationMs result error``. ``state``
    is the stored status when final, else ``running`` when the run is ``live``, ``paused``
    for the step the run is paused at (``paused_at``), else ``uncertain``; a running step's
    duration counts to ``now``; ``result``/``error`` go through ``shorten`` (one line).
    """
    conn = _connect(db_path)
    if conn is None:
        return []
    name, occurrence = paused_at if paused_at is not None else (None, None)
    with closing(conn):
        conn.create_function("op_short", 1, shorten, deterministic=True)
        try:
            rows = conn.execute(
                _STEP_VIEW_SQL,
                {
                    "run_id": run_id,
                    "live": int(live),
                    "paused_name": name,
                    "paused_occurrence": occurrence,
                    "now": now,
                },
            ).fetchall()
        except sqlite3.Error:
            return []
    return [r[0] for r in rows]


def _json_at(column: str, key: str, *, guarded: bool) -> str:
    """``column``'s value at ``$.key``, NULL without it. The key's text is looked for first, so
    most rows are parsed once or not at all; ``guarded`` checks ``json_valid`` too (a
    malformed column then reads as NULL instead of failing the query)."""
    test = f"instr({column}, '\"{key.rpartition('.')[2]}\"') > 0"
    if guarded:
        test += f" AND json_valid({column})"
    return f"CASE WHEN {test} THEN json_extract({column}, '$.{key}') END"


def _preview(column: str) -> str:
    """The stored JSON text cut to ``:limit`` characters ('' for none or ``null``)."""
    return (
        f"CASE WHEN {column} IS NULL OR {column} = 'null' THEN ''"
        f" WHEN length({column}) <= :limit THEN {column}"
        f" ELSE substr({column}, 1, :limit - 1) || '…' END"
    )


def _graph_node_sql(guarded: bool) -> str:
    """The nodes query; the inner select extracts each value once (``OFFSET 0`` keeps SQLite
    from copying its expressions into the outer one), the outer checks the JSON types."""
    return f"""
SELECT id, kind, name, created_at,
    CASE WHEN typeof(tokens_in) = 'integer' THEN tokens_in END AS tokens_in,
    CASE WHEN typeof(tokens_out) = 'integer' THEN tokens_out END AS tokens_out,
    json_object(
    'id', id, 'seq', seq, 'kind', kind, 'name', name, 'status', status,
    'caller', caller_id, 'pred', predecessor_id,
    'durationMs', CASE WHEN typeof(duration) IN ('integer', 'real') THEN duration * 1000.0 END,
    'model', CASE WHEN typeof(model) = 'text' AND model <> '' THEN
        CASE WHEN typeof(provider) = 'text' AND provider <> ''
        THEN provider || ':' || model ELSE model END END,
    'usage', CASE
        WHEN typeof(tokens_in) = 'integer' AND typeof(tokens_out) = 'integer'
            THEN json_object('input_tokens', tokens_in, 'output_tokens', tokens_out)
        WHEN typeof(tokens_in) = 'integer' THEN json_object('input_tokens', tokens_in)
        WHEN typeof(tokens_out) = 'integer' THEN json_object('output_tokens', tokens_out) END,
    'error', CASE WHEN typeof(error) = 'text' THEN error END,
    'input', {_preview("input")}, 'output', {_preview("output")})
FROM (
    SELECT id, seq, kind, name, status, caller_id, predecessor_id, input, output, created_at,
        {_json_at("metadata", "duration_s", guarded=guarded)} AS duration,
        {_json_at("metadata", "error_type", guarded=guarded)} AS error,
        {_json_at("metadata", "usage.input_tokens", guarded=guarded)} AS tokens_in,
        {_json_at("metadata", "usage.output_tokens", guarded=guarded)} AS tokens_out,
        CASE WHEN kind = 'llm' THEN {_json_at("input", "model", guarded=guarded)} END AS model,
        CASE WHEN kind = 'llm' THEN {_json_at("input", "provider", guarded=guarded)} END
            AS provider
    FROM nodes WHERE session_id = :session_id AND (:node_id IS NULL OR id = :node_id)
    ORDER BY seq LIMIT -1 OFFSET 0)
"""


_GRAPH_NODE_SQL = _graph_node_sql(guarded=False)
_GRAPH_NODE_SQL_GUARDED = _graph_node_sql(guarded=True)


class GraphNodeRow(NamedTuple):
    """One session node for the run graph: what a caller needs to label and total it, and the
    node's JSON object text (without its ``step`` label)."""

    id: str
    kind: str
    name: str
    created_at: float
    tokens_in: int | None
    tokens_out: int | None
    json: str


def graph_node_objects(
    db_path: str | os.PathLike[str],
    session_id: str,
    *,
    limit: int,
    node_id: str | None = None,
) -> list[GraphNodeRow]:
    """The session's nodes (or the one ``node_id``) in ``seq`` order for the run graph.

    Each JSON object has ``id seq kind name status caller pred durationMs model usage error
    input output``: ``model`` is ``provider:model`` of an ``llm`` node's request, ``usage``
    its integer token counts, ``input``/``output`` the stored JSON text cut to ``limit``
    characters (never decoded).
    """
    if not os.path.isfile(db_path):
        return []
    try:
        conn = sqlite3.connect(f"file:{os.fspath(db_path)}?mode=ro", uri=True, timeout=5.0)
    except sqlite3.Error:
        return []
    params = {"session_id": session_id, "node_id": node_id, "limit": max(1, int(limit))}
    with closing(conn):
        try:
            rows = conn.execute(_GRAPH_NODE_SQL, params).fetchall()
        except sqlite3.Error:  # a malformed JSON column (or no nodes table): check each value
            try:
                rows = conn.execute(_GRAPH_NODE_SQL_GUARDED, params).fetchall()
            except sqlite3.Error:
                return []
    return [GraphNodeRow._make(r) for r in rows]
