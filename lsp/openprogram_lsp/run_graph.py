"""``openprogram/runGraph`` and ``openprogram/runNode``: a run's session DAG for the graph view.

``runGraph {runId}`` → the payload of :func:`openprogram.cli.graph.graph_payload` (the same
one ``openprogram show ID --format html`` draws); ``runNode {runId, nodeId}`` → one node
with its whole input and output. Read from the store's read-only queries, never by importing user code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from openprogram.cli.graph import graph_payload, node_json
from openprogram.durable import queries

from .runs_view import Encoded, find_run, param, run_json, watcher

if TYPE_CHECKING:
    from .server import OpenProgramLanguageServer

RUN_GRAPH = "openprogram/runGraph"
RUN_NODE = "openprogram/runNode"
FULL = 200_000


def _run_id(params: Any) -> str:
    run_id = param(params, "runId")
    if not isinstance(run_id, str) or not run_id:
        raise ValueError("expected {runId: string}")
    return run_id


def graph_for(ls: OpenProgramLanguageServer, run_id: str) -> dict[str, Any] | None:
    found = find_run(ls, run_id)
    if found is None:
        return None
    fs, run = found
    session_id = run.session_id or run.id
    nodes = queries.session_nodes(fs.db, session_id)
    if not nodes:
        return None
    steps = [(s.name, s.occurrence, s.started_at) for s in queries.run_steps(fs.db, run.id)]
    return Encoded(graph_payload(session_id, nodes, run=run_json(run), steps=steps))


def node_for(ls: OpenProgramLanguageServer, run_id: str, node_id: str) -> dict[str, Any] | None:
    found = find_run(ls, run_id)
    if found is None:
        return None
    fs, run = found
    row = next(
        (n for n in queries.session_nodes(fs.db, run.session_id or run.id) if n.id == node_id), None
    )
    return None if row is None else node_json(row, None, FULL)


def register(server: OpenProgramLanguageServer) -> None:
    @server.feature(RUN_GRAPH)
    def run_graph(ls: OpenProgramLanguageServer, params: Any) -> dict[str, Any] | None:
        watcher(ls)
        return graph_for(ls, _run_id(params))

    @server.feature(RUN_NODE)
    def run_node(ls: OpenProgramLanguageServer, params: Any) -> dict[str, Any] | None:
        node_id = param(params, "nodeId")
        if not isinstance(node_id, str) or not node_id:
            raise ValueError("openprogram/runNode needs {runId: string, nodeId: string}")
        return node_for(ls, _run_id(params), node_id)
