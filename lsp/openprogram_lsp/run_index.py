"""Read-only view of durable runs in the store, for code lenses and OP209.

Reads through the store's read API (:func:`openprogram.store.runs.read_run_store`,
read-only): a missing store, a missing table or a locked database yields no runs, never
an exception or a hang.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from openprogram.errors import OpenProgramError
from openprogram.store.lease import owner_alive
from openprogram.store.postgres import redact_text
from openprogram.store.runs import RunRecord, RunStore, read_run_store

log = logging.getLogger(__name__)
DB_NAME = "openprogram.db"  # the SQLite store's database file in a store directory


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
    pause_reason: str | None = None  # a PauseReason
    owner_alive: bool = False  # a running run whose lease is held (``store.lease``)

    @property
    def orphaned(self) -> bool:
        """A ``running`` run whose owner stopped renewing its lease (killed, crashed)."""
        return self.status == "running" and not self.owner_alive

    @property
    def resumable(self) -> bool:
        return self.status == "paused" or self.orphaned

    @property
    def resume_step(self) -> str | None:
        return self.paused_step if self.status == "paused" else self.current_step


@contextmanager
def _reader(store_dir: Path) -> Iterator[RunStore | None]:
    """The store's read API (``None`` when there is no store or it cannot be read)."""
    try:
        runs = read_run_store(store_dir)
    except OpenProgramError as exc:  # locked, corrupt, newer schema
        log.info("no runs from %s: %s", redact_text(str(store_dir)), exc)
        runs = None
    try:
        yield runs
    finally:
        if runs is not None:
            runs.close()


def _info(runs: RunStore, r: RunRecord) -> RunInfo:
    current = None
    if r.status == "running":
        steps = runs.top_level_steps(r.id)
        current = f"{steps[-1].name}#{steps[-1].occurrence}" if steps else None
    return RunInfo(
        id=r.id,
        function_qualname=r.function_qualname,
        entry=r.entry,
        status=r.status,
        paused_step=r.paused_step,
        paused_occurrence=r.paused_occurrence,
        error=r.error,
        updated_at=float(r.updated_at or 0.0),
        owner_pid=r.owner_pid,
        owner_host=r.owner_host,
        current_step=current,
        pause_reason=r.pause_reason,
        owner_alive=owner_alive(r),
    )


def runs_for_file(store_dir: Path, program_path: str) -> list[RunInfo]:
    """Runs whose Program is ``program_path``, newest first ([] if unavailable)."""
    with _reader(store_dir) as runs:
        if runs is None:
            return []
        try:
            found = [_info(runs, r) for r in runs.runs_of_program(program_path)]
        except OpenProgramError as exc:
            log.info("no runs from %s: %s", redact_text(str(store_dir)), exc)
            return []
    return sorted(found, key=lambda r: r.updated_at, reverse=True)


def store_program_paths(store_dir: Path) -> list[str]:
    """Distinct Program files with runs in the store ([] if unavailable)."""
    with _reader(store_dir) as runs:
        if runs is None:
            return []
        try:
            records = runs.list_runs()
        except OpenProgramError as exc:
            log.info("no runs from %s: %s", redact_text(str(store_dir)), exc)
            return []
    paths = {r.program_path or r.entry.rpartition(":")[0] for r in records}
    return sorted(p for p in paths if p)


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
