"""``openprogram/runGraph`` and ``openprogram/runNode``: a run's session DAG for the graph view.

``runGraph {runId}`` → the payload of :func:`openprogram.cli.graph.graph_json` (the same
one ``openprogram show ID --format html`` draws); ``runNode {runId, nodeId}`` → one node
with its whole input and output. Read from the store's read-only queries, never by importing user code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from openprogram.cli.graph import graph_json, node_json
from openprogram.durable import queries

from .raw_json import RawJSON
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


def graph_for(ls: OpenProgramLanguageServer, run_id: str) -> RawJSON | None:
    found = find_run(ls, run_id)
    if found is None:
        return None
    fs, run = found
    steps = queries.step_starts(fs.db, run.id)
    return RawJSON(graph_json(fs.db, run.session_id or run.id, run=run_json(run), steps=steps))


def node_for(ls: OpenProgramLanguageServer, run_id: str, node_id: str) -> RawJSON | None:
    found = find_run(ls, run_id)
    if found is None:
        return None
    fs, run = found
    text = node_json(fs.db, run.session_id or run.id, node_id, FULL)
    return None if text is None else RawJSON(text)


def register(server: OpenProgramLanguageServer) -> None:
    @server.feature(RUN_GRAPH)
    def run_graph(ls: OpenProgramLanguageServer, params: Any) -> RawJSON | None:
        watcher(ls)
        return graph_for(ls, _run_id(params))

    @server.feature(RUN_NODE)
    def run_node(ls: OpenProgramLanguageServer, params: Any) -> RawJSON | None:
        node_id = param(params, "nodeId")
        if not isinstance(node_id, str) or not node_id:
            raise ValueError("openprogram/runNode needs {runId: string, nodeId: string}")
        return node_for(ls, _run_id(params), node_id)
