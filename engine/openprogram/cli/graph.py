"""The run graph: a session DAG as JSON for a graph view, and as one self-contained HTML file.

``graph_json`` is what both pictures draw — the VS Code webview (through the language
server's ``openprogram/runGraph``) and ``openprogram show ID --format html`` — so they show
the same thing: calls nested by caller, ``llm`` nodes with their model and token usage,
steps with their status. It works on the stored rows (``durable.queries.graph_node_objects``):
input and output previews are cut from the stored JSON text by SQLite, never decoded.
``render_html`` inlines the drawing script (``assets/run_graph.js``: cytoscape + dagre,
built from ``vscode-extension/src/graph/``), so the file opens offline in any browser.
"""

from __future__ import annotations

import json
import os
from importlib import resources
from operator import itemgetter
from typing import Any

from openprogram.durable.queries import GraphNodeRow, graph_node_objects

PREVIEW = 400
ASSET = "run_graph.js"
_encode = json.JSONEncoder().encode


def step_labels(nodes: list[GraphNodeRow], steps: list[tuple[str, int, float]]) -> dict[str, str]:
    """Node id → ``name #occurrence`` for the nodes that ran a step.

    ``steps`` are ``(name, occurrence, started_at)``; each step is matched to the first
    node of the same name created at or after its start (steps and nodes are both in
    call order).
    """
    by_name: dict[str, list[GraphNodeRow]] = {}
    for n in nodes:
        if n.kind == "code":
            by_name.setdefault(n.name, []).append(n)
    cursor = dict.fromkeys(by_name, 0)
    out: dict[str, str] = {}
    for name, occurrence, started in sorted(steps, key=itemgetter(2)):
        queue = by_name.get(name)
        i = cursor.get(name, 0)
        while queue is not None and i < len(queue):
            n = queue[i]
            i += 1
            if n.created_at >= started - 1e-3:
                out[n.id] = f"{name} #{occurrence}"
                break
        cursor[name] = i
    return out


def with_step(node: GraphNodeRow, label: str | None) -> str:
    """The node's JSON object text with its ``step`` label (or null) added."""
    return f'{node.json[:-1]},"step":{json.dumps(label) if label else "null"}}}'


def node_json(
    db: str | os.PathLike[str],
    session_id: str,
    node_id: str,
    limit: int,
    *,
    run_status: str | None = None,
) -> str | None:
    """One node's JSON object (input/output cut to ``limit``; its status as the graph shows
    it, of a run in ``run_status``), None if there is no such node."""
    rows = graph_node_objects(db, session_id, limit=limit, node_id=node_id, run_status=run_status)
    return with_step(rows[0], None) if rows else None


def graph_json(
    db: str | os.PathLike[str],
    session_id: str,
    *,
    run: dict[str, Any] | None = None,
    steps: list[tuple[str, int, float]] | None = None,
    limit: int = PREVIEW,
) -> str:
    """The JSON text the graph view draws:
    ``{title, session, run, totals: {nodes, llmCalls, input_tokens, output_tokens}, nodes}``.
    Node objects are written by SQLite and joined here, never decoded; a node's status is
    the one ``show`` gives it (:func:`~openprogram.store.run_views.node_status` of the
    ``run``'s status: a call a pause unwound, of a run cancelled since, is ``cancelled``)."""
    run_status = run.get("status") if run else None
    nodes = graph_node_objects(db, session_id, limit=limit, run_status=run_status)
    labels = step_labels(nodes, steps or [])
    calls = tokens_in = tokens_out = 0
    for n in nodes:
        if n.kind == "llm":
            calls += 1
            tokens_in += n.tokens_in or 0
            tokens_out += n.tokens_out or 0
    head = json.dumps(
        {
            "title": f"run {run['id']}" if run else f"session {session_id}",
            "session": session_id,
            "run": run,
            "totals": {
                "nodes": len(nodes),
                "llmCalls": calls,
                "input_tokens": tokens_in,
                "output_tokens": tokens_out,
            },
        }
    )
    body = ",".join(with_step(n, labels.get(n.id)) for n in nodes)
    return f'{head[:-1]},"nodes":[{body}]}}'


def render_html(payload: str, title: str) -> str:
    """One HTML file that draws ``payload`` (a :func:`graph_json` text) with the bundled
    graph script (no network)."""
    script = resources.files("openprogram.cli.assets").joinpath(ASSET).read_text("utf-8")
    script = script.replace("</script", "<\\/script")
    data = payload.replace("<", "\\u003c")
    title = title.replace("&", "&amp;").replace("<", "&lt;")
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>OpenProgram {title}</title>
</head>
<body>
<div id="openprogram-graph"></div>
<script id="openprogram-graph-data" type="application/json">{data}</script>
<script>{script}</script>
</body>
</html>
"""
