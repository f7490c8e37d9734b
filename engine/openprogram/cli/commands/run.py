"""``openprogram run FILE.py:ENTRY | MODULE:ENTRY [--args JSON] [--model M] [--policy P]
[--store DIR] [--json]``."""

from __future__ import annotations

import argparse
import os

from openprogram.cli.common import add_store_argument
from openprogram.contract.runs import POLICIES

NAME = "run"
HELP = "run a Program entry as a resumable run"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("entry", metavar="FILE.py:ENTRY|MODULE:ENTRY", help="entry to run")
    parser.add_argument("--args", default=None, metavar="JSON_OBJECT", help="keyword arguments")
    parser.add_argument("--model", default=None, metavar="M", help="model, e.g. openai:gpt-4.1")
    parser.add_argument(
        "--policy",
        choices=POLICIES,
        default=None,
        help="code-change policy of this run (default: [tool.openprogram.execution] "
        "code_change_policy in pyproject.toml, else keep_original)",
    )
    add_store_argument(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def execute(ns: argparse.Namespace) -> int:
    from openprogram.durable import cli_support as cs
    from openprogram.durable.runner import start_run
    from openprogram.errors import OpenProgramError

    try:
        args = cs.parse_args_json(ns.args)
    except cs.BadArguments as exc:
        return cs.usage_error("run", str(exc), ns.json)
    if ns.model:
        os.environ["OPENPROGRAM_MODEL"] = ns.model
    from openprogram.cli.progress import LiveProgress

    progress = LiveProgress("run", ns.store)
    try:
        with cs.stdout_to_stderr(ns.json):
            outcome = start_run(
                ns.entry,
                args,
                store=ns.store,
                model=ns.model,
                policy=ns.policy,
                on_progress=progress,
            )
    except OpenProgramError as exc:  # bad entry/args, determinism refusal, store problems
        progress.close()
        return cs.command_error("run", exc, ns.json)
    except KeyboardInterrupt as exc:
        progress.close()
        return cs.report_interrupted(exc, ns.json)
    progress.close()
    return cs.report_outcome(outcome, ns.json)
