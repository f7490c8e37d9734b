"""``openprogram deny RUN_ID [--no-resume | --queue Q] [--store DIR] [--json]``: deny the
tool call a run awaits; the resumed run's model is told the call was denied."""

from __future__ import annotations

import argparse

# the same arguments as approve
from openprogram.cli.commands.approve import add_arguments as add_arguments
from openprogram.cli.commands.approve import decide

NAME = "deny"
HELP = "deny the tool call a run is awaiting, then resume the run"


def execute(ns: argparse.Namespace) -> int:
    return decide(ns, approve=False)
