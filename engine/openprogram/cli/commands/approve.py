"""``openprogram approve RUN_ID [--no-resume | --queue Q] [--store DIR] [--json]``: approve
the tool call a run awaits (``awaiting_approval``) and resume the run — here, or with
``--queue Q`` on a worker of ``Q``. ``deny`` is its counterpart."""

from __future__ import annotations

import argparse

from openprogram.cli.common import add_store_argument, queue_name
from openprogram.terminal_text import inert, inert_json

NAME = "approve"
HELP = "approve the tool call a run is awaiting, then resume the run"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_id", metavar="RUN_ID", help="run awaiting approval")
    parser.add_argument(
        "--no-resume", action="store_true", help="only record the decision; resume later"
    )
    parser.add_argument(
        "--queue",
        default=None,
        type=queue_name,
        metavar="Q",
        help="then hand the run to the workers of queue Q instead of resuming it here",
    )
    add_store_argument(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def decide(ns: argparse.Namespace, approve: bool) -> int:
    """Record the decision (``approve`` or deny) and report how the resumed run ended."""
    from openprogram.cli.commands.resume import queued_line
    from openprogram.cli.progress import LiveProgress
    from openprogram.durable import cli_support as cs
    from openprogram.durable.approvals import approve_run, deny_run, pending_request
    from openprogram.errors import OpenProgramError

    command = NAME if approve else "deny"
    if ns.queue is not None and ns.no_resume:
        return cs.usage_error(command, "give --no-resume or --queue", ns.json)
    verdict = "approved" if approve else "denied"
    progress = LiveProgress(command, ns.store)
    try:
        request = pending_request(ns.run_id, store=ns.store)
        with cs.stdout_to_stderr(ns.json):
            decide_fn = approve_run if approve else deny_run
            outcome = decide_fn(ns.run_id, store=ns.store, resume=not ns.no_resume, queue=ns.queue)
    except OpenProgramError as exc:
        progress.close()
        return cs.usage_error(command, str(exc), ns.json)
    progress.close()
    if ns.queue is not None:
        print(queued_line(ns.run_id, ns.queue, ns.json, decision=verdict))
        return cs.EXIT_OK
    if outcome is None:
        if ns.json:
            print(inert_json({"run_id": ns.run_id, "status": "paused", "decision": verdict}))
        else:
            tool = request["tool"] if request else "the tool call"
            print(inert(f"{tool} {verdict}; resume with: openprogram resume {ns.run_id}"))
        return cs.EXIT_OK
    return cs.report_outcome(outcome, ns.json)


def execute(ns: argparse.Namespace) -> int:
    return decide(ns, approve=True)
