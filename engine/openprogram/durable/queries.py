"""Run records for editor tooling (runs view, run graph, inlay hints, ``show``), read
through the store's one read API (:func:`openprogram.store.runs.read_run_store`).

Every function takes the store's database file (``<root>/openprogram.db``) or a
``postgresql://`` URL. A missing store, one without run tables, or one that cannot be
read yields empty results (tooling never fails on a store).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import NamedTuple, TypeVar

from openprogram.errors import OpenProgramError
from openprogram.store.lease import owner_alive
from openprogram.store.runs import GraphNodeRow, RunRecord, RunStore, read_run_store

__all__ = [
    "GraphNodeRow",
    "RunRow",
    "StepRow",
    "get_run",
    "graph_node_objects",
    "list_runs",
    "llm_usage",
    "paused_runs_by_function",
    "recorded_step_sequences",
    "run_steps",
    "step_starts",
    "step_view_objects",
    "store_version",
]

StepId = tuple[str, int]
T = TypeVar("T")


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
    owner_alive: bool = False  # a running run whose lease is held (``store.lease``)


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


def _store_of(db_path: str | os.PathLike[str]) -> str:
    location = os.fspath(db_path)
    if location.startswith(("postgresql://", "postgres://")):
        return location
    return os.path.dirname(location) or "."


@contextmanager
def _reader(db_path: str | os.PathLike[str]) -> Iterator[RunStore | None]:
    location = _store_of(db_path)
    if not location.startswith("postgres") and not os.path.isfile(db_path):
        yield None
        return
    try:
        runs = read_run_store(location)
    except OpenProgramError:
        yield None
        return
    try:
        yield runs
    finally:
        if runs is not None:
            runs.close()


def _read(db_path: str | os.PathLike[str], fn: Callable[[RunStore], T], empty: T) -> T:
    with _reader(db_path) as runs:
        if runs is None:
            return empty
        try:
            return fn(runs)
        except OpenProgramError:
            return empty


def _run_row(r: RunRecord) -> RunRow:
    import json

    return RunRow(
        id=r.id,
        entry=r.entry,
        program_path=r.program_path,
        function_qualname=r.function_qualname,
        status=str(r.status),
        args_json=json.dumps(r.args),
        result_json=None if r.status != "completed" else json.dumps(r.result),
        error=r.error,
        paused_step=r.paused_step,
        paused_occurrence=r.paused_occurrence,
        pause_reason=r.pause_reason,
        session_id=r.session_id,
        owner_pid=r.owner_pid,
        owner_host=r.owner_host,
        created_at=float(r.created_at or 0.0),
        updated_at=float(r.updated_at or 0.0),
        owner_alive=owner_alive(r),
    )


def paused_runs_by_function(
    db_path: str | os.PathLike[str], program_path: str | None = None
) -> dict[str, list[tuple[str, str | None, int | None]]]:
    """``{function_qualname: [(run_id, paused_step_name, occurrence), ...]}`` of paused runs,
    oldest first; ``program_path`` limits the result to runs of that Program file."""

    def read(runs: RunStore) -> dict[str, list[tuple[str, str | None, int | None]]]:
        out: dict[str, list[tuple[str, str | None, int | None]]] = {}
        for r in runs.runs_of_program(program_path):
            if r.status == "paused":
                out.setdefault(r.function_qualname, []).append(
                    (r.id, r.paused_step, r.paused_occurrence)
                )
        return out

    return _read(db_path, read, {})


def recorded_step_sequences(
    db_path: str | os.PathLike[str], program_path: str | None = None
) -> dict[str, list[list[StepId]]]:
    """``{function_qualname: [[(name, occurrence), ...] per paused/running run]}`` (OP209)."""
    return _read(db_path, lambda runs: runs.recorded_step_sequences(program_path), {})


def list_runs(
    db_path: str | os.PathLike[str], program_path: str | None = None, limit: int = 200
) -> list[RunRow]:
    """Runs newest first (at most ``limit``); ``program_path`` keeps one Program's runs."""

    def read(runs: RunStore) -> list[RunRow]:
        found = runs.runs_of_program(program_path)
        found.sort(key=lambda r: r.created_at, reverse=True)
        return [_run_row(r) for r in found[: int(limit)]]

    return _read(db_path, read, [])


def get_run(db_path: str | os.PathLike[str], run_id: str) -> RunRow | None:
    """One run, or None (no store, no such run)."""

    def read(runs: RunStore) -> RunRow | None:
        r = runs.get_run(run_id)
        return _run_row(r) if r is not None else None

    return _read(db_path, read, None)


def run_steps(db_path: str | os.PathLike[str], run_id: str) -> list[StepRow]:
    """The run's step identities in call order (by start time; scopes interleaved)."""

    def read(runs: RunStore) -> list[StepRow]:
        steps = runs.steps_in_call_order(run_id)
        return [
            StepRow(
                step_key=s.step_key,
                scope=s.scope,
                position=int(s.position),
                kind=s.kind,
                name=s.name,
                occurrence=int(s.occurrence),
                status=s.status,
                result=s.result,
                started_at=float(s.started_at or 0.0),
                finished_at=float(s.finished_at) if s.finished_at is not None else None,
            )
            for s in steps
        ]

    return _read(db_path, read, [])


def store_version(db_path: str | os.PathLike[str]) -> tuple[int, int, int, int]:
    """A cheap fingerprint that changes when anything is committed (SQLite: file and WAL
    stats; PostgreSQL: :meth:`RunStore.change_marker`, which a step's commit changes too)."""
    location = os.fspath(db_path)
    if location.startswith(("postgresql://", "postgres://")):
        return _read(db_path, lambda runs: runs.change_marker(), (0, 0, 0, 0))
    out: list[int] = []
    for suffix in ("", "-wal"):
        try:
            st = os.stat(f"{location}{suffix}")
            out += [st.st_mtime_ns, st.st_size]
        except OSError:
            out += [0, 0]
    return (out[0], out[1], out[2], out[3])


def llm_usage(db_path: str | os.PathLike[str], session_id: str) -> tuple[int, tuple[int, int]]:
    """``(model calls, (input tokens, output tokens))`` recorded so far in a session."""
    return _read(db_path, lambda runs: runs.llm_usage(session_id), (0, (0, 0)))


def step_starts(db_path: str | os.PathLike[str], run_id: str) -> list[tuple[str, int, float]]:
    """``(name, occurrence, started_at)`` of the run's steps by start time (the run graph's
    step labels: no results read)."""
    return _read(db_path, lambda runs: runs.step_starts(run_id), [])


def step_view_objects(
    db_path: str | os.PathLike[str],
    run_id: str,
    *,
    live: bool,
    paused_at: tuple[str, int] | None,
    now: float,
    shorten: Callable[[str | None], str],
) -> list[str]:
    """The run's steps in call order, each a JSON object text for the Runs view
    (:meth:`RunStore.step_view_objects`)."""
    return _read(
        db_path,
        lambda runs: runs.step_view_objects(
            run_id, live=live, paused_at=paused_at, now=now, shorten=shorten
        ),
        [],
    )


def graph_node_objects(
    db_path: str | os.PathLike[str],
    session_id: str,
    *,
    limit: int,
    node_id: str | None = None,
) -> list[GraphNodeRow]:
    """The session's nodes (or the one ``node_id``) in ``seq`` order for the run graph
    (:meth:`RunStore.graph_node_objects`)."""
    return _read(
        db_path,
        lambda runs: runs.graph_node_objects(session_id, limit=limit, node_id=node_id),
        [],
    )
