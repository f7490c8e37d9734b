"""``openprogram worker [--queue Q] [--concurrency N] [--queue-limit N] [--store URL]``:
claim and execute the runs submitted to a queue, on any number of machines.

Each run's lease is renewed by a heartbeat; a run whose worker stopped renewing it is
taken over by another worker when the lease expires (``OPENPROGRAM_LEASE_S``). SIGTERM or
Ctrl-C: every execution finishes its current step, its run goes back to the queue, then
the worker exits 0. ``--exit-when-idle`` exits once no run of the queue is queued or
running anywhere (a run whose worker died is taken over when its lease expires first).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import Any

from openprogram.cli.common import add_store_argument, queue_name
from openprogram.terminal_text import inert_line

NAME = "worker"
HELP = "execute runs submitted to a queue"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--queue", default="default", metavar="Q", type=queue_name, help="queue (default: default)"
    )
    parser.add_argument(
        "--concurrency", type=int, default=1, metavar="N", help="runs executed at once (1)"
    )
    parser.add_argument(
        "--queue-limit",
        type=int,
        default=None,
        metavar="N",
        help="runs of the queue executing at once across all workers",
    )
    parser.add_argument(
        "--poll", type=float, default=0.2, metavar="S", help="seconds between claims when idle"
    )
    parser.add_argument(
        "--exit-when-idle",
        action="store_true",
        help="exit once no run of the queue is queued or running anywhere",
    )
    add_store_argument(parser)


def execute(ns: argparse.Namespace) -> int:
    from openprogram.durable import cli_support as cs
    from openprogram.durable.worker import run_worker
    from openprogram.errors import OpenProgramError

    if ns.concurrency < 1 or (ns.queue_limit is not None and ns.queue_limit < 1):
        return cs.usage_error("worker", "--concurrency and --queue-limit must be >= 1", False)
    if not 0 < ns.poll < float("inf"):  # no wait (0, negative, NaN): a busy claim loop
        return cs.usage_error("worker", "--poll must be a number of seconds > 0", False)
    stop = threading.Event()
    output = threading.Lock()  # runs end on several threads: one whole line at a time

    def request_stop(signum: int, frame: Any) -> None:
        print("openprogram worker: stopping after the current steps", file=sys.stderr)
        stop.set()

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)

    def started(location: str) -> None:
        limit = "" if ns.queue_limit is None else f", queue limit {ns.queue_limit}"
        print(
            f"openprogram worker: claiming runs of queue {ns.queue!r} from {location} "
            f"(concurrency {ns.concurrency}{limit})",
            file=sys.stderr,
            flush=True,
        )

    def finished(run_id: str, status: str, detail: str | None) -> None:
        line = f"run {run_id} {status}" + (f": {detail}" if detail else "")
        with output:
            print(inert_line(line), flush=True)

    try:
        run_worker(
            ns.store,
            queue=ns.queue,
            concurrency=ns.concurrency,
            queue_limit=ns.queue_limit,
            poll_s=ns.poll,
            stop=stop,
            exit_when_idle=ns.exit_when_idle,
            on_finished=finished,
            on_started=started,
        )
    except OpenProgramError as exc:
        return cs.usage_error("worker", str(exc), False)
    return 0
