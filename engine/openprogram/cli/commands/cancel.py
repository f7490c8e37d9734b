"""``openprogram cancel RUN_ID [--store DIR]``: cancel a run (a running one stops at its
next step boundary)."""

from __future__ import annotations

import argparse
from typing import Any

NAME = "cancel"
HELP = "cancel a run"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_id", metavar="RUN_ID", help="run to cancel")
    parser.add_argument("--store", default=None, metavar="DIR", help="store root directory")


def execute(ns: argparse.Namespace) -> int:
    from openprogram.durable import cli_support as cs
    from openprogram.durable.runner import cancel_run
    from openprogram.errors import OpenProgramError

    try:
        cancel_run(ns.run_id, store=ns.store)
    except OpenProgramError as exc:
        return cs.command_error("cancel", exc, False)
    print(f"run {ns.run_id} cancelled")
    return 0


def register(subparsers: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(NAME, help=HELP, description=HELP)
    add_arguments(parser)
    parser.set_defaults(handler=execute)
    return parser
