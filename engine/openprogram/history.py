"""Rendering the session DAG into a prompt (SPEC §2.6, seed "记录到 DAG").

Which nodes a model request inside a call sees, and in which order:

1. **Branch**: the nodes on the predecessor chain of the writer's head, in **call order**:
   the order sequential code wrote them (``seq``), except that the branches of one
   ``parallel`` call follow each other in branch index order, each branch's nodes
   contiguous, whatever order their threads committed them in (the nodes' ``forks``,
   :mod:`openprogram.branches`). A request made inside a parallel branch does not see the
   nodes of the branches running beside it, only those of its own branch, of the code
   that started the ``parallel`` and of calls that had finished before. So the prompt text
   never depends on thread timing, and ``replay:`` matches it.
2. **expose** (what *others* see of a call; a call always sees its own internals):
   ``full`` shows docstring, ``name(args) -> output``, LLM exchanges and nested calls;
   ``io`` shows only ``name -> output`` and hides everything inside; ``llm`` hides the
   call's own line and its nested code calls but shows the LLM exchanges inside it;
   ``hidden`` calls were never written.
3. **render_range** of the innermost call: ``callers`` keeps the last N rendered nodes
   before the call started (``None`` all, ``0`` none); ``subcalls`` the last M written
   inside it (``-1`` all, ``0`` none), both counted in call order (``seq`` order for
   sequential code). The call's own node is never rendered.
4. **history_filter** of the Context: ``"dag"`` keeps all, ``"current_call"`` keeps the
   current call's descendants, ``False`` renders nothing, a callable ``(node, context)``
   keeps the nodes it returns true for.

Each node renders as one or two lines, indented two spaces per rendered ancestor:
``# docstring`` + ``name(arg=<json>, ...) -> <json output>`` (full), ``name -> <json
output>`` (io), ``user: <prompt>`` (first request of an exchange) and ``assistant: <reply>``
or ``assistant -> tool(<json args>)`` for an ``llm`` node.
"""

from __future__ import annotations

import bisect
import copy
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

__all__ = [
    "AFTER_REPLAY",
    "CONTEXT_TAG",
    "HISTORY_TAG",
    "RESUMES",
    "STEP_KEY",
    "HistoryFilterError",
    "branch_nodes",
    "call_order",
    "fold_attempts",
    "render_history",
    "step_identity",
    "user_text",
]

HISTORY_TAG = "history"
CONTEXT_TAG = "context"
#: node metadata of a resumed run's entry node (:mod:`openprogram.durable.runner`): it
#: resumes the session's top-level node before it, the previous execution of the run.
#: Prompts show a resumed run as its first execution would have shown it
#: (:func:`fold_attempts`); the session keeps every attempt.
RESUMES = "resumes"
#: node metadata of a ``workflow`` call or a ``parallel`` branch in a resumable run: its
#: step key (:mod:`openprogram.durable.steps`); a step's node carries its key itself.
STEP_KEY = "step_key"
#: node metadata of the first node written in a resumed execution (in one line: a parallel
#: branch marks its own) after a completed call replayed (returned its saved result
#: without writing a node): the step key of the last such call
#: (:func:`openprogram.scope.note_replay`); the nodes after it carry none. Prompts place
#: the earlier execution's node of a replayed call just before it (:func:`fold_attempts`).
AFTER_REPLAY = "after_replay"


class HistoryFilterError(Exception):
    """A callable ``history_filter`` raised while selecting nodes."""


class NodeLike(Protocol):
    id: str
    seq: int
    kind: str
    name: str
    caller_id: str | None
    predecessor_id: str | None
    input: Any
    output: Any
    status: str
    metadata: dict[str, Any]


N = TypeVar("N", bound=NodeLike)
Forks = tuple[tuple[str, int], ...]  # as openprogram.branches.Forks


def branch_nodes(nodes: Iterable[N], head_id: str | None) -> list[N]:
    """Nodes on the predecessor chain ending at ``head_id``, sorted by ``seq``."""
    by_id = {n.id: n for n in nodes}
    out: list[N] = []
    seen: set[str] = set()
    cur = by_id.get(head_id) if head_id else None
    while cur is not None and cur.id not in seen:
        seen.add(cur.id)
        out.append(cur)
        cur = by_id.get(cur.predecessor_id) if cur.predecessor_id else None
    out.sort(key=lambda n: n.seq)
    return out


def _forks(node: NodeLike) -> Forks:
    """The node's ``metadata.forks`` (``()`` for sequential code or a malformed value)."""
    value = (node.metadata or {}).get("forks")
    if not isinstance(value, list):
        return ()
    out: list[tuple[str, int]] = []
    for item in value:
        if not (isinstance(item, list) and len(item) == 2):
            return ()
        fork, index = item
        if not isinstance(fork, str) or index.__class__ is not int:
            return ()
        out.append((fork, index))
    return tuple(out)


def step_identity(node: NodeLike) -> str | None:
    """The step key of the call ``node`` records in a resumable run: a step's (its node's
    ``step_key``, :class:`openprogram.store.Node`) or a ``workflow`` / ``parallel``
    branch call's (its metadata :data:`STEP_KEY`); ``None`` for any other node."""
    key = getattr(node, "step_key", None)
    if key is None:
        key = (node.metadata or {}).get(STEP_KEY)
    return key if isinstance(key, str) else None


def fold_attempts(nodes: Iterable[N]) -> list[N]:
    """``nodes`` with a resumed run's executions folded into one, as its first execution
    would have shown them; the session keeps every attempt.

    A call of an earlier execution that ran again is **aliased** to its re-execution: the
    entry node before one that ``resumes``, and a ``workflow`` / ``parallel`` branch call
    whose step key (metadata :data:`STEP_KEY`) a later call of the same run carries. (A
    step's earlier attempt never completed: it is left out as below.) An aliased node is
    left out; its re-execution takes its callees that **replay** — completed steps and
    completed workflow / parallel branch calls, which return their saved result without
    writing a node — and its forks (a resumed entry also its ``seq``: the run's first
    place). Its other callees (failed or cut short, and completed calls that are not
    steps: they ran again) are left out with everything under them, so no failed attempt,
    no error text and no call twice reaches a prompt. A replayed callee goes where the
    latest execution replayed it, among the calls that ran again
    (:func:`_place_replays`), so the order is the first execution's."""
    listed = sorted(nodes, key=lambda n: n.seq)
    alias: dict[str, str] = {}  # an earlier execution's call -> its re-execution
    run: dict[str, str] = {}  # node -> the first entry node of its run's executions
    previous: N | None = None
    for n in listed:
        if n.caller_id is None:
            if previous is not None and (n.metadata or {}).get(RESUMES):
                alias[previous.id] = n.id
                run[n.id] = run[previous.id]
            else:
                run[n.id] = n.id
            previous = n
    if not alias:
        return listed
    by_key: dict[tuple[str, str], N] = {}
    for n in listed:  # seq order: a caller before its callees, an execution before the next
        root = run.get(n.id) if n.caller_id is None else run.get(n.caller_id)
        if root is None:
            continue
        run[n.id] = root
        key = (n.metadata or {}).get(STEP_KEY)  # a workflow / parallel branch call
        if isinstance(key, str):
            earlier = by_key.get((root, key))
            if earlier is not None:
                alias[earlier.id] = n.id
            by_key[(root, key)] = n
    dropped: set[str] = set()
    for n in listed:
        if n.caller_id in alias:
            kept = n.id in alias or (n.status == "completed" and step_identity(n) is not None)
        else:
            kept = n.caller_id not in dropped
        if not kept:
            dropped.add(n.id)

    def latest(node_id: str) -> str:
        while node_id in alias:
            node_id = alias[node_id]
        return node_id

    by_id = {n.id: n for n in listed}
    first_seq: dict[str, int] = {}
    renamed: dict[str, str] = {}  # a re-executed parallel call's fork -> the new call's
    for old, new in alias.items():
        last = latest(old)
        if by_id[old].caller_id is None:  # an entry: the resumed run takes its first place
            first_seq[last] = min(first_seq.get(last, by_id[last].seq), by_id[old].seq)
        for (fork, _), (new_fork, _) in zip(_forks(by_id[old]), _forks(by_id[new]), strict=False):
            if fork != new_fork:
                renamed[fork] = new_fork
    out: list[N] = []
    for n in listed:
        if n.id in alias or n.id in dropped:
            continue
        forks = _forks(n)
        moved = renamed and any(fork in renamed for fork, _ in forks)
        if n.id in first_seq or n.caller_id in alias or moved:
            n = copy.copy(n)
            if n.id in first_seq:
                n.seq = first_seq[n.id]
            if n.caller_id is not None and n.caller_id in alias:
                n.caller_id = latest(n.caller_id)
            if moved:
                n.metadata = {
                    **n.metadata,
                    "forks": [[_latest_fork(f, renamed), i] for f, i in forks],
                }
        out.append(n)
    return _place_replays(out, by_id, alias, run, first_seq, latest)


def _place_replays(
    out: list[N],
    by_id: Mapping[str, N],
    alias: Mapping[str, str],
    run: Mapping[str, str],
    first_seq: Mapping[str, int],
    latest: Callable[[str], str],
) -> list[N]:
    """``out`` (folded, by ``seq``) with each replayed node of an earlier execution (a
    completed step, workflow or branch call kept under its re-executed caller) placed where
    the latest execution replayed it, with its subtree in its own order.

    Only the first node the latest execution wrote after a replay carries
    :data:`AFTER_REPLAY` (per line: a parallel branch marks its own), so a replayed node
    goes just before the first node of the latest execution, in its line or one enclosing
    or enclosed by it, marked with its step key or a later one (by the first execution's
    order): every node before that one was written before it replayed. Replayed nodes
    with no such node go after the last node of those lines; replayed nodes taking one
    place keep their old order."""
    began = {root: by_id[latest(root)].seq for root in set(run.values()) if root in by_id}
    # (root, step key) -> the seq of its first node (a ``parallel`` call's: its first
    # branch's, whose keys extend it): the first execution's order of replayed calls
    rank: dict[tuple[str, str], int] = {}
    for n in by_id.values():
        key = step_identity(n)
        root = run.get(n.id)
        while key is not None and root is not None:
            rank[(root, key)] = min(rank.get((root, key), n.seq), n.seq)
            key = key.rpartition("/")[0] or None
    # per latest execution and line: its last seq, and its marked nodes as (rank of the
    # replay they follow, seq) sorted, with the lowest seq from each on: the first node
    # marked with a given replay or a later one
    last: dict[tuple[str, Forks], int] = {}
    marked: dict[tuple[str, Forks], list[tuple[float, int]]] = {}
    for n in out:
        root = run.get(n.id)
        if root is None or n.id in first_seq or by_id[n.id].seq <= began[root]:
            continue
        line = (root, _forks(n))
        last[line] = max(last.get(line, n.seq), n.seq)
        after = (n.metadata or {}).get(AFTER_REPLAY)
        if isinstance(after, str):
            marked.setdefault(line, []).append((rank.get((root, after), float("inf")), n.seq))
    if not last:
        return out
    first_after: dict[tuple[str, Forks], tuple[list[float], list[int]]] = {}
    for line, entries in marked.items():
        entries.sort()
        lowest: list[int] = []
        for _, seq in reversed(entries):
            lowest.append(min(seq, lowest[-1]) if lowest else seq)
        lowest.reverse()
        first_after[line] = ([order for order, _ in entries], lowest)
    # a moved node -> (seq, 0: just before that node | 2: just after it)
    place: dict[str, tuple[int, int]] = {}
    for n in out:
        original = by_id[n.id]
        if original.caller_id in place:  # inside a moved node: goes with it
            place[n.id] = place[original.caller_id]
            continue
        if original.caller_id not in alias or n.id in first_seq:
            continue
        root, key = run.get(n.id), step_identity(n)
        if root is None or key is None:
            continue
        mine, replayed_at = _forks(n), rank[(root, key)]
        before: int | None = None  # the first node written after it replayed
        end: int | None = None  # the last node of its lines
        for line, seq in last.items():
            if line[0] != root or not _related(line[1], mine):
                continue
            end = seq if end is None else max(end, seq)
            if line in first_after:
                orders, lowest = first_after[line]
                at = bisect.bisect_left(orders, replayed_at)  # marked with it or a later one
                if at < len(orders) and (before is None or lowest[at] < before):
                    before = lowest[at]
        if before is not None:
            place[n.id] = (before, 0)
        elif end is not None and end > n.seq:
            place[n.id] = (end, 2)
    if not place:
        return out
    # a moved node takes the seq of the node it precedes or follows; in the list it goes
    # just before or after it (a sort by seq keeps that), moved nodes in their old order
    out = sorted(out, key=lambda n: (*place.get(n.id, (n.seq, 1)), by_id[n.id].seq))
    for i, n in enumerate(out):
        if n.id in place:
            out[i] = n = copy.copy(n)
            n.seq = place[n.id][0]
    return out


def _related(forks: Forks, other: Forks) -> bool:
    """Whether code with ``forks`` and code with ``other`` ran in one line (one's branch
    encloses the other's), not in concurrent branches."""
    return all(a == b for a, b in zip(forks, other, strict=False))


def _latest_fork(fork: str, renamed: Mapping[str, str]) -> str:
    seen = {fork}
    while fork in renamed and renamed[fork] not in seen:
        fork = renamed[fork]
        seen.add(fork)
    return fork


def call_order(nodes: Iterable[N]) -> list[N]:
    """``nodes`` in call order: ``seq`` order, with the branches of each ``parallel`` call
    in branch index order at the place the call made them, each branch contiguous.

    The code that calls ``parallel`` writes nothing until its branches have finished, so
    one call's branches sit between the same sequential nodes; they are placed where the
    first of them was written, then ordered by index, then by ``seq`` within a branch.
    """
    listed = list(nodes)
    forks = {n.id: _forks(n) for n in listed}
    start: dict[str, int] = {}  # fork -> seq of its first node
    for n in listed:
        for fork, _ in forks[n.id]:
            if fork not in start or n.seq < start[fork]:
                start[fork] = n.seq

    def key(n: N) -> list[int]:
        out: list[int] = []
        for fork, index in forks[n.id]:
            out += (start[fork], index)
        out.append(n.seq)
        return out

    return sorted(listed, key=key)


def _beside(node_forks: Sequence[tuple[str, int]], viewer: Sequence[tuple[str, int]]) -> bool:
    """Whether a node ran in a branch concurrent with the viewer's (same call, other index)."""
    for (fork, index), (vfork, vindex) in zip(node_forks, viewer, strict=False):
        if fork != vfork:
            return False  # another parallel call: it finished before the viewer's began
        if index != vindex:
            return True
    return False


def _expose(node: NodeLike) -> str:
    meta = node.metadata or {}
    value = meta.get("expose")
    return value if isinstance(value, str) else "full"


def _ancestors(node: NodeLike, by_id: Mapping[str, NodeLike]) -> list[NodeLike]:
    out: list[NodeLike] = []
    seen: set[str] = set()
    cid = node.caller_id
    while cid and cid in by_id and cid not in seen:
        seen.add(cid)
        anc = by_id[cid]
        out.append(anc)
        cid = anc.caller_id
    return out


def _visible(node: NodeLike, by_id: Mapping[str, NodeLike], own_chain: set[str]) -> bool:
    """Whether ``node`` is shown (its own line or as a container) to the viewer."""
    for anc in _ancestors(node, by_id):
        if anc.id in own_chain:
            continue  # a call sees its own internals
        mode = _expose(anc)
        if mode == "io":
            return False
        if mode == "llm" and node.kind != "llm":
            return False
    return True


def _renders_line(node: NodeLike, own_chain: set[str]) -> bool:
    return not (node.kind == "code" and _expose(node) == "llm" and node.id not in own_chain)


def _dump(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=False)
    except (TypeError, ValueError):
        return repr(value)


def _output_text(node: NodeLike) -> str:
    if node.status == "running":
        return "(running)"
    if node.status in ("error", "cancelled"):
        out = node.output
        msg = out.get("error") if isinstance(out, Mapping) else out
        return f"({node.status}: {msg})"
    return _dump(node.output)


def user_text(content: Any) -> str:
    """The caller's own text in a stored user message (history/context blocks removed)."""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content or []:
        if not isinstance(block, Mapping) or block.get("type") != "text":
            continue
        text = str(block.get("text", ""))
        if text.startswith(f"<{HISTORY_TAG}>") or text.startswith(f"<{CONTEXT_TAG} "):
            continue
        parts.append(text)
    return "\n".join(parts)


def _render_llm(node: NodeLike) -> list[str]:
    lines: list[str] = []
    request = node.input if isinstance(node.input, Mapping) else {}
    messages = request.get("messages") or []
    if len(messages) == 1 and isinstance(messages[0], Mapping):
        lines.append(f"user: {user_text(messages[0].get('content'))}")
    reply = node.output if isinstance(node.output, Mapping) else {}
    if node.status == "error":
        lines.append(f"assistant: (error: {reply.get('error')})")
        return lines
    for call in reply.get("tool_calls") or []:
        lines.append(f"assistant -> {call.get('name')}({_dump(call.get('arguments'))})")
    text = reply.get("text")
    if text:
        lines.append(f"assistant: {text}")
    return lines


def _render_code(node: NodeLike) -> list[str]:
    mode = _expose(node)
    if mode == "io":
        return [f"{node.name} -> {_output_text(node)}"]
    lines: list[str] = []
    doc = (node.metadata or {}).get("doc")
    if doc:
        summary = str(doc).strip().splitlines()[0] if str(doc).strip() else ""
        if summary:
            lines.append(f"# {summary}")
    args = node.input if isinstance(node.input, Mapping) else {}
    rendered = ", ".join(f"{k}={_dump(v)}" for k, v in args.items())
    lines.append(f"{node.name}({rendered}) -> {_output_text(node)}")
    return lines


def _render_node(node: NodeLike) -> list[str]:
    if node.kind == "llm":
        return _render_llm(node)
    if node.kind == "user":
        data = node.input
        if isinstance(data, Mapping):
            data = data.get("content", data.get("text", ""))
        return [f"user: {user_text(data)}"]
    return _render_code(node)


def _slice(
    nodes: Sequence[NodeLike], count: int | None, *, all_value: int | None
) -> list[NodeLike]:
    if count == all_value or count is None:
        return list(nodes)
    if count <= 0:
        return []
    return list(nodes[-count:])


def select_nodes(
    nodes: Sequence[NodeLike],
    *,
    frame_node_id: str | None,
    own_chain: Iterable[str] = (),
    render_range: Mapping[str, Any] | None = None,
    history_filter: Any = "dag",
    context: Any = None,
    call_id: str | None = None,
    viewer_forks: Sequence[tuple[str, int]] = (),
) -> list[NodeLike]:
    """The nodes to render, in call order (see the module docstring for the rules).

    ``viewer_forks`` are the forks of the code making the request
    (:func:`openprogram.branches.current_forks`).
    """
    if history_filter is False:
        return []
    ordered = call_order(fold_attempts(nodes))
    by_id = {n.id: n for n in ordered}
    chain = set(own_chain)
    frame = by_id.get(frame_node_id) if frame_node_id else None
    shown = [
        n
        for n in ordered
        if n.id != frame_node_id
        and not (viewer_forks and _beside(_forks(n), viewer_forks))
        and _visible(n, by_id, chain)
        and _renders_line(n, chain)
    ]
    if frame is not None:
        rr = dict(render_range or {})
        place = {n.id: i for i, n in enumerate(ordered)}
        at = place[frame.id]
        before = [n for n in shown if place[n.id] < at]
        inside = [n for n in shown if place[n.id] > at]
        shown = _slice(before, rr.get("callers"), all_value=None) + _slice(
            inside, rr.get("subcalls", -1), all_value=-1
        )
    if history_filter == "current_call":
        root = call_id or frame_node_id
        if root is None:
            return []
        shown = [n for n in shown if any(a.id == root for a in _ancestors(n, by_id))]
    elif callable(history_filter):
        kept = []
        for n in shown:
            try:
                ok = history_filter(n, context)
            except Exception as exc:
                raise HistoryFilterError(
                    f"history_filter {getattr(history_filter, '__name__', history_filter)!r} "
                    f"failed on node {n.name!r} (seq {n.seq}): {type(exc).__name__}: {exc}"
                ) from exc
            if ok:
                kept.append(n)
        shown = kept
    return shown


def render_history(
    nodes: Sequence[NodeLike],
    *,
    frame_node_id: str | None = None,
    own_chain: Iterable[str] = (),
    render_range: Mapping[str, Any] | None = None,
    history_filter: Any = "dag",
    context: Any = None,
    call_id: str | None = None,
    viewer_forks: Sequence[tuple[str, int]] = (),
) -> str:
    """The history text for a model request ('' when nothing is visible)."""
    folded = fold_attempts(nodes)
    chosen = select_nodes(
        folded,
        frame_node_id=frame_node_id,
        own_chain=own_chain,
        render_range=render_range,
        history_filter=history_filter,
        context=context,
        call_id=call_id,
        viewer_forks=viewer_forks,
    )
    by_id = {n.id: n for n in folded}
    chosen_ids = {n.id for n in chosen}
    lines: list[str] = []
    for node in chosen:
        depth = sum(1 for a in _ancestors(node, by_id) if a.id in chosen_ids)
        indent = "  " * depth
        lines.extend(indent + line for line in _render_node(node))
    return "\n".join(lines)


def frame_chain_ids(frame: Any) -> list[str]:
    """Node ids of ``frame`` and its enclosing frames (innermost first)."""
    out: list[str] = []
    while frame is not None:
        if getattr(frame, "node_id", None):
            out.append(frame.node_id)
        frame = frame.parent
    return out


Filter = Callable[[Any, Any], bool]
