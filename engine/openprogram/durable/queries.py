"""Run records for editor tooling (runs view, run graph, inlay hints, ``show``), read
through the store's one read API (:func:`openprogram.store.runs.read_run_store`).

Every function takes the store's database file (``<root>/openprogram.db``) or a
``postgresql://`` URL. A missing store, one without run tables, or one that cannot be
read yields empty results (tooling never fails on a store).

Each read opens the store and closes it (a command reads once). A process that reads
again and again (the language server) turns on :data:`READERS`: a PostgreSQL store is
then read through one reader per URL, kept open (:class:`Readers`).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import NamedTuple, Protocol, TypeVar

from openprogram.contract.runs import entry_name, state_text
from openprogram.durable.errors import AmbiguousRunId
from openprogram.errors import OpenProgramError, StoreError
from openprogram.store.lease import is_interrupted, owner_alive
from openprogram.store.run_views import StepContext
from openprogram.store.runs import GraphNodeRow, RunRecord, RunStore, read_run_store
from openprogram.store.session_store import store_url

__all__ = [
    "READERS",
    "GraphNodeRow",
    "Readers",
    "RunRow",
    "StepRow",
    "StoppedRun",
    "get_run",
    "graph_node_objects",
    "list_runs",
    "llm_usage",
    "newest_runs",
    "paused_runs_by_function",
    "recorded_step_sequences",
    "resolve_run_id",
    "run_steps",
    "step_starts",
    "step_view_objects",
    "stopped_at",
    "stopped_in",
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
    cancel_requested: bool = False  # a cancel waits for the executing process (next step)
    pause_requested: bool = False  # a pause waits for the executing process (next step)
    queue: str | None = None  # the queue it was submitted or handed to (workers)
    interrupted: bool = False  # running, no live owner (``store.lease.is_interrupted``)


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


READ_WAIT_S = 2.0
"""How long a kept reader's read waits for a connection (a pooled one the server closed
is replaced first): the language server reads while it answers a request."""


class Readers:
    """The run stores a long-lived process reads: each PostgreSQL URL read through one
    reader, opened by the first read and reused by every read after it (a read is a
    pooled connection and its query, no connection set up), until :meth:`keep_only` no
    longer names its URL or :meth:`close`. A reader whose read fails with a store error
    (the database went away) is closed: the next read opens a new one, so a database
    that comes back is read again. The pool replaces a connection the server closed (a
    restart) before handing it out.

    Until ``keep`` is set, each read opens its store and closes it. SQLite stores are
    always opened per read (a file: nothing to set up)."""

    def __init__(self) -> None:
        self.keep = False
        self._open: dict[str, RunStore] = {}
        self._wanted: set[str] | None = None  # None: every URL read is kept
        self._lock = threading.Lock()
        self._opening: dict[str, threading.Lock] = {}  # one opener per URL
        self._reads: dict[object, tuple[str, float]] = {}  # reads in progress: (url, start)

    @contextmanager
    def reading(self, store: str | os.PathLike[str] | None) -> Iterator[RunStore | None]:
        """The runs of ``store`` for the block (``None``: no store, or no run tables);
        ``StoreError`` when it cannot be opened (``read_run_store``)."""
        url = store_url(store)
        if url is None or not self.keep:
            runs = read_run_store(store)
            try:
                yield runs
            finally:
                if runs is not None:
                    runs.close()
            return
        token = object()
        with self._lock:
            self._reads[token] = (url, time.monotonic())
        try:
            runs, kept = self._reader(url)
            try:
                yield runs
            except StoreError:
                if kept and runs is not None:
                    self._discard(url, runs)
                raise
            finally:
                if not kept and runs is not None:
                    runs.close()
        finally:
            with self._lock:
                del self._reads[token]

    def _reader(self, url: str) -> tuple[RunStore | None, bool]:
        """``url``'s kept reader, opened now if there is none; ``(runs, kept)``."""
        with self._lock:
            runs = self._open.get(url)
            if runs is not None:
                return runs, True
            opening = self._opening.setdefault(url, threading.Lock())
        with opening:  # two threads reading a new URL at once open it once
            with self._lock:
                runs = self._open.get(url)
                if runs is not None:
                    return runs, True
            runs = read_run_store(url, wait_s=READ_WAIT_S)
            if runs is None:  # no run tables yet: asked again at the next read
                return None, False
            with self._lock:
                if not self.keep or (self._wanted is not None and url not in self._wanted):
                    return runs, False  # dropped while it opened
                self._open[url] = runs
            return runs, True

    def _discard(self, url: str, runs: RunStore) -> None:
        with self._lock:
            if self._open.get(url) is runs:
                del self._open[url]
        _close_later([runs])

    def reading_since(self, started: float) -> set[str]:
        """The URLs read now by a read that began at ``started`` (``time.monotonic()``)
        or later and has not ended."""
        with self._lock:
            return {url for url, begun in self._reads.values() if begun >= started}

    def abandon(self, store: str | os.PathLike[str]) -> None:
        """Drop the kept reader of ``store``, whose read does not return (a frozen server, a
        partition): the next read opens a new one. It is closed in a thread (``close``
        may wait for the stuck read's pool)."""
        url = store_url(store) if str(store) else None
        with self._lock:
            runs = self._open.pop(url, None) if url is not None else None
        if runs is not None:
            _close_later([runs])

    def keep_only(self, stores: Iterable[str | os.PathLike[str]]) -> None:
        """Close the readers of every URL not among ``stores`` (the configured ones)."""
        wanted = {url for url in (store_url(s) for s in stores if str(s)) if url is not None}
        with self._lock:
            self._wanted = wanted
            gone = [runs for url, runs in self._open.items() if url not in wanted]
            self._open = {url: runs for url, runs in self._open.items() if url in wanted}
        _close_later(gone)

    def close(self) -> None:
        """Close every reader; reads from now on open their store each time."""
        with self._lock:
            self.keep = False
            gone = list(self._open.values())
            self._open.clear()
        _close_later(gone)

    def is_open(self, store: str | os.PathLike[str]) -> bool:
        """Whether ``store`` has a kept reader now."""
        url = store_url(store) if str(store) else None
        with self._lock:
            return url is not None and url in self._open


def _close_later(readers: list[RunStore]) -> None:
    """Close ``readers`` in a thread: closing a pool waits for its threads, and the
    caller may be answering a request."""

    def close() -> None:
        for runs in readers:
            runs.close()

    if readers:
        threading.Thread(target=close, name="openprogram-reader-close").start()


#: The process's readers (off until ``READERS.keep`` is set).
READERS = Readers()


def _read(
    db_path: str | os.PathLike[str], fn: Callable[[RunStore], T], empty: T, *, strict: bool = False
) -> T:
    """``fn`` on the runs of ``db_path``; ``empty`` when there is no store, or (unless
    ``strict``, which raises the ``StoreError``) when it cannot be read."""
    location = _store_of(db_path)
    if not location.startswith("postgres") and not os.path.isfile(db_path):
        return empty
    try:
        with READERS.reading(location) as runs:
            return empty if runs is None else fn(runs)
    except OpenProgramError:
        if strict:
            raise
        return empty


def _run_row(r: RunRecord) -> RunRow:
    import json

    now = time.time()
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
        owner_alive=owner_alive(r, now),
        cancel_requested=r.cancel_requested,
        pause_requested=r.pause_requested,
        queue=r.queue,
        interrupted=is_interrupted(r, now),
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
    """``{function_qualname: [[(name, occurrence), ...] per unfinished run an edit can
    break]}`` (OP209)."""
    return _read(db_path, lambda runs: runs.recorded_step_sequences(program_path), {})


def list_runs(
    db_path: str | os.PathLike[str],
    program_path: str | None = None,
    limit: int = 200,
    *,
    strict: bool = False,
) -> list[RunRow]:
    """Runs newest first (at most ``limit``); ``program_path`` keeps one Program's runs.
    With ``strict`` a store that cannot be read raises its ``StoreError`` (the editor says
    why instead of showing no runs)."""

    def read(runs: RunStore) -> list[RunRow]:
        found = runs.runs_of_program(program_path)
        found.sort(key=lambda r: r.created_at, reverse=True)
        return [_run_row(r) for r in found[: int(limit)]]

    return _read(db_path, read, [], strict=strict)


def newest_runs(
    db_path: str | os.PathLike[str],
    limit: int = 200,
    *,
    strict: bool = False,
    belongs: Callable[[str], bool] | None = None,
) -> tuple[list[RunRow], int]:
    """The runs a list of runs shows, newest first: every run not finished (queued,
    running, interrupted, paused — one that may need its user is never left out) and the
    ``limit`` newest finished ones; and how many older finished runs were left out
    (:meth:`~openprogram.store.runs.RunStore.newest_runs`; ``belongs``: only the runs of
    the Program files it accepts, those left out counted of them). ``strict`` as for
    :func:`list_runs`."""

    def read(runs: RunStore) -> tuple[list[RunRow], int]:
        found, left_out = runs.newest_runs(limit, belongs)
        return [_run_row(r) for r in found], left_out

    none: tuple[list[RunRow], int] = ([], 0)
    return _read(db_path, read, none, strict=strict)


def get_run(db_path: str | os.PathLike[str], run_id: str, *, strict: bool = False) -> RunRow | None:
    """One run, or None (no store, no such run, or a store that cannot be read). With
    ``strict`` a store that cannot be read raises its ``StoreError``: for a caller that
    must tell "no such run" from "not read" (the editor's cancel)."""

    def read(runs: RunStore) -> RunRow | None:
        r = runs.get_run(run_id)
        return _run_row(r) if r is not None else None

    return _read(db_path, read, None, strict=strict)


MIN_RUN_ID_PREFIX = 4
"""The fewest characters of a run id that :func:`resolve_run_id` looks up as a prefix."""

CANDIDATES_SHOWN = 5
"""How many of the runs an ambiguous prefix matches its error names (the newest)."""


def resolve_run_id(db_path: str | os.PathLike[str], text: str) -> str:
    """The id of the run that ``text`` names, as git resolves a commit id: ``text`` when a
    run has that id; else the id of the one run whose id starts with ``text``; else ``text``
    itself (no store, or no run matches: the caller says ``no run`` as for any unknown id).

    Raises :class:`~openprogram.durable.errors.AmbiguousRunId` when several runs' ids start
    with ``text`` (naming the :data:`CANDIDATES_SHOWN` newest and how many match) or when
    ``text`` is not an id and shorter than :data:`MIN_RUN_ID_PREFIX` characters, and the
    ``StoreError`` of a store that cannot be read."""

    def read(runs: RunStore) -> str:
        if runs.get_run(text) is not None:
            return text
        if len(text) < MIN_RUN_ID_PREFIX:
            raise AmbiguousRunId(
                f"run id prefix {text!r} is too short: give at least {MIN_RUN_ID_PREFIX} "
                "characters of the id (`openprogram runs` lists them)"
            )
        count, newest = runs.runs_by_id_prefix(text, CANDIDATES_SHOWN)
        if count <= 1:
            return newest[0].id if newest else text
        now = time.time()
        shown = ", ".join(
            f"{r.id} ({entry_name(r.entry)}, "
            f"{state_text(r.status, r.pause_reason, interrupted=is_interrupted(r, now))})"
            for r in newest
        )
        more = count - CANDIDATES_SHOWN
        raise AmbiguousRunId(
            f"run id prefix {text!r} is ambiguous: {count} runs match, newest first: {shown}"
            + (f" and {more} more" if more > 0 else "")
            + "; give more characters of the id"
        )

    return _read(db_path, read, text, strict=True)


class StoppedRun(Protocol):
    """What :func:`stopped_at` reads of a run (a :class:`RunRow` or a ``RunRecord``)."""

    @property
    def id(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def paused_step(self) -> str | None: ...
    @property
    def paused_occurrence(self) -> int | None: ...
    @property
    def interrupted(self) -> bool: ...


def stopped_at(
    db_path: str | os.PathLike[str], runs: Iterable[StoppedRun], *, strict: bool = False
) -> dict[str, tuple[str, int]]:
    """``{run_id: (name, occurrence)}`` of the step each of ``runs`` stopped at, the one
    answer ``runs``, ``show`` and the editor's Runs view give: a paused run's
    ``paused_step`` (a run awaiting approval: the tool); an interrupted run's step started
    without a saved result (:meth:`~openprogram.store.runs.RunStore.uncertain_step`, all
    of them in one read of the store). A run with no such step (any other run, or no step
    known) is not a key. ``strict`` as for :func:`list_runs`."""
    runs = list(runs)
    if not any(run.status != "paused" and run.interrupted for run in runs):
        return stopped_in(None, runs)
    none: dict[str, tuple[str, int]] = {}
    return _read(db_path, lambda store: stopped_in(store, runs), none, strict=strict)


def stopped_in(store: RunStore | None, runs: Iterable[StoppedRun]) -> dict[str, tuple[str, int]]:
    """:func:`stopped_at` on an open ``store`` (``None``: none of ``runs`` is interrupted),
    for a caller that reads it already (the language server's run index)."""
    found: dict[str, tuple[str, int]] = {}
    for run in runs:
        if run.status == "paused":
            if run.paused_step:
                found[run.id] = (run.paused_step, run.paused_occurrence or 0)
        elif store is not None and run.interrupted:
            s = store.uncertain_step(run.id)
            if s is not None:
                found[run.id] = (s.name, s.occurrence)
    return found


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
    context: StepContext,
    *,
    now: float,
    shorten: Callable[[str | None], str],
) -> list[str]:
    """The run's steps in call order, each a JSON object text for the Runs view
    (:meth:`RunStore.step_view_objects`; ``context``:
    :meth:`~openprogram.store.run_views.StepContext.of_run`)."""
    return _read(
        db_path,
        lambda runs: runs.step_view_objects(run_id, context, now=now, shorten=shorten),
        [],
    )


def graph_node_objects(
    db_path: str | os.PathLike[str],
    session_id: str,
    *,
    limit: int,
    node_id: str | None = None,
    run_status: str | None = None,
) -> list[GraphNodeRow]:
    """The session's nodes (or the one ``node_id``) in ``seq`` order for the run graph
    (:meth:`RunStore.graph_node_objects`; ``run_status``: its run's, ``None`` for none)."""
    return _read(
        db_path,
        lambda runs: runs.graph_node_objects(
            session_id, limit=limit, node_id=node_id, run_status=run_status
        ),
        [],
    )
