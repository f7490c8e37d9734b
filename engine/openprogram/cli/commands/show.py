"""``openprogram show ID [--format tree|json|mermaid|html] [--store DIR]``: one session's DAG.

A durable run's id is also its session's id, so run ids work too, and so does a unique
prefix of a run id (at least 4 characters, as for every RUN_ID): the tree's first line
then says the run's state as ``openprogram runs`` does (``run paused (uncertain) at step
'charge'``, ``run interrupted at step 'charge'`` when its process is gone). ``html`` writes one
self-contained page (the run graph the VS Code extension draws) to stdout, or to
``--output FILE``.
"""

from __future__ import annotations

import argparse
import dataclasses

from openprogram.cli.common import CliError, add_store_argument, cannot_write, open_existing_store
from openprogram.cli.render import render_mermaid, render_tree
from openprogram.cli.table import terminal_width
from openprogram.contract.runs import RunStatus, paused_at, state_text
from openprogram.store import Session, resolve_root, store_url
from openprogram.store.run_views import node_status
from openprogram.terminal_text import inert_json

NAME = "show"


HELP = "show a session's node tree"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", metavar="SESSION_OR_RUN_ID", help="session id (or run id)")
    parser.add_argument(
        "--format",
        choices=("tree", "json", "mermaid", "html"),
        default="tree",
        help="tree (default), json ({session, nodes}), mermaid (graph TD) or html (run graph page)",
    )
    parser.add_argument(
        "--output", "-o", metavar="FILE", default=None, help="write to FILE instead of stdout"
    )
    add_store_argument(parser)


def execute(args: argparse.Namespace) -> int:
    store = open_existing_store(args)
    if store is None:
        from openprogram.store.postgres import redacted_location

        # no store directory, or an empty database (named without its password)
        where = redacted_location(store_url(args.store) or resolve_root(args.store))
        raise CliError(
            f"no session {args.id!r}: there is no store at {where}; "
            "pass --store DIR|URL or set OPENPROGRAM_STORE"
        )
    from openprogram.durable import queries  # not loaded by every command's parser

    with store:
        session = store.get_session(args.id)
        if session is None:  # a run's session: its id's unique prefix names it too
            location = store_url(args.store) or store.location
            session = store.get_session(queries.resolve_run_id(location, args.id))
        if session is None:
            raise CliError(
                f"no session {args.id!r} in {store.location}; "
                "list sessions with `openprogram sessions`"
            )
        # the html graph reads the stored JSON text itself (never decodes the nodes)
        nodes = store.list_nodes(session.id) if args.format != "html" else []
    location = store_url(args.store) or store.location
    run = queries.get_run(location, session.id) if args.format != "html" else None
    if run is not None:  # a call a pause unwound, of a run cancelled since: cancelled
        nodes = [dataclasses.replace(n, status=node_status(n.status, run.status)) for n in nodes]
    if args.format == "json":
        text = _json_text({"session": session.to_json(), "nodes": [n.to_json() for n in nodes]})
    elif args.format == "mermaid":
        text = render_mermaid(session, nodes)
    elif args.format == "html":
        from openprogram.cli.graph import render_html

        text = render_html(*_graph(store_url(args.store) or store.location, session))
    else:
        state = None
        if run is not None:  # the run's state as `openprogram runs` says it, and its step
            interrupted = run.interrupted  # its process is gone: the step it stopped in
            at = queries.stopped_at(location, [run]).get(run.id)
            where = paused_at(*at) if at is not None else ""
            state = state_text(
                run.status,
                run.pause_reason,
                interrupted=interrupted,
                cancel_requested=run.cancel_requested,
                pause_requested=run.pause_requested,
            ) + (where if run.status == RunStatus.PAUSED or interrupted else "")
        width = terminal_width() if not args.output else None
        text = render_tree(session, nodes, width, run_state=state)
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as fh:
                fh.write(text + "\n")
        except OSError as exc:
            raise cannot_write(args.output, exc) from None
    else:
        print(text)
    return 0


def _graph(location: str, session: Session) -> tuple[str, str]:
    """The graph of the session (with its run's status and steps when it is a run), and a title."""
    from openprogram.cli.graph import graph_json
    from openprogram.durable import queries

    run = queries.get_run(location, session.id)
    if run is None:
        return graph_json(location, session.id), f"session {session.id}"
    steps = queries.step_starts(location, run.id)
    info = {"id": run.id, "status": run.status, "entry": run.entry}
    return graph_json(location, session.id, run=info, steps=steps), f"run {run.id}"


def _json_text(payload: dict[str, object]) -> str:
    """Valid JSON always: a value no JSON holds (NaN or Infinity a store written by an
    older version kept) is printed as :func:`~openprogram.scope.to_json_value` writes it."""
    try:
        return inert_json(payload, allow_nan=False)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than it could be
        from openprogram.scope import to_json_value

        return inert_json(to_json_value(payload))
