"""``openprogram runs [--status S] [--queue Q] [--json] [--store DIR]``: list run records.

The table's STATUS says why a paused run paused (``paused (uncertain)``, ``paused
(requested)``, ``paused (awaiting_approval)``: :func:`~openprogram.contract.runs.state_text`
of the ``status`` and ``pause_reason`` that ``--json`` prints), and ``interrupted`` for a
``running`` run whose process is gone (``--json``: ``"interrupted": true``), with the step
it stopped in as its PAUSED_STEP (``"interrupted_step"``); ``running (cancel requested)``
while a cancel waits for the process executing the run (``"cancel_requested": true``).
PAUSED_STEP (``"paused_step"``) is the step a paused run stopped at, the one
:func:`~openprogram.durable.queries.stopped_at` names: none for a run cancelled while paused.
A QUEUE column, when a listed run was submitted to a queue (``"queue"``); ``--queue Q``
lists only the runs of ``Q``.
"""

from __future__ import annotations

import argparse
import time

from openprogram.cli.common import add_store_argument, no_store_note, queue_name
from openprogram.cli.table import format_table, terminal_width
from openprogram.contract.runs import (
    RUN_STATES,
    PauseReason,
    RunStatus,
    entry_name,
    state_text,
)
from openprogram.terminal_text import inert_json

NAME = "runs"
INTERRUPTED = "interrupted"  # the STATUS of a running run whose process is gone (state_text)
HELP = "list runs"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--status",
        choices=(*RUN_STATES, PauseReason.AWAITING_APPROVAL.value, INTERRUPTED),
        default=None,
        help="only runs in this state (awaiting_approval: paused runs waiting for a decision; "
        "interrupted: running runs whose process is gone)",
    )
    parser.add_argument(
        "--queue", default=None, metavar="Q", type=queue_name, help="only runs of queue Q"
    )
    parser.add_argument("--json", action="store_true", help="print a JSON array of runs")
    add_store_argument(parser)


def execute(ns: argparse.Namespace) -> int:
    from openprogram.durable import cli_support as cs
    from openprogram.durable import queries
    from openprogram.durable.runner import list_runs
    from openprogram.errors import OpenProgramError
    from openprogram.store import store_db_path, store_url

    awaiting = ns.status == PauseReason.AWAITING_APPROVAL
    status = ns.status
    if awaiting:
        status = RunStatus.PAUSED
    elif ns.status == INTERRUPTED:
        status = RunStatus.RUNNING
    try:
        runs = list_runs(store=ns.store, status=status)
        if awaiting:
            runs = [r for r in runs if r.pause_reason == PauseReason.AWAITING_APPROVAL]
        if ns.queue is not None:
            runs = [r for r in runs if r.queue == ns.queue]
        gone = {r.id for r in runs if r.interrupted}  # running, but its process is gone
        if ns.status == INTERRUPTED:
            runs = [r for r in runs if r.id in gone]
        location = store_url(ns.store) or store_db_path(ns.store)
        stopped = queries.stopped_at(location, runs, strict=True)  # paused at, or stopped in
    except OpenProgramError as exc:
        return cs.command_error("runs", exc, ns.json)
    if ns.json:
        out = []
        for r in runs:
            at = stopped.get(r.id) if r.id in gone else None
            interrupted = {"interrupted": r.id in gone, "interrupted_step": at and at[0]}
            # its paused step only while stopped there (a cancelled run's is no more)
            paused = r.id in stopped and r.id not in gone
            where = {
                "paused_step": r.paused_step if paused else None,
                "paused_occurrence": r.paused_occurrence if paused else None,
            }
            out.append({**r.to_json(), **where, **interrupted})
        print(inert_json(out))
        return 0
    if not runs:
        print("no runs" + no_store_note(ns.store))
        return 0
    queues = any(r.queue is not None for r in runs)  # a fleet's runs: say whose they are
    rows: list[tuple[str, ...]] = [
        ("RUN_ID", "STATUS", "ENTRY", "PAUSED_STEP", *(("QUEUE",) if queues else ()), "UPDATED")
    ]
    for r in runs:
        updated = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.updated_at))
        # "paused (uncertain)": why it paused; "interrupted": its process is gone
        status = state_text(
            r.status,
            r.pause_reason,
            interrupted=r.id in gone,
            cancel_requested=r.cancel_requested,
            pause_requested=r.pause_requested,
        )
        at = stopped.get(r.id)
        step = at[0] if at is not None else None  # paused at, or stopped in: no other
        queue = (r.queue or "-",) if queues else ()
        rows.append((r.id, status, entry_name(r.entry), step or "-", *queue, updated))
    for line in format_table(rows[0], rows[1:], flex=2, width=terminal_width()):
        print(line)
    return 0
