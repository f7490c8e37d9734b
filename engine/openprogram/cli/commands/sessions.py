"""``openprogram sessions [--json] [--store DIR]``: list recorded sessions."""

from __future__ import annotations

import argparse
import time

from openprogram.cli.common import add_store_argument, no_store_note, open_existing_store
from openprogram.cli.table import format_table, terminal_width
from openprogram.store import Session
from openprogram.terminal_text import inert_json

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
        print(inert_json([s.to_json() for s in sessions]))
        return 0
    if not sessions:
        print(f"No sessions{no_store_note(args.store)}.")
        return 0
    rows = [("ID", "NAME", "NODES", "UPDATED")]
    for s in sessions:
        updated = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(s.updated_at))
        rows.append((s.id, s.name or "-", str(s.node_count), updated))
    for line in format_table(rows[0], rows[1:], right=(2,), flex=1, width=terminal_width()):
        print(line)
    return 0
