"""``openprogram show ID [--format tree|json|mermaid] [--store DIR]``: one session's DAG.

A durable run's id is also its session's id, so run ids work too.
"""

from __future__ import annotations

import argparse
import json

from openprogram.cli.common import CliError, add_store_argument, open_existing_store
from openprogram.cli.render import render_mermaid, render_tree
from openprogram.store import resolve_root

NAME = "show"


HELP = "show a session's node tree"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", metavar="SESSION_OR_RUN_ID", help="session id (or run id)")
    parser.add_argument(
        "--format",
        choices=("tree", "json", "mermaid"),
        default="tree",
        help="tree (default), json ({session, nodes}) or mermaid (graph TD)",
    )
    add_store_argument(parser)


def execute(args: argparse.Namespace) -> int:
    store = open_existing_store(args)
    if store is None:
        raise CliError(
            f"no session {args.id!r}: there is no store at {resolve_root(args.store)}; "
            "pass --store DIR or set OPENPROGRAM_STORE"
        )
    with store:
        session = store.get_session(args.id)
        if session is None:
            raise CliError(
                f"no session {args.id!r} in {store.location}; "
                "list sessions with `openprogram sessions`"
            )
        nodes = store.list_nodes(session.id)
    if args.format == "json":
        print(json.dumps({"session": session.to_json(), "nodes": [n.to_json() for n in nodes]}))
    elif args.format == "mermaid":
        print(render_mermaid(session, nodes))
    else:
        print(render_tree(session, nodes))
    return 0
