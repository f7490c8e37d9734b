"""Read-only view of durable runs in the store, for code lenses and OP209.

Reads through the store's read API (:func:`openprogram.store.runs.read_run_store`,
read-only): a missing store, a missing table or a locked database yields no runs, never
an exception or a hang. A PostgreSQL store is read only while :data:`GATE` finds it
readable (probed off the event loop), through the server's one reader of its URL
(``queries.READERS``: opened by the first probe or read, kept for the server's life),
and only off the event loop: every feature that reads the store awaits
:func:`read_stores`, which gives up on a read that does not return within
``READ_BOUND_S`` (a frozen server, a partition).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

from openprogram.contract.runs import PauseReason, program_file
from openprogram.durable.queries import READ_WAIT_S, READERS, stopped_in, store_version
from openprogram.errors import OpenProgramError
from openprogram.store.postgres import is_url, redacted_location
from openprogram.store.runs import RunRecord, RunStore
from openprogram.store.session_store import store_url

from .config import DEFAULT_RECHECK_S

log = logging.getLogger(__name__)
T = TypeVar("T")
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
    current_step: str | None = None  # ``name#occurrence`` an interrupted run stopped in
    pause_reason: str | None = None  # a PauseReason
    interrupted: bool = False  # running, no live owner (``store.lease.is_interrupted``)

    @property
    def resumable(self) -> bool:
        return self.status == "paused" or self.interrupted

    @property
    def awaiting_approval(self) -> bool:
        """Paused until a person approves or denies a tool call (``openprogram approve`` /
        ``deny``; a plain resume refuses it)."""
        return self.status == "paused" and self.pause_reason == PauseReason.AWAITING_APPROVAL

    @property
    def resume_step(self) -> str | None:
        return self.paused_step if self.status == "paused" else self.current_step


class _OfFunction(Protocol):
    @property
    def function_qualname(self) -> str: ...


def is_run_of(run: _OfFunction, qualname: str) -> bool:
    """Whether ``run`` (a ``RunInfo`` or a ``queries.RunRow``) is a run of the function
    whose qualified name is ``qualname`` (``Bot.main``, ``main``): runs record their
    entry's full qualified name, so a function and a same-named method are told apart
    (the one place lenses, hints and ``showRuns`` match runs to functions)."""
    return run.function_qualname == qualname


class StoreGate:
    """Whether the server may read a PostgreSQL store now. Each URL is probed (opened and
    closed) in a background thread, so an unreachable, refusing or hung server never
    blocks the event loop: until a probe succeeds, and while the last one failed, the
    store yields no runs. Probes repeat every ``recheck_s`` (``config.recheck_seconds()``,
    set when the server starts); a probe reads through the
    server's reader of the URL (a round trip), and opens a new one when that fails, so
    the reason it reports is the database's own. A read that failed stops reads until
    a probe, started at once, succeeds: the probe says why (one message per outage).
    ``on_change(url, error)`` runs on the event loop when a store's state changes
    (``error`` None: readable; the message never holds the URL's password). A SQLite
    store whose read failed (corrupt, locked) is told the same way, once, and not read
    again until its files change (:func:`store_fingerprint`)."""

    def __init__(self) -> None:
        self.recheck_s = DEFAULT_RECHECK_S
        self.on_change: Callable[[str, str | None], None] | None = None
        self._state: dict[str, tuple[float, str | None]] = {}  # url -> (checked, error)
        self._probing: set[str] = set()
        self._suspect: set[str] = set()  # a read failed: not read until a probe succeeds
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        # SQLite stores (by directory) that failed: (their files' fingerprint, why)
        self._broken: dict[str, tuple[tuple[int, int, int, int], str]] = {}
        self._retrying: dict[str, str] = {}  # changed since they failed: read again once
        self._probed: dict[str, threading.Event] = {}  # set once a URL's first probe ended

    def use_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        """The event loop ``on_change`` runs on (reads fail in threads)."""
        self._loop = loop

    def _file_readable(self, store: Path | str) -> bool:
        """A SQLite store is read unless its last read failed (corrupt, locked, newer
        schema) and its files have not changed since: no read is tried again (each a wait
        of up to the busy timeout on a locked one) until they do."""
        key = os.fspath(store)
        with self._lock:
            broken = self._broken.get(key)
            if broken is None:
                return True
            if store_fingerprint(store) == broken[0]:
                return False
            del self._broken[key]
            self._retrying[key] = broken[1]
            return True

    def read_ok(self, store: Path | str) -> None:
        """A read of the SQLite ``store`` succeeded: if it had failed, it is readable again
        (said once: a later failure is said again)."""
        if isinstance(store, str) and is_url(store):
            return
        key = os.fspath(store)
        with self._lock:
            if self._retrying.pop(key, None) is None:
                return
        self._tell(key, None, _loop() or self._loop)

    def readable(self, store: Path | str) -> bool:
        if not isinstance(store, str) or not is_url(store):
            return self._file_readable(store)
        with self._lock:
            state = self._state.get(store)
            due = state is None or time.monotonic() - state[0] > self.recheck_s
            if (due or store in self._suspect) and store not in self._probing:
                self._start_probe(store)
            return state is not None and state[1] is None and store not in self._suspect

    async def first_probes(self, stores: Iterable[Path | str]) -> None:
        """Wait until each PostgreSQL store of ``stores`` has been probed once (its first
        probe is started now), at most ``READ_BOUND_S``: so the server's first request
        reads the store instead of answering as if it held no runs. A store whose first
        probe is still out after that is not readable and its :meth:`error` says so."""
        waits = []
        for store in stores:
            if isinstance(store, str) and is_url(store):
                self.readable(store)  # starts the probe when none is due or running
                with self._lock:
                    if store not in self._state:
                        waits.append(self._probed.setdefault(store, threading.Event()))
        if waits:
            deadline = time.monotonic() + READ_BOUND_S

            def wait() -> None:
                for event in waits:
                    event.wait(max(0.0, deadline - time.monotonic()))

            await asyncio.to_thread(wait)

    def _start_probe(self, url: str) -> None:
        self._loop = _loop() or self._loop  # where on_change runs (failed() may be off it)
        self._probing.add(url)
        threading.Thread(
            target=self._probe, args=(url, self._loop), name="openprogram-store-probe",
            daemon=True,
        ).start()  # fmt: skip

    def error(self, store: Path | str) -> str | None:
        if not isinstance(store, str) or not is_url(store):
            broken = self._broken.get(os.fspath(store))
            return None if broken is None else broken[1]
        state = self._state.get(store)
        if state is None:  # its first probe has not answered yet (:meth:`first_probes`)
            shown = redacted_location(store)
            return f"store {shown}: not read yet (no answer within {READ_BOUND_S:g} s)"
        return state[1]

    def failed(self, store: Path | str, exc: BaseException) -> None:
        """A read of ``store`` failed: no more reads until a probe (started now)
        succeeds; the probe's outcome is what is said."""
        if isinstance(store, str) and is_url(store):
            with self._lock:
                self._suspect.add(store)
                if store not in self._probing:
                    self._start_probe(store)
            return
        # a SQLite store: not read again until its files change; each failed read is
        # told (logged; shown once while it lasts: ``on_change``)
        key, why = os.fspath(store), message(store, exc)
        with self._lock:
            self._retrying.pop(key, None)
            self._broken[key] = (store_fingerprint(store), why)
        self._tell(key, why, _loop() or self._loop)

    def stalled(self, store: Path | str, error: str) -> None:
        """A read of ``store`` did not return (:func:`read_stores`): it is unreadable
        now, for ``error``, until its next probe (``recheck_s`` on) succeeds."""
        if isinstance(store, str) and is_url(store):
            self._loop = _loop() or self._loop
            self._set(store, error, self._loop)

    def _probe(self, url: str, loop: asyncio.AbstractEventLoop | None) -> None:
        try:
            error = _probe_error(url)
        finally:
            with self._lock:
                self._probing.discard(url)
        self._set(url, error, loop)

    def _set(self, url: str, error: str | None, loop: asyncio.AbstractEventLoop | None) -> None:
        with self._lock:
            old = self._state.get(url)
            self._state[url] = (time.monotonic(), error)
            was_suspect = url in self._suspect
            self._suspect.discard(url)
            probed = self._probed.pop(url, None)
        if probed is not None:
            probed.set()
        if old is not None and old[1] == error and not was_suspect:
            return
        self._tell(url, error, loop)

    def _tell(self, url: str, error: str | None, loop: asyncio.AbstractEventLoop | None) -> None:
        callback = self.on_change
        if callback is None:
            return
        if loop is None:
            callback(url, error)
        elif not loop.is_closed():
            loop.call_soon_threadsafe(callback, url, error)


def store_fingerprint(store: Path | str) -> tuple[int, int, int, int]:
    """What changes when anything is written to the SQLite store directory ``store``
    (its database file's and WAL's stats: ``queries.store_version``)."""
    return store_version(Path(store) / DB_NAME)


def _loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _probe_error(url: str) -> str | None:
    """Why ``url`` cannot be read now (None: it can): a round trip through the server's
    reader of it; when that fails on a reader kept from before (it is closed then), once
    more through a new one, whose error is the database's own (refused, no such role),
    not the wait for a pooled connection."""
    retry = READERS.is_open(url)
    while True:
        try:
            with READERS.reading(url) as runs:
                if runs is not None:
                    runs.change_marker()
            return None
        except Exception as exc:
            if not retry:
                return message(url, exc)
            retry = False


def message(store: Path | str, exc: BaseException) -> str:
    """One line saying why ``store`` cannot be read (the engine's ``StoreError`` texts
    hide the password; any other error is named by its type only)."""
    if isinstance(exc, OpenProgramError):
        return " ".join(str(exc).split())
    return f"store {redacted_location(store)}: {type(exc).__name__}"


#: The server's one gate (a server is one process).
GATE = StoreGate()

READ_BOUND_S = READ_WAIT_S + 3.0
"""How long a feature waits for its reads of a PostgreSQL store (a kept reader's read
waits ``READ_WAIT_S`` for a connection, then one round trip): a read that takes longer
is left to its thread and the feature answers without the store's data."""


async def read_stores(stores: Iterable[Path | str], fn: Callable[[], T], empty: T) -> T:
    """``fn()``, which reads ``stores`` (run stores, or the SQLite database files in
    them), without blocking the event loop on a PostgreSQL one: then ``fn`` runs in a
    thread of its own, awaited at most ``READ_BOUND_S``. When that passes, the answer is
    ``empty``; each such store read meanwhile is unreadable (:meth:`StoreGate.stalled`,
    one message) and its reader dropped (``READERS.abandon``): the stuck read keeps its
    thread until the server or the network gives up on it. SQLite stores (files, whose
    reads wait at most their busy timeout: a locked one) are read in a thread too, so
    nothing else waits for them; a failed one is not read again until it changes
    (:class:`StoreGate`). ``fn`` may write too (a cancel)."""
    GATE.use_loop(asyncio.get_running_loop())  # where a failure found in a thread is told
    urls = {store_url(s): s for s in stores if isinstance(s, str) and is_url(s)}
    if not urls:
        # a thread: a locked SQLite store waits its busy timeout there, never on the loop
        return await asyncio.to_thread(fn)
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()
    started = time.monotonic()

    def settle(value: T | None, exc: BaseException | None) -> None:
        if done.done():  # given up on
            return
        if exc is not None:
            done.set_exception(exc)
        else:
            done.set_result(value)  # type: ignore[arg-type]

    def work() -> None:
        try:
            value, exc = fn(), None
        except BaseException as error:  # handed to the awaiting feature
            value, exc = None, error
        if not loop.is_closed():
            try:
                loop.call_soon_threadsafe(settle, value, exc)
            except RuntimeError:  # the loop closed meanwhile
                pass

    threading.Thread(target=work, name="openprogram-store-read", daemon=True).start()
    try:
        return await asyncio.wait_for(done, READ_BOUND_S)
    except asyncio.TimeoutError:
        for url in READERS.reading_since(started) & urls.keys():
            store = urls[url]
            log.info("gave up on a read of %s", redacted_location(store))
            GATE.stalled(
                store, f"store {redacted_location(store)}: no answer within {READ_BOUND_S:g} s"
            )
            READERS.abandon(url)
        return empty


def _read(store_dir: Path | str, fn: Callable[[RunStore], T], empty: T) -> T:
    """``fn`` on the store's read API (``READERS``); ``empty`` when there is no store or
    it cannot be read. A store that cannot be opened is told to :data:`GATE`."""
    if not GATE.readable(store_dir):
        return empty
    opened = False
    try:
        with READERS.reading(store_dir) as runs:
            opened = True
            found = empty if runs is None else fn(runs)
    except Exception as exc:  # locked, corrupt, newer schema, server gone
        if opened and not isinstance(exc, OpenProgramError):
            raise
        log.info("no runs from %s: %s", redacted_location(store_dir), message(store_dir, exc))
        if not opened or not is_url(store_dir):
            GATE.failed(store_dir, exc)
        return empty
    GATE.read_ok(store_dir)
    return found


def _info(r: RunRecord, stopped: dict[str, tuple[str, int]]) -> RunInfo:
    at = stopped.get(r.id) if r.status == "running" else None
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
        current_step=f"{at[0]}#{at[1]}" if at is not None else None,
        pause_reason=r.pause_reason,
        interrupted=r.interrupted,
    )


def runs_for_file(store_dir: Path | str, program_path: str) -> list[RunInfo]:
    """Runs whose Program is ``program_path``, newest first ([] if unavailable)."""

    def read(runs: RunStore) -> list[RunInfo]:
        records = runs.runs_of_program(program_path)
        stopped = stopped_in(runs, records)  # as ``openprogram runs`` names it
        return [_info(r, stopped) for r in records]

    none: list[RunInfo] = []
    found = _read(store_dir, read, none)
    return sorted(found, key=lambda r: r.updated_at, reverse=True)


def store_program_paths(store_dir: Path | str) -> list[str]:
    """Distinct Program files with runs in the store ([] if unavailable)."""
    none: list[str] = []
    return _read(store_dir, lambda runs: runs.program_paths(), none)


def run_program(store_dir: Path | str, run_id: str) -> str | None:
    """The Program file of run ``run_id`` (``contract.runs.program_file``; ``""``: not
    recorded); None when the store does not hold the run (or cannot be read)."""

    def read(runs: RunStore) -> str | None:
        r = runs.get_run(run_id)
        return None if r is None else program_file(r.program_path, r.entry)

    return _read(store_dir, read, None)


def recorded_steps_for(
    store_dir: Path | str, program_path: str | None
) -> dict[str, list[list[tuple[str, int]]]] | None:
    """``recorded_steps`` argument of ``analyze_source`` (OP209): qualname -> runs -> steps.

    Each step is ``(name, occurrence)``; None when no run of the file can be broken by an
    edit. The analyzer's query (``RunStore.recorded_step_sequences``: the runs ``resume``
    takes and resumes with the latest source, by its rules), read through ``READERS``.
    """
    if not program_path or not GATE.readable(store_dir):
        return None
    try:
        with READERS.reading(store_dir) as runs:
            found = (runs.recorded_step_sequences(program_path) if runs is not None else {}) or None
    except Exception as exc:  # diagnostics go on without OP209
        GATE.failed(store_dir, exc)
        return None
    GATE.read_ok(store_dir)
    return found
