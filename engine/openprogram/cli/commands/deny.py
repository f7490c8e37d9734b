"""``openprogram deny RUN_ID [--no-resume | --queue Q] [--store DIR] [--json]``: deny the
tool call a run awaits; the resumed run's model is told the call was denied."""

from __future__ import annotations

import argparse
from typing import Any

from openprogram.cli.commands.approve import add_arguments, decide

NAME = "deny"
HELP = "deny the tool call a run is awaiting, then resume the run"


def execute(ns: argparse.Namespace) -> int:
    return decide(ns, approve=False)


def register(subparsers: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(NAME, help=HELP, description=HELP)
    add_arguments(parser)
    parser.set_defaults(handler=execute)
    return parser
