"""The run graph: a session DAG as JSON for a graph view, and as one self-contained HTML file.

``graph_payload`` is what both pictures draw — the VS Code webview (through the language
server's ``openprogram/runGraph``) and ``openprogram show ID --format html`` — so they show
the same thing: calls nested by caller, ``llm`` nodes with their model and token usage,
steps with their status. It works on the stored rows (``durable.queries.session_nodes``):
input and output previews are cut from the stored JSON text, never decoded.
``render_html`` inlines the drawing script (``assets/run_graph.js``: cytoscape + dagre,
built from ``vscode-extension/src/graph/``), so the file opens offline in any browser.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from openprogram.durable.queries import NodeRow

PREVIEW = 400
ASSET = "run_graph.js"


def _cut(text: str | None, limit: int) -> str:
    if text is None or text == "null":
        return ""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _usage(meta: dict[str, Any]) -> dict[str, int] | None:
    usage = meta.get("usage")
    if not isinstance(usage, dict):
        return None
    out = {}
    for key in ("input_tokens", "output_tokens"):
        value = usage.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            out[key] = value
    return out or None


def _model(row: NodeRow) -> str | None:
    if row.kind != "llm" or not row.input_json:
        return None
    try:
        request = json.loads(row.input_json)
    except ValueError:
        return None
    if not isinstance(request, dict):
        return None
    model, provider = request.get("model"), request.get("provider")
    if isinstance(model, str) and model:
        return f"{provider}:{model}" if isinstance(provider, str) and provider else model
    return None


def _meta(row: NodeRow) -> dict[str, Any]:
    if not row.metadata_json or row.metadata_json == "{}":
        return {}
    try:
        meta = json.loads(row.metadata_json)
    except ValueError:
        return {}
    return meta if isinstance(meta, dict) else {}


def node_json(row: NodeRow, step: str | None = None, limit: int = PREVIEW) -> dict[str, Any]:
    """One node as the graph draws it (input/output JSON text cut to ``limit`` characters)."""
    meta = _meta(row)
    duration = meta.get("duration_s")
    error = meta.get("error_type")
    return {
        "id": row.id,
        "seq": row.seq,
        "kind": row.kind,
        "name": row.name,
        "status": row.status,
        "caller": row.caller_id,
        "pred": row.predecessor_id,
        "durationMs": duration * 1000.0 if isinstance(duration, (int, float)) else None,
        "model": _model(row),
        "usage": _usage(meta),
        "step": step,
        "error": error if isinstance(error, str) else None,
        "input": _cut(row.input_json, limit),
        "output": _cut(row.output_json, limit),
    }


def step_labels(nodes: list[NodeRow], steps: list[tuple[str, int, float]]) -> dict[str, str]:
    """Node id → ``name #occurrence`` for the nodes that ran a step.

    ``steps`` are ``(name, occurrence, started_at)``; each step is matched to the first
    node of the same name created at or after its start (steps and nodes are both in
    call order).
    """
    by_name: dict[str, list[NodeRow]] = {}
    for n in nodes:
        if n.kind == "code":
            by_name.setdefault(n.name, []).append(n)
    cursor = dict.fromkeys(by_name, 0)
    out: dict[str, str] = {}
    for name, occurrence, started in sorted(steps, key=lambda s: s[2]):
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


def graph_payload(
    session_id: str,
    nodes: list[NodeRow],
    *,
    run: dict[str, Any] | None = None,
    steps: list[tuple[str, int, float]] | None = None,
    limit: int = PREVIEW,
) -> dict[str, Any]:
    """The JSON the graph view draws."""
    labels = step_labels(nodes, steps or [])
    drawn = [node_json(n, labels.get(n.id), limit) for n in nodes]
    usage = {"input_tokens": 0, "output_tokens": 0}
    calls = 0
    for n in drawn:
        if n["kind"] == "llm":
            calls += 1
            for key, value in (n["usage"] or {}).items():
                usage[key] += value
    return {
        "title": f"run {run['id']}" if run else f"session {session_id}",
        "session": session_id,
        "run": run,
        "totals": {"nodes": len(nodes), "llmCalls": calls, **usage},
        "nodes": drawn,
    }


def render_html(payload: dict[str, Any]) -> str:
    """One HTML file that draws ``payload`` with the bundled graph script (no network)."""
    script = resources.files("openprogram.cli.assets").joinpath(ASSET).read_text("utf-8")
    script = script.replace("</script", "<\\/script")
    data = json.dumps(payload, ensure_ascii=False).replace("<", "\\u003c")
    title = str(payload.get("title", "run graph")).replace("&", "&amp;").replace("<", "&lt;")
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
