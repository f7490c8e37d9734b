"""``openprogram submit FILE.py:ENTRY | MODULE:ENTRY [--args JSON] [--queue Q] [--wait]
[--store URL] [--json]``: enqueue a run for workers (``openprogram worker``).

The entry and its arguments are checked (and a resumable entry's source saved) before
anything is recorded, as ``run`` does; prints the run id. ``--wait`` then waits until a
worker completes, fails or pauses the run (or it is cancelled) and reports it as ``run``
does, with its exit code; Ctrl-C stops the wait only (exit 130), the run stays with the
workers.
"""

from __future__ import annotations

import argparse
import sys

from openprogram.cli.common import add_store_argument, queue_name
from openprogram.cli.exits import Exit, report_error
from openprogram.terminal_text import inert_json

NAME = "submit"
HELP = "enqueue a run for workers"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("entry", metavar="FILE.py:ENTRY|MODULE:ENTRY", help="entry to run")
    parser.add_argument("--args", default=None, metavar="JSON_OBJECT", help="keyword arguments")
    parser.add_argument(
        "--queue", default="default", metavar="Q", type=queue_name, help="queue (default: default)"
    )
    parser.add_argument("--model", default=None, metavar="M", help="model, e.g. openai:gpt-4.1")
    parser.add_argument(
        "--wait",
        action="store_true",
        help="wait until a worker completes, fails or pauses the run; exit as run does",
    )
    add_store_argument(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def execute(ns: argparse.Namespace) -> int:
    from openprogram.durable import cli_support as cs
    from openprogram.durable.runner import submit_run, wait_run
    from openprogram.errors import OpenProgramError

    try:
        args = cs.parse_args_json(ns.args)
    except cs.BadArguments as exc:
        return cs.usage_error("submit", str(exc), ns.json)
    try:
        with cs.stdout_to_stderr(ns.json):
            rid = submit_run(ns.entry, args, store=ns.store, queue=ns.queue, model=ns.model)
    except OpenProgramError as exc:
        return cs.usage_error("submit", str(exc), ns.json)
    if not ns.wait:
        if ns.json:
            print(inert_json({"run_id": rid, "status": "queued", "queue": ns.queue}))
        else:
            print(rid)
        return 0
    try:  # a Ctrl-C once the run is recorded stops the wait, whenever it comes
        print(f"run {rid} queued on {ns.queue!r}; waiting for a worker", file=sys.stderr)
        outcome = wait_run(rid, store=ns.store)
    except OpenProgramError as exc:
        return cs.command_error("submit", exc, ns.json)
    except KeyboardInterrupt:
        message = f"stopped waiting; run {rid} stays with the workers of queue {ns.queue!r}"
        return report_error(message, code=Exit.INTERRUPTED, as_json=ns.json, run_id=rid)
    return cs.report_outcome(outcome, ns.json)
