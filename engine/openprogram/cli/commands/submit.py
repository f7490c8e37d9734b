"""``openprogram submit FILE.py:ENTRY | MODULE:ENTRY [--args JSON] [--queue Q] [--store URL]
[--json]``: enqueue a run for workers (``openprogram worker``).

The entry and its arguments are checked (and a resumable entry's source saved) before
anything is recorded, as ``run`` does; prints the run id.
"""

from __future__ import annotations

import argparse
import json

from openprogram.cli.common import add_store_argument

NAME = "submit"
HELP = "enqueue a run for workers"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("entry", metavar="FILE.py:ENTRY|MODULE:ENTRY", help="entry to run")
    parser.add_argument("--args", default=None, metavar="JSON_OBJECT", help="keyword arguments")
    parser.add_argument("--queue", default="default", metavar="Q", help="queue (default: default)")
    parser.add_argument("--model", default=None, metavar="M", help="model, e.g. openai:gpt-4.1")
    add_store_argument(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def execute(ns: argparse.Namespace) -> int:
    from openprogram.durable import cli_support as cs
    from openprogram.durable.runner import submit_run
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
    if ns.json:
        print(json.dumps({"run_id": rid, "status": "queued", "queue": ns.queue}))
    else:
        print(rid)
    return 0
