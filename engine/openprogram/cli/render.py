"""Text renderings of a session DAG: an indented call tree and a Mermaid graph."""

from __future__ import annotations

import json
from typing import Any

from openprogram.cli.table import format_table, unicode_ok
from openprogram.history import call_order
from openprogram.store import Node, Session
from openprogram.terminal_text import inert, inert_line

SHORT_OUTPUT = 60


def format_duration(seconds: Any) -> str:
    """``1.20s`` / ``35.0ms`` (empty when unknown)."""
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool):
        return ""
    return f"{seconds:.2f}s" if seconds >= 1 else f"{seconds * 1000:.1f}ms"


def short_output(node: Node, limit: int = SHORT_OUTPUT) -> str:
    """A one-line, truncated view of a node's output ("" when there is none), its control
    characters escaped (:func:`~openprogram.cli.table.inert`)."""
    out = node.output
    if out is None:
        return ""
    if isinstance(out, dict) and isinstance(out.get("text"), str) and node.kind == "llm":
        text = out["text"] or ("(tool calls)" if out.get("tool_calls") else "")
    elif isinstance(out, dict) and set(out) == {"error"}:
        text = f"error: {out['error']}"
    elif isinstance(out, str):
        text = json.dumps(out, ensure_ascii=False)
    else:
        text = json.dumps(out, ensure_ascii=False, default=str)
    text = inert(" ".join(text.split()))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def node_line(node: Node) -> str:
    """``kind name [status] duration -> output``."""
    parts = [node.kind, node.name, f"[{node.status}]"]
    duration = format_duration(node.metadata.get("duration_s"))
    if duration:
        parts.append(duration)
    line = " ".join(parts)
    out = short_output(node)
    return inert_line(f"{line} -> {out}" if out else line)


def _children(nodes: list[Node]) -> tuple[list[Node], dict[str, list[Node]]]:
    ids = {n.id for n in nodes}
    roots: list[Node] = []
    kids: dict[str, list[Node]] = {}
    for n in call_order(nodes):  # so every list is in call order (parallel branches by index)
        if n.caller_id is not None and n.caller_id in ids and n.caller_id != n.id:
            kids.setdefault(n.caller_id, []).append(n)
        else:
            roots.append(n)
    return roots, kids


def render_tree(
    session: Session, nodes: list[Node], width: int | None = None, *, run_state: str | None = None
) -> str:
    """The session header and its nodes nested by ``caller_id`` (each level in call order:
    ``seq``, with the branches of a ``parallel`` call by index, see
    :func:`openprogram.history.call_order`).

    With a terminal ``width`` the nodes are an aligned table (NODE, STATUS, DURATION,
    OUTPUT) fitted to it; without, one ``kind name [status] duration -> output`` line each.
    ``run_state`` (the session is a run's) ends the header: ``; run paused (requested)``.
    """
    tee, last, bar, gap = (
        ("├── ", "└── ", "│   ", "    ")
        if unicode_ok()
        else (
            "|-- ",
            "`-- ",
            "|   ",
            "    ",
        )
    )
    # the id's last 8 hex digits: a node id starts with its creation time (its first 8
    # digits are the same for every node created in the same minute) and ends in random bits
    head = session.head_id[-8:] if session.head_id else "-"
    name = f" ({session.name})" if session.name and session.name != session.id else ""
    run = f"; run {run_state}" if run_state else ""
    count = f"{len(nodes)} node" + ("" if len(nodes) == 1 else "s")
    lines = [inert_line(f"session {session.id}{name}: {count}, head {head}{run}")]
    rows: list[tuple[str, str, str, str]] = []
    roots, kids = _children(nodes)
    # Iterative depth-first walk: (node, prefix for its line, prefix for its children).
    stack: list[tuple[Node, str, str]] = [(n, "", "") for n in reversed(roots)]
    seen: set[str] = set()
    while stack:
        node, prefix, child_prefix = stack.pop()
        if node.id in seen:  # defensive: a caller cycle in hand-written data
            continue
        seen.add(node.id)
        if width is None:
            lines.append(prefix + node_line(node))
        else:
            duration = format_duration(node.metadata.get("duration_s"))
            rows.append(
                (f"{prefix}{node.kind} {node.name}", node.status, duration, short_output(node))
            )
        children = kids.get(node.id, [])
        for i in range(len(children) - 1, -1, -1):
            is_last = i == len(children) - 1
            stack.append(
                (
                    children[i],
                    child_prefix + (last if is_last else tee),
                    child_prefix + (gap if is_last else bar),
                )
            )
    if rows:
        header = ("NODE", "STATUS", "DURATION", "OUTPUT")
        lines += format_table(header, rows, right=(2,), flex=3, width=width)
    if not nodes:
        lines.append("(no nodes)")
    return "\n".join(lines)


def _mermaid_text(text: str) -> str:
    return (
        inert(text)
        .replace("&", "#amp;")
        .replace('"', "#quot;")
        .replace("<", "#lt;")
        .replace(">", "#gt;")
        .replace("\n", " ")
    )


def render_mermaid(session: Session, nodes: list[Node]) -> str:
    """A Mermaid ``graph TD``: solid arrows are calls (``caller_id``), dotted arrows are
    conversation order (``predecessor_id``)."""
    key = {n.id: f"n{n.seq}" for n in nodes}
    lines = ["graph TD", f"  %% session {_mermaid_text(session.id)}"]
    for n in nodes:
        status = n.status
        duration = format_duration(n.metadata.get("duration_s"))
        if duration:
            status += f" {duration}"
        label = f"{_mermaid_text(f'{n.kind} {n.name}')}<br/>{_mermaid_text(status)}"
        css = n.kind if n.kind in ("code", "llm", "user") else "other"
        lines.append(f'  {key[n.id]}["{label}"]:::{css}')
    for n in nodes:
        if n.caller_id in key and n.caller_id != n.id:
            lines.append(f"  {key[n.caller_id]} --> {key[n.id]}")
    for n in nodes:
        if n.predecessor_id in key and n.predecessor_id != n.id:
            lines.append(f"  {key[n.predecessor_id]} -.-> {key[n.id]}")
    lines += [
        "  classDef code fill:#eef3ff,stroke:#4a6fd0",
        "  classDef llm fill:#fff4e0,stroke:#d08a2a",
        "  classDef user fill:#eaf7ea,stroke:#3a9a3a",
        "  classDef other fill:#f4f4f4,stroke:#888",
    ]
    return "\n".join(lines)
