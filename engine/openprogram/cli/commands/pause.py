"""``openprogram pause RUN_ID [--store DIR] [--json]``: pause a run.

A run that another live process executes (``openprogram run``, a worker on any machine)
is only *requested* to pause: that process pauses it before its next step (a safe point)
and records it, with the reason ``requested``. A run whose process is gone is paused at
once. ``openprogram resume RUN_ID`` continues a paused run after its last finished step.

``--json`` prints one object: ``{"run_id", "status", "pause"}``, ``pause`` being the
:class:`~openprogram.contract.runs.PauseOutcome` that
:func:`~openprogram.durable.runner.pause_run` returned — ``"requested"`` (the run is still
``running`` in its process) or ``"paused"`` (done: its ``status`` is ``paused``); an error
is the one error object of every command (``{"run_id", "status": "error", "error"}``).
"""

from __future__ import annotations

import argparse

from openprogram.cli.common import add_store_argument
from openprogram.contract.runs import PauseOutcome
from openprogram.terminal_text import inert_json

NAME = "pause"
HELP = "pause a run before its next step"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_id", metavar="RUN_ID", help="run to pause")
    add_store_argument(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def execute(ns: argparse.Namespace) -> int:
    from openprogram.durable import cli_support as cs
    from openprogram.durable.runner import pause_run
    from openprogram.errors import OpenProgramError

    try:
        outcome = pause_run(ns.run_id, store=ns.store)
    except OpenProgramError as exc:
        return cs.command_error("pause", exc, ns.json)
    if ns.json:
        print(
            inert_json({"run_id": ns.run_id, "status": str(outcome.status), "pause": str(outcome)})
        )
    elif outcome is PauseOutcome.REQUESTED:
        print(
            f"run {ns.run_id}: pause requested; the process executing it pauses it before "
            "its next step"
        )
    else:
        print(f"run {ns.run_id} paused; continue it with: openprogram resume {ns.run_id}")
    return 0
