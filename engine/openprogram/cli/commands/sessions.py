"""``openprogram sessions [--json] [--store DIR]``: list recorded sessions."""

from __future__ import annotations

import argparse
import json
import time

from openprogram.cli.common import add_store_argument, open_existing_store
from openprogram.store import Session

NAME = "sessions"


HELP = "list recorded sessions"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON array")
    add_store_argument(parser)


def execute(args: argparse.Namespace) -> int:
    store = open_existing_store(args)
    sessions: list[Session] = []
    if store is not None:
        with store:
            sessions = store.list_sessions()
    if args.json:
        print(json.dumps([s.to_json() for s in sessions]))
        return 0
    if not sessions:
        print("No sessions.")
        return 0
    rows = [("ID", "NAME", "NODES", "UPDATED")]
    for s in sessions:
        updated = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(s.updated_at))
        rows.append((s.id, s.name or "-", str(s.node_count), updated))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for r in rows:
        print(f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:>{widths[2]}}  {r[3]}")
    return 0
