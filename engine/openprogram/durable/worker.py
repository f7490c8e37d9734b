"""Workers: processes on any number of machines executing the runs submitted to a queue.

``openprogram worker [--queue Q] [--concurrency N]`` claims runs of ``Q`` from the store
(on PostgreSQL with ``FOR UPDATE SKIP LOCKED``), holds each one's lease while a heartbeat
renews it, and executes it: a queued run from its start, a run whose previous worker
stopped renewing its lease (killed, machine lost) with the resume rules — completed steps
are replayed from the store, a step that was started but whose result was not saved
pauses the run as uncertain. Cancel and pause requests reach the executing worker through
the store at its next step. ``stop`` (SIGTERM) lets each execution finish its current
step, then gives the run back to the queue for another worker.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from openprogram.errors import ConfigError, StoreError
from openprogram.store.lease import Owner, lease_seconds
from openprogram.store.runs import RunRecord, RunStore, open_run_store

log = logging.getLogger(__name__)
DEFAULT_QUEUE = "default"
TAKEN_OVER = "taken over"  # how a run ended for a worker it was taken from (another owner)


def check_queue(queue: str) -> str:
    """``queue`` when it names a queue; ``ConfigError`` for an empty or blank name (no
    worker means one: ``runs`` would show it as ``-``, no queue) and for one with leading
    or trailing whitespace (``" q "`` would be a queue of its own, not ``q``, which no
    worker of ``q`` claims and ``runs`` shows as ``q``). The one check of a queue name:
    every API and command that takes one (the CLI's ``--queue``:
    :func:`openprogram.cli.common.queue_name`)."""
    if not queue.strip():
        raise ConfigError(f"a queue name cannot be empty or blank (got {queue!r})")
    if queue != queue.strip():
        raise ConfigError(
            f"a queue name cannot start or end with whitespace (got {queue!r}; "
            f"did you mean {queue.strip()!r}?)"
        )
    return queue


@dataclass
class WorkerStats:
    """What one worker did (for its exit line and the benchmarks)."""

    finished: dict[str, int] = field(default_factory=dict)  # status (or TAKEN_OVER) -> runs
    claim_errors: int = 0


def run_worker(
    store: str | os.PathLike[str] | None = None,
    *,
    queue: str = DEFAULT_QUEUE,
    concurrency: int = 1,
    queue_limit: int | None = None,
    poll_s: float = 0.2,
    lease_s: float | None = None,
    durability: str | None = None,
    stop: threading.Event | None = None,
    exit_when_idle: bool = False,
    on_finished: Callable[[str, str, str | None], None] | None = None,
    on_started: Callable[[str], None] | None = None,
) -> WorkerStats:
    """Claim and execute runs of ``queue`` until ``stop`` is set (or, with
    ``exit_when_idle``, until no run of the queue is queued or running anywhere: a run
    whose worker died is waited for until its lease expires, then taken over).

    ``concurrency``: runs this worker executes at once (threads); ``queue_limit``: runs
    of the queue executing at once across all workers. A store that cannot be reached
    (a restarted database) is retried every ``poll_s`` until it answers again.
    ``on_finished(run_id, status, detail)`` is called as each execution ends; ``detail``
    says why a run failed, paused or was interrupted, in one line (else ``None``);
    ``on_started(location)`` once the store is open (its location, password hidden).

    A run that cannot execute because of this process's configuration (a malformed
    ``pyproject.toml`` of its project, a bad ``OPENPROGRAM_MODEL``: a ``ConfigError``) is
    given back as it was claimed (queued, or interrupted) and the worker stops as on
    ``stop`` (its other executions give their runs back after their current step), then
    raises that ``ConfigError``: every run of that project would stop the same way, and a
    worker claiming it again would only loop on it.
    """
    from openprogram.durable.runner import execute_claimed

    check_queue(queue)
    stop = stop or threading.Event()
    lease = lease_s or lease_seconds()
    stats = WorkerStats()
    lock = threading.Lock()
    runs: RunStore = open_run_store(store, durability=durability)
    said: set[str] = set()  # store errors logged since the store last answered
    config_errors: list[ConfigError] = []  # what stopped this worker (the first is raised)

    def warn(message: str) -> None:
        """Log a store error once while it lasts: a lost database fails every claim
        (each waits ``OPENPROGRAM_PG_WAIT_S`` once, then a moment: one line per poll)."""
        if message not in said:
            said.add(message)
            log.warning("%s", message)

    if on_started is not None:
        on_started(runs.location)

    # an execution ended (its slot can claim at once) or a run of the queue was announced
    freed = threading.Event()
    done = threading.Event()  # this worker returned: its listening ends with it
    listener = runs.watch_queue(queue, freed, done)

    def execute(run: RunRecord, owner: Owner) -> None:
        try:
            _execute(run, owner)
        finally:
            freed.set()

    def _execute(run: RunRecord, owner: Owner) -> None:
        run_id = run.id
        detail: str | None = None
        try:
            outcome = execute_claimed(runs, run, owner, lease, stop=stop)
            # a run another process took over ends with that owner: its status is not ours
            status = TAKEN_OVER if outcome.lease_lost else str(outcome.status)
            if status in ("failed", "paused"):  # why (a pause's message names its step)
                detail = outcome.error
        except StoreError as exc:  # the store went away mid-run: the lease will expire
            status, detail = "interrupted", f"{exc}; a worker takes it over once its lease expires"
        except ConfigError as exc:  # the run was given back: the operator fixes the config
            with lock:
                config_errors.append(exc)
            stop.set()
            return
        with lock:
            stats.finished[status] = stats.finished.get(status, 0) + 1
        if on_finished is not None:
            on_finished(run_id, status, _one_line(detail))
        elif status == "interrupted":
            log.warning("run %s %s: %s", run_id, status, detail)

    active: set[Future[None]] = set()
    try:
        with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="op-worker") as pool:
            while not stop.is_set():
                active = {f for f in active if not f.done()}
                claimed = None
                if len(active) < concurrency:
                    owner = Owner.this_process()
                    try:
                        claimed = runs.claim_next(queue, owner, lease, limit=queue_limit)
                        said.clear()
                    except StoreError as exc:  # the message names the store
                        stats.claim_errors += 1
                        warn(f"cannot claim a run of queue {queue!r}: {exc}")
                    if claimed is not None:
                        active.add(pool.submit(execute, claimed, owner))
                        continue
                if (
                    exit_when_idle
                    and claimed is None
                    and not active
                    and not _pending(runs, queue, warn)
                ):
                    break
                _wait(poll_s, stop, freed)
            for f in active:
                f.result()
    finally:
        done.set()
        if listener is not None:
            listener.join(timeout=_LISTENER_JOIN_S)
        runs.close()
    if config_errors:
        raise config_errors[0]
    return stats


#: How long a returning worker waits for its listening thread to close its connection.
_LISTENER_JOIN_S = 5.0
#: How often a waiting claim loop looks at ``stop`` while it waits for a free slot.
_STOP_CHECK_S = 0.05


def _wait(poll_s: float, stop: threading.Event, freed: threading.Event) -> None:
    """Wait ``poll_s`` before the next claim, or less: until ``freed`` is set — an
    execution ended (a busy worker takes its next run at once, not at its next poll) or,
    on PostgreSQL, a run of the queue was announced (an idle worker claims it at once) —
    or ``stop`` is set (seen within ``_STOP_CHECK_S``)."""
    deadline = time.monotonic() + poll_s
    while not stop.is_set() and not freed.is_set():
        left = deadline - time.monotonic()
        if left <= 0:
            break
        freed.wait(min(left, _STOP_CHECK_S))
    freed.clear()


def _pending(runs: RunStore, queue: str, warn: Callable[[str], None]) -> bool:
    """Whether a run of ``queue`` is still queued or running (``True`` when the store
    cannot tell right now: keep waiting)."""
    try:
        return runs.count_unfinished(queue) > 0
    except StoreError as exc:  # the message names the store
        warn(f"cannot count the runs of queue {queue!r}: {exc}")
        return True


def _one_line(text: str | None, limit: int = 1000) -> str | None:
    """``text`` on one line (a worker prints one line per run), at most ``limit`` chars."""
    if text is None:
        return None
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
