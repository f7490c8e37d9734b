"""Run per-file analyses in forked worker processes: a crash or an overrun costs one file.

Each worker is a fork of the CLI after the analyzer is imported; it receives job indices
over a pipe and answers with ``(index, result)``. The parent waits on all pipes:

- a worker that dies (a native crash, the OOM killer) loses only the file it was
  analysing — that file is reported as an internal error and a new worker takes over;
- a file that takes longer than the time limit gets its worker killed and an OP001
  finding ("not analysed: ... time limit"), never a hang.

Without ``fork`` (Windows) the jobs run in this process, one after the other.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

J = TypeVar("J")
R = TypeVar("R")


class _Worker:
    __slots__ = ("conn", "current", "proc", "started")

    def __init__(self, proc: Any, conn: Any) -> None:
        self.proc = proc
        self.conn = conn
        self.current = -1
        self.started = 0.0


def _serve(conn: Any, jobs: Sequence[Any], work: Callable[[Any], Any]) -> None:
    """Worker loop: analyse the job of each index received until ``None`` or EOF."""
    while True:
        try:
            index = conn.recv()
        except (EOFError, OSError):
            return
        if index is None:
            return
        conn.send((index, work(jobs[index])))


class Pool(Generic[J, R]):
    """Results of ``work(job)`` for every job, isolated per file (see the module doc)."""

    def __init__(
        self,
        work: Callable[[J], R],
        on_crash: Callable[[J, str], R],
        on_timeout: Callable[[J, float], R],
        *,
        workers: int,
        time_limit: float | None,
    ) -> None:
        self.work = work
        self.on_crash = on_crash
        self.on_timeout = on_timeout
        self.workers = max(1, workers)
        self.time_limit = time_limit

    def run(self, jobs: Sequence[J]) -> list[R]:
        import multiprocessing

        if not jobs:
            return []
        if "fork" not in multiprocessing.get_all_start_methods():  # pragma: no cover
            return [self.work(j) for j in jobs]
        from multiprocessing.connection import wait

        context = multiprocessing.get_context("fork")
        results: dict[int, R] = {}
        todo = deque(range(len(jobs)))

        def start() -> _Worker:
            parent, child = context.Pipe()
            proc = context.Process(target=_serve, args=(child, jobs, self.work), daemon=True)
            proc.start()
            child.close()
            return _Worker(proc, parent)

        def assign(w: _Worker) -> bool:
            if not todo:
                w.conn.send(None)
                w.conn.close()
                w.proc.join()
                return False
            w.current = todo.popleft()
            w.started = time.monotonic()
            w.conn.send(w.current)
            return True

        def replace(w: _Worker) -> None:
            w.conn.close()
            if w.proc.is_alive():
                w.proc.kill()
            w.proc.join()
            fresh = start()
            busy.remove(w)
            if assign(fresh):
                busy.append(fresh)

        busy: list[_Worker] = []
        for _ in range(min(self.workers, len(jobs))):
            w = start()
            if assign(w):
                busy.append(w)
        while busy:
            timeout = None
            if self.time_limit is not None:
                oldest = min(w.started for w in busy)
                timeout = max(0.0, oldest + self.time_limit - time.monotonic())
            ready = wait([w.conn for w in busy], timeout)
            for w in [w for w in busy if w.conn in ready]:
                try:
                    index, result = w.conn.recv()
                except (EOFError, OSError):
                    w.proc.join()
                    results[w.current] = self.on_crash(jobs[w.current], _death(w.proc.exitcode))
                    replace(w)
                    continue
                results[index] = result
                if not assign(w):
                    busy.remove(w)
            if self.time_limit is not None:
                now = time.monotonic()
                for w in [w for w in busy if now - w.started > self.time_limit]:
                    results[w.current] = self.on_timeout(jobs[w.current], self.time_limit)
                    replace(w)
        return [results[i] for i in range(len(jobs))]


def _death(exitcode: int | None) -> str:
    """How a worker ended, in words (``killed by SIGSEGV``)."""
    if exitcode is not None and exitcode < 0:
        import signal

        try:
            return f"the analysis process was killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            pass
    return f"the analysis process exited unexpectedly (exit code {exitcode})"


def cpu_count() -> int:
    return os.cpu_count() or 1
