"""``openprogram/runGraph`` and ``openprogram/runNode``: a run's session DAG for the graph view.

``runGraph {runId}`` → the payload of :func:`openprogram.cli.graph.graph_json` (the same
one ``openprogram show ID --format html`` draws); ``runNode {runId, nodeId}`` → one node
with its whole input and output. Read from the store's read-only queries, never by importing user code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from openprogram.cli.graph import graph_json, node_json
from openprogram.durable import queries
from openprogram.durable.queries import RunRow

from .raw_json import RawJSON
from .runs_view import FolderStore, param, read_run, run_json, watcher

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


async def graph_for(ls: OpenProgramLanguageServer, run_id: str) -> RawJSON | None:
    def read(fs: FolderStore, run: RunRow) -> RawJSON | None:
        steps = queries.step_starts(fs.db, run.id)
        info = run_json(run, queries.stopped_at(fs.db, [run]).get(run.id))
        return RawJSON(graph_json(fs.db, run.session_id or run.id, run=info, steps=steps))

    return await read_run(ls, run_id, read, None)


async def node_for(ls: OpenProgramLanguageServer, run_id: str, node_id: str) -> RawJSON | None:
    def read(fs: FolderStore, run: RunRow) -> RawJSON | None:
        text = node_json(fs.db, run.session_id or run.id, node_id, FULL, run_status=run.status)
        return None if text is None else RawJSON(text)

    return await read_run(ls, run_id, read, None)


def register(server: OpenProgramLanguageServer) -> None:
    @server.feature(RUN_GRAPH)
    async def run_graph(ls: OpenProgramLanguageServer, params: Any) -> RawJSON | None:
        watcher(ls)
        return await graph_for(ls, _run_id(params))

    @server.feature(RUN_NODE)
    async def run_node(ls: OpenProgramLanguageServer, params: Any) -> RawJSON | None:
        node_id = param(params, "nodeId")
        if not isinstance(node_id, str) or not node_id:
            raise ValueError("openprogram/runNode needs {runId: string, nodeId: string}")
        return await node_for(ls, _run_id(params), node_id)
