"""Read-only view of durable runs in the store, for code lenses and OP209.

Reads through the store's read API (:func:`openprogram.store.runs.read_run_store`,
read-only): a missing store, a missing table or a locked database yields no runs, never
an exception or a hang. A PostgreSQL store is read only while :data:`GATE` finds it
readable (probed off the event loop).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from openprogram.errors import OpenProgramError
from openprogram.store.lease import owner_alive
from openprogram.store.postgres import is_url, redact, redact_text
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


class StoreGate:
    """Whether the server may read a PostgreSQL store now. Each URL is probed (opened and
    closed) in a background thread, so an unreachable, refusing or hung server never
    blocks the event loop: until a probe succeeds, and while the last one failed, the
    store yields no runs. Probes repeat every ``RECHECK_S``. ``on_change(url, error)``
    runs on the event loop when a store's state changes (``error`` None: readable; the
    message never holds the URL's password). SQLite stores are always read."""

    RECHECK_S = 30.0

    def __init__(self) -> None:
        self.on_change: Callable[[str, str | None], None] | None = None
        self._state: dict[str, tuple[float, str | None]] = {}  # url -> (checked, error)
        self._probing: set[str] = set()
        self._lock = threading.Lock()

    def readable(self, store: Path | str) -> bool:
        if not isinstance(store, str) or not is_url(store):
            return True
        with self._lock:
            state = self._state.get(store)
            due = state is None or time.monotonic() - state[0] > self.RECHECK_S
            if due and store not in self._probing:
                self._probing.add(store)
                threading.Thread(
                    target=self._probe, args=(store, _loop()), name="openprogram-store-probe",
                    daemon=True,
                ).start()  # fmt: skip
        return state is not None and state[1] is None

    def error(self, store: Path | str) -> str | None:
        state = self._state.get(store) if isinstance(store, str) else None
        return None if state is None else state[1]

    def failed(self, store: Path | str, exc: BaseException) -> None:
        """A read of ``store`` failed: no more reads until a probe succeeds."""
        if isinstance(store, str) and is_url(store):
            self._set(store, message(store, exc), _loop())

    def _probe(self, url: str, loop: asyncio.AbstractEventLoop | None) -> None:
        error: str | None = None
        try:
            runs = read_run_store(url)
            if runs is not None:
                runs.close()
        except Exception as exc:
            error = message(url, exc)
        finally:
            with self._lock:
                self._probing.discard(url)
        self._set(url, error, loop)

    def _set(self, url: str, error: str | None, loop: asyncio.AbstractEventLoop | None) -> None:
        with self._lock:
            old = self._state.get(url)
            self._state[url] = (time.monotonic(), error)
        callback = self.on_change
        if callback is None or (old is not None and old[1] == error):
            return
        if loop is None:
            callback(url, error)
        elif not loop.is_closed():
            loop.call_soon_threadsafe(callback, url, error)


def _loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def message(store: Path | str, exc: BaseException) -> str:
    """One line saying why ``store`` cannot be read (the engine's ``StoreError`` texts
    hide the password; any other error is named by its type only)."""
    if isinstance(exc, OpenProgramError):
        return " ".join(str(exc).split())
    return f"store {redact(str(store))}: {type(exc).__name__}"


#: The server's one gate (a server is one process).
GATE = StoreGate()


@contextmanager
def _reader(store_dir: Path | str) -> Iterator[RunStore | None]:
    """The store's read API (``None`` when there is no store or it cannot be read)."""
    runs: RunStore | None = None
    if GATE.readable(store_dir):
        try:
            runs = read_run_store(store_dir)
        except Exception as exc:  # locked, corrupt, newer schema, server gone
            log.info("no runs from %s: %s", redact_text(str(store_dir)), message(store_dir, exc))
            GATE.failed(store_dir, exc)
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


def runs_for_file(store_dir: Path | str, program_path: str) -> list[RunInfo]:
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


def store_program_paths(store_dir: Path | str) -> list[str]:
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
    store_dir: Path | str, program_path: str | None
) -> dict[str, list[list[tuple[str, int]]]] | None:
    """``recorded_steps`` argument of ``analyze_source`` (OP209): qualname -> runs -> steps.

    Each step is ``(name, occurrence)``; None when no run of the file can be broken by an
    edit. The analyzer's reader (each run's recorded policy applied) is the one query.
    """
    if not program_path or not GATE.readable(store_dir):
        return None
    from openprogram_analyzers.store_adapter import recorded_steps

    try:
        return recorded_steps(str(store_dir), program_path) or None
    except Exception as exc:  # StoreUnreadable: diagnostics go on without OP209
        GATE.failed(store_dir, exc)
        return None
