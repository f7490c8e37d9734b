"""``openprogram replay RUN_ID [--cassette OUT.jsonl] [--store DIR|URL] [--json]``.

Re-runs a recorded run offline: the same entry with the same arguments as a new run,
answering every model request from the recorded run's ``llm`` nodes
(``replay:session:<id>``). A request that differs from the recording fails the replay
with ``ReplayMismatch`` and a diff; a different result is reported as a mismatch.
``--cassette`` instead exports the recorded model calls as a JSONL cassette
(replay it anywhere with ``OPENPROGRAM_MODEL=replay:OUT.jsonl``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from openprogram.cli.common import add_store_argument, cannot_write
from openprogram.terminal_text import inert_json

NAME = "replay"
HELP = "re-run a recorded run offline against its recorded model replies"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_id", metavar="RUN_ID", help="the recorded run to replay")
    parser.add_argument(
        "--cassette", metavar="OUT.jsonl", help="export the run's model calls instead"
    )
    add_store_argument(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def execute(ns: argparse.Namespace) -> int:
    from openprogram.durable import cli_support as cs
    from openprogram.durable.runner import start_run
    from openprogram.errors import OpenProgramError
    from openprogram.runtime.cassette import load_session, write_cassette
    from openprogram.store import resolve_root, store_url
    from openprogram.store.runs import open_run_store

    try:
        root = store_url(ns.store) or str(resolve_root(ns.store))  # a directory or a URL
        with open_run_store(ns.store, create=False) as db:
            run = db.get_run(ns.run_id)
            if run is None:
                return cs.usage_error("replay", f"no run {ns.run_id!r} in {db.location}", ns.json)
            session_id = run.session_id or run.id
            recordings = load_session(db.store, session_id)
    except OpenProgramError as exc:
        return cs.command_error("replay", exc, ns.json)

    if ns.cassette:
        try:
            path = write_cassette(ns.cassette, recordings)
        except OSError as exc:
            return cs.command_error("replay", cannot_write(ns.cassette, exc), ns.json)
        message = f"wrote {len(recordings)} model calls of run {run.id} to {path}"
        if ns.json:
            print(inert_json({"run_id": run.id, "status": "exported", "cassette": str(path)}))
        else:
            print(message)
        return 0

    os.environ["OPENPROGRAM_MODEL"] = f"replay:session:{session_id}"
    os.environ["OPENPROGRAM_STORE"] = root
    try:
        with cs.stdout_to_stderr(ns.json):
            outcome = start_run(run.entry, run.args, store=root, policy=run.policy)
    except OpenProgramError as exc:
        return cs.command_error("replay", exc, ns.json)
    matches = outcome.status == "completed" and _same(outcome.result, run.result)
    if ns.json:
        payload: dict[str, Any] = {**outcome.to_json(), "replayed": run.id, "matches": matches}
        print(inert_json(payload, default=repr))
    else:
        code = cs.report_outcome(outcome, False)
        if code != 0:
            return code
        verdict = "matches" if matches else "DIFFERS from"
        print(f"replay of run {run.id} {verdict} the recorded result", file=sys.stderr)
    if outcome.status != "completed":
        return cs.exit_code(outcome.status)
    return 0 if matches else 1


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True, default=repr) == json.dumps(
        b, sort_keys=True, default=repr
    )
