"""Records of the session DAG: :class:`Node` and :class:`Session` (plain data, no I/O)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

NODE_KINDS = ("user", "llm", "code")
NODE_STATUSES = ("running", "completed", "error", "cancelled", "paused")


@dataclass(slots=True)
class Node:
    """One node of a session DAG.

    ``caller_id`` is the nesting edge (the scoped call this node ran inside);
    ``predecessor_id`` is the conversation edge (the branch head it continues).
    ``input``/``output``/``metadata`` are JSON values; timestamps are epoch seconds.
    ``step_key`` is the step key of the step of a resumable run this node records (read
    from the graph; ``None`` for any other node, and for a step's earlier attempt once the
    step was dispatched again).
    """

    id: str
    session_id: str
    seq: int
    kind: str
    name: str
    caller_id: str | None
    predecessor_id: str | None
    input: Any
    output: Any
    status: str
    metadata: dict[str, Any]
    created_at: float
    updated_at: float
    step_key: str | None = None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict of every field (its values as they are: JSON values already;
        no deep copy, which a deeply nested one would exceed the recursion limit in)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(slots=True)
class Session:
    """One session: a named DAG of nodes with a branch head.

    ``head_id`` is the node new nodes continue from by default (``None`` when empty);
    ``updated_at`` is the latest change to the session or any of its nodes;
    ``node_count`` is filled by reads that count nodes.
    """

    id: str
    name: str | None
    agent_id: str | None
    head_id: str | None
    metadata: dict[str, Any] = field(default_factory=dict)
    created_at: float = 0.0
    updated_at: float = 0.0
    node_count: int = 0

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict of every field (its values as they are: JSON values already;
        no deep copy, which a deeply nested one would exceed the recursion limit in)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}
