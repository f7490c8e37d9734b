"""``openprogram/runGraph`` and ``openprogram/runNode``: a run's session DAG for the graph view.

``runGraph {runId}`` → the payload of :func:`openprogram.cli.graph.graph_payload` (the same
one ``openprogram show ID --format html`` draws); ``runNode {runId, nodeId}`` → one node
with its whole input and output. Read from the store (read-only queries and the session
store), never by importing user code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from openprogram.cli.graph import graph_payload, node_json
from openprogram.durable import queries
from openprogram.store import SessionStore

from .runs_view import find_run, param, run_json, watcher

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
    with SessionStore(fs.store, create=False) as store:
        session = store.get_session(run.session_id or run.id)
        nodes = store.list_nodes(session.id) if session is not None else []
    if session is None:
        return None
    steps = [(s.name, s.occurrence, s.started_at) for s in queries.run_steps(fs.db, run.id)]
    return graph_payload(session, nodes, run=run_json(run), steps=steps)


def node_for(ls: OpenProgramLanguageServer, run_id: str, node_id: str) -> dict[str, Any] | None:
    found = find_run(ls, run_id)
    if found is None:
        return None
    fs, run = found
    with SessionStore(fs.store, create=False) as store:
        node = store.get_node(node_id)
    if node is None or node.session_id != (run.session_id or run.id):
        return None
    return node_json(node, None, FULL)


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
