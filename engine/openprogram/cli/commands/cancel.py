"""``openprogram cancel RUN_ID [--kill] [--store DIR] [--json]``: cancel a run.

A run that another live process executes is only *requested* to cancel: that process
stops at its next step (a safe point) and records it; ``--kill`` ends such a process of
this machine (SIGTERM, then SIGKILL) — for an entry stuck outside any step — unless it is
a worker that also executes other runs (exit 2; the cancel stays requested).

``--json`` prints one object: ``{"run_id", "status", "cancel"}``, ``cancel`` being the
:class:`~openprogram.contract.runs.CancelOutcome` that
:func:`~openprogram.durable.runner.cancel_run` returned — ``"cancelled"`` (done: the
run's ``status`` is ``cancelled``) or ``"requested"`` (the run is still ``running`` in
its process, which records the cancel at its next step); an error is the one error
object of every command (``{"run_id", "status": "error", "error"}``).
"""

from __future__ import annotations

import argparse

from openprogram.cli.common import add_store_argument
from openprogram.contract.runs import CancelOutcome
from openprogram.terminal_text import inert_json

NAME = "cancel"
HELP = "cancel a run"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_id", metavar="RUN_ID", help="run to cancel")
    parser.add_argument(
        "--kill",
        action="store_true",
        help="end the local process executing the run (SIGTERM, then SIGKILL)",
    )
    add_store_argument(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def execute(ns: argparse.Namespace) -> int:
    from openprogram.durable import cli_support as cs
    from openprogram.durable.runner import cancel_run
    from openprogram.errors import OpenProgramError

    try:
        state = cancel_run(ns.run_id, store=ns.store, kill=ns.kill)
    except OpenProgramError as exc:
        return cs.command_error("cancel", exc, ns.json)
    if ns.json:
        print(inert_json({"run_id": ns.run_id, "status": str(state.status), "cancel": str(state)}))
    elif state is CancelOutcome.REQUESTED:
        print(
            f"run {ns.run_id}: cancel requested; the process executing it stops at its next "
            "step (use --kill to end a local process now)"
        )
    else:
        print(f"run {ns.run_id} cancelled")
    return 0
