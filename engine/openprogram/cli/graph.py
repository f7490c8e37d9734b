"""The run graph: a session DAG as JSON for a graph view, and as one self-contained HTML file.

``graph_payload`` is what both pictures draw — the VS Code webview (through the language
server's ``openprogram/runGraph``) and ``openprogram show ID --format html`` — so they show
the same thing: calls nested by caller, ``llm`` nodes with their model and token usage,
steps with their status. ``render_html`` inlines the drawing script
(``assets/run_graph.js``: cytoscape + dagre, built from ``vscode-extension/src/graph/``), so
the file opens offline in any browser.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from openprogram.store import Node, Session

PREVIEW = 400
ASSET = "run_graph.js"


def _preview(value: Any, limit: int = PREVIEW) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
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


def _model(node: Node) -> str | None:
    if node.kind != "llm" or not isinstance(node.input, dict):
        return None
    model, provider = node.input.get("model"), node.input.get("provider")
    if isinstance(model, str) and model:
        return f"{provider}:{model}" if isinstance(provider, str) and provider else model
    return None


def node_json(node: Node, step: str | None = None, limit: int = PREVIEW) -> dict[str, Any]:
    """One node as the graph draws it (input/output cut to ``limit`` characters)."""
    duration = node.metadata.get("duration_s")
    error = node.metadata.get("error_type")
    return {
        "id": node.id,
        "seq": node.seq,
        "kind": node.kind,
        "name": node.name,
        "status": node.status,
        "caller": node.caller_id,
        "pred": node.predecessor_id,
        "durationMs": duration * 1000.0 if isinstance(duration, (int, float)) else None,
        "model": _model(node),
        "usage": _usage(node.metadata),
        "step": step,
        "error": error if isinstance(error, str) else None,
        "input": _preview(node.input, limit),
        "output": _preview(node.output, limit),
    }


def step_labels(nodes: list[Node], steps: list[tuple[str, int, float]]) -> dict[str, str]:
    """Node id → ``name #occurrence`` for the nodes that ran a step.

    ``steps`` are ``(name, occurrence, started_at)``; each step is matched to the first
    node of the same name created at or after its start (steps and nodes are both in
    call order).
    """
    by_name: dict[str, list[Node]] = {}
    for n in nodes:
        if n.kind == "code":
            by_name.setdefault(n.name, []).append(n)
    out: dict[str, str] = {}
    for name, occurrence, started in sorted(steps, key=lambda s: s[2]):
        queue = by_name.get(name)
        while queue:
            n = queue.pop(0)
            if n.created_at >= started - 1e-3:
                out[n.id] = f"{name} #{occurrence}"
                break
    return out


def graph_payload(
    session: Session,
    nodes: list[Node],
    *,
    run: dict[str, Any] | None = None,
    steps: list[tuple[str, int, float]] | None = None,
    limit: int = PREVIEW,
) -> dict[str, Any]:
    """The JSON the graph view draws."""
    labels = step_labels(nodes, steps or [])
    usage = {"input_tokens": 0, "output_tokens": 0}
    calls = 0
    for n in nodes:
        if n.kind == "llm":
            calls += 1
            for key, value in (_usage(n.metadata) or {}).items():
                usage[key] += value
    return {
        "title": f"run {run['id']}" if run else f"session {session.id}",
        "session": session.id,
        "run": run,
        "totals": {"nodes": len(nodes), "llmCalls": calls, **usage},
        "nodes": [node_json(n, labels.get(n.id), limit) for n in nodes],
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
