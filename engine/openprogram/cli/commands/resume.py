"""``openprogram resume RUN_ID [--policy P] [--model M] [--rerun-uncertain] [--force-takeover]
[--queue Q] [--store DIR] [--json]``.

``openprogram resume --all-interrupted`` resumes runs left running by a process that died
within the last two hours (never paused, cancelled, uncertain or awaiting-approval runs;
runs of a queue are left to its workers).

``--queue Q`` hands the run to the workers of ``Q`` instead of resuming it in this
process (:func:`~openprogram.durable.runner.requeue_run`): it prints the queue and exits 0
at once; ``--json`` prints ``{"run_id", "status": "queued", "queue"}``.
"""

from __future__ import annotations

import argparse

from openprogram.cli.common import add_store_argument, queue_name
from openprogram.contract.runs import POLICIES
from openprogram.terminal_text import inert_json

NAME = "resume"
HELP = "resume a paused, failed or interrupted run"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_id", nargs="?", metavar="RUN_ID", help="run to resume")
    parser.add_argument(
        "--policy",
        choices=POLICIES,
        default=None,
        help="code-change policy for this resume (default: [tool.openprogram.execution] "
        "code_change_policy in pyproject.toml, else the run's)",
    )
    parser.add_argument(
        "--model",
        default=None,
        metavar="M",
        help="model for this resume, e.g. openai:gpt-4.1 (default: the run's own, else "
        "OPENPROGRAM_MODEL)",
    )
    parser.add_argument(
        "--rerun-uncertain",
        action="store_true",
        help="re-run steps that were started but whose result was not saved",
    )
    parser.add_argument(
        "--force-takeover",
        action="store_true",
        help="take over a run whose lease has not expired (its process, on another machine, "
        "must be gone; a live process of this machine keeps its run)",
    )
    parser.add_argument(
        "--queue",
        default=None,
        type=queue_name,
        metavar="Q",
        help="hand the run to the workers of queue Q instead of resuming it here (the "
        "options above go with it)",
    )
    parser.add_argument(
        "--all-interrupted",
        action="store_true",
        help="resume every run interrupted by a dead process within two hours (runs of a "
        "queue are left to its workers)",
    )
    add_store_argument(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def execute(ns: argparse.Namespace) -> int:
    from openprogram.durable import cli_support as cs
    from openprogram.durable.runner import resume_interrupted, resume_run
    from openprogram.errors import OpenProgramError

    if ns.all_interrupted == bool(ns.run_id):
        return cs.usage_error("resume", "give either RUN_ID or --all-interrupted", ns.json)
    if ns.queue is not None:
        if ns.all_interrupted:  # interrupted runs of a queue are its workers' already
            why = "--queue hands one RUN_ID to the workers, not --all-interrupted"
            return cs.usage_error("resume", why, ns.json)
        return requeue(ns)
    from openprogram.cli.progress import LiveProgress

    progress = LiveProgress("resume", ns.store)
    try:
        with cs.stdout_to_stderr(ns.json):
            if ns.all_interrupted:
                outcomes = resume_interrupted(store=ns.store, on_progress=progress, model=ns.model)
            else:
                outcomes = [
                    resume_run(
                        ns.run_id,
                        store=ns.store,
                        policy=ns.policy,
                        rerun_uncertain=ns.rerun_uncertain,
                        on_progress=progress,
                        force_takeover=ns.force_takeover,
                        model=ns.model,
                    )
                ]
    except OpenProgramError as exc:
        progress.close()
        return cs.command_error("resume", exc, ns.json)
    except KeyboardInterrupt as exc:
        progress.close()
        return cs.report_interrupted(exc, ns.json)
    progress.close()
    if not ns.all_interrupted:
        return cs.report_outcome(outcomes[0], ns.json)
    codes = [cs.exit_code(o.status) for o in outcomes]
    if ns.json:
        print(inert_json({"runs": [o.to_json() for o in outcomes]}, default=repr))
    else:
        if not outcomes:
            print("no interrupted runs")
        for o in outcomes:
            cs.report_outcome(o, False)
    if cs.EXIT_FAILED in codes:
        return cs.EXIT_FAILED
    return cs.EXIT_PAUSED if cs.EXIT_PAUSED in codes else cs.EXIT_OK


def requeue(ns: argparse.Namespace) -> int:
    """``resume RUN_ID --queue Q``: the run goes to the workers of ``Q``."""
    from openprogram.durable import cli_support as cs
    from openprogram.durable.runner import requeue_run
    from openprogram.errors import OpenProgramError

    try:
        queue = requeue_run(
            ns.run_id,
            store=ns.store,
            queue=ns.queue,
            policy=ns.policy,
            rerun_uncertain=ns.rerun_uncertain,
            force_takeover=ns.force_takeover,
            model=ns.model,
        )
    except OpenProgramError as exc:
        return cs.command_error("resume", exc, ns.json)
    print(queued_line(ns.run_id, queue, ns.json))
    return cs.EXIT_OK


def queued_line(run_id: str, queue: str, as_json: bool, **extra: str) -> str:
    """What ``resume``/``approve``/``deny --queue`` print once the run is queued."""
    if as_json:
        return inert_json({"run_id": run_id, "status": "queued", **extra, "queue": queue})
    return f"run {run_id} queued on {queue!r}: a worker of that queue resumes it"
