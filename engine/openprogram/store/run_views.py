"""The editor's views of a run, built from the run store's rows (backend-neutral).

Two shapes, each one JSON object text per row so a caller joins them into one answer:

- a *step view* (Runs view): ``key scope kind name occurrence label state durationMs result
  error``; and
- a *graph node* (run graph): ``id seq kind name status caller pred durationMs model usage
  error input output``.

:class:`~openprogram.store.runs.RunStore` builds them here from its ordinary reads; the
SQLite store builds the same objects in SQL (``sqlite_runs``), which is what keeps a
10,000-step run fast. Both follow the rules documented on the functions below.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from openprogram.contract.runs import PauseReason, RunStatus

__all__ = [
    "APPROVAL_PAUSE_ERROR",
    "VIEW_STEP_KINDS",
    "GraphNodeRow",
    "StepContext",
    "error_text",
    "graph_node_row",
    "node_status",
    "step_state",
    "step_view_object",
]


class GraphNodeRow(NamedTuple):
    """One session node for the run graph: what a caller needs to label and total it, and the
    node's JSON object text (without its ``step`` label)."""

    id: str
    kind: str
    name: str
    created_at: float
    tokens_in: int | None
    tokens_out: int | None
    json: str


#: The kinds of ``run_steps`` records a run view shows as steps. The others are the
#: run's own bookkeeping (an approval's request and notes, scope ``approvals``): the tool
#: a run awaits approval of is its paused step (``runs.paused_step``), not a step record.
VIEW_STEP_KINDS: tuple[str, ...] = ("step", "workflow", "parallel", "branch")

#: How the record of a step unwound by an approval pause starts (``TYPE: message`` of
#: ``durable.approvals.ApprovalPending``, saved as a failure so that the step runs again).
APPROVAL_PAUSE_ERROR = "ApprovalPending: "


class StepContext(NamedTuple):
    """What a step's shown state depends on besides its record (:func:`step_state`), of
    one run: :meth:`of_run` derives it."""

    live: bool  # a live process executes the run: its open steps run
    paused_at: tuple[str, int] | None  # the step a paused run stopped at
    awaiting_approval: bool  # paused until a tool call is approved or denied
    cancelled: bool = False  # the run was cancelled (an approval pause it ended in too)

    @classmethod
    def of_run(
        cls,
        status: str,
        pause_reason: str | None,
        paused_step: str | None,
        paused_occurrence: int | None,
        *,
        live: bool,
    ) -> StepContext:
        """The context of a run's steps. Its ``paused_step`` is a step only when the run
        paused before it or on request (an uncertain step shows ``uncertain``; the
        ``paused_step`` of a run awaiting approval names the tool, whose steps are shown
        paused by their records)."""
        paused = status == RunStatus.PAUSED
        approval = paused and pause_reason == PauseReason.AWAITING_APPROVAL
        at = None
        if paused and paused_step and not approval and pause_reason != PauseReason.UNCERTAIN:
            at = (paused_step, paused_occurrence or 0)
        return cls(
            live=live and status == RunStatus.RUNNING,
            paused_at=at,
            awaiting_approval=approval,
            cancelled=status == RunStatus.CANCELLED,
        )


def step_state(
    status: str,
    name: str,
    occurrence: int,
    result: str | None,
    context: StepContext,
) -> str:
    """A step's state as every view shows it (the one derivation: the Runs view, the
    run's SQLite view query and the inlay hints use it).

    Its stored status when final, except the records an approval pause unwound (their
    saved failure is the pause, not the step's: they run again on approval): ``paused``
    while the run awaits that approval (``awaiting_approval``), ``cancelled`` once the
    run was cancelled (``cancelled``: it ended in that pause). Else ``running`` while
    the run is ``live``, ``paused`` for the step the run is paused at (``paused_at``:
    ``(name, occurrence)``), else ``uncertain`` (the flags: ``context``, one run's)."""
    live, paused_at, awaiting_approval, cancelled = context
    if status == "failed" and (awaiting_approval or cancelled) and _is_approval_pause(result):
        return "paused" if awaiting_approval else "cancelled"
    if status in ("completed", "failed"):
        return status
    if live:
        return "running"
    if paused_at is not None and (name, occurrence) == paused_at:
        return "paused"
    return "uncertain"


def node_status(status: str, run_status: str | None) -> str:
    """A recorded call's status as ``show`` and the run graph show it: a call its run's
    pause unwound (``paused``: an approval pause, a requested one) of a run cancelled
    since shows ``cancelled`` (it ended there, as :func:`step_state` says of its step);
    any other as recorded."""
    return "cancelled" if status == "paused" and run_status == RunStatus.CANCELLED else status


def _is_approval_pause(result: str | None) -> bool:
    """Whether a failed record's saved error (a JSON string) is an approval pause."""
    if not result:
        return False
    try:
        text = json.loads(result)
    except ValueError:
        text = result
    return isinstance(text, str) and text.startswith(APPROVAL_PAUSE_ERROR)


def error_text(result: str | None) -> str:
    """A failed step's saved error as the views show it: the JSON string decoded
    (``ValueError: x``, not ``"ValueError: x"``), its control characters (but newlines
    and tabs, which the views fold) and lone surrogates still escaped (``\\u001b``);
    anything else as stored."""
    if not result:
        return ""
    try:
        text = json.loads(result)
    except ValueError:
        return result
    if not isinstance(text, str):
        return result
    return "".join(_escaped(c) for c in text) if not text.isprintable() else text


def _escaped(c: str) -> str:
    if c in "\n\t" or unicodedata.category(c) not in ("Cc", "Cs"):
        return c
    return json.dumps(c)[1:-1]


def step_view_object(
    step: Any,
    context: StepContext,
    *,
    now: float,
    shorten: Callable[[str | None], str],
) -> str:
    """The Runs-view JSON object of one ``run_steps`` row (a ``StepRecord``): its state
    :func:`step_state`; a running step's duration counts to ``now``; ``result`` and the
    :func:`error_text` of ``error`` go through ``shorten``."""
    state = step_state(step.status, step.name, int(step.occurrence), step.result, context)
    started = float(step.started_at or 0.0)
    duration: float | None = None
    if step.finished_at is not None:
        duration = max(0.0, float(step.finished_at) - started) * 1000.0
    elif state == "running":
        duration = max(0.0, now - started) * 1000.0
    return json.dumps(
        {
            "key": step.step_key,
            "scope": step.scope,
            "kind": step.kind,
            "name": step.name,
            "occurrence": int(step.occurrence),
            "label": f"{step.name} #{int(step.occurrence)}",
            "state": state,
            "durationMs": duration,
            "result": shorten(step.result) if state == "completed" else "",
            "error": shorten(error_text(step.result)) if state == "failed" else "",
        },
        ensure_ascii=False,
    )


def _object(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:  # a malformed column reads as empty, never fails the view
        return {}
    return value if isinstance(value, dict) else {}


def _integer(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _preview(text: str | None, limit: int) -> str:
    """The stored JSON text cut to ``limit`` characters ('' for none or ``null``)."""
    if text is None or text == "null":
        return ""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def graph_node_row(
    row: Iterable[Any], *, limit: int, run_status: str | None = None
) -> GraphNodeRow:
    """The run-graph row of one node given as ``(id, seq, kind, name, caller_id,
    predecessor_id, input, output, status, metadata, created_at)``, of a run in
    ``run_status`` (``None``: a session of no run).

    ``status`` as :func:`node_status` shows it; ``durationMs`` from the metadata's
    ``duration_s``, ``error`` its ``error_type``, ``usage`` its integer token counts;
    ``model`` is ``provider:model`` of an ``llm`` node's request; ``input``/``output`` the
    stored JSON text cut to ``limit`` characters (never decoded).
    """
    node_id, seq, kind, name, caller, pred, input_json, output_json, status, meta, created = row
    metadata = _object(meta)
    duration = metadata.get("duration_s")
    if isinstance(duration, bool) or not isinstance(duration, int | float):
        duration = None
    usage = metadata.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    tokens_in = _integer(usage.get("input_tokens"))
    tokens_out = _integer(usage.get("output_tokens"))
    counts = {
        key: value
        for key, value in (("input_tokens", tokens_in), ("output_tokens", tokens_out))
        if value is not None
    }
    model: str | None = None
    if kind == "llm":
        request = _object(input_json)
        model = _text(request.get("model"))
        provider = _text(request.get("provider"))
        if model is not None and provider is not None:
            model = f"{provider}:{model}"
    limit = max(1, int(limit))
    text = json.dumps(
        {
            "id": node_id,
            "seq": seq,
            "kind": kind,
            "name": name,
            "status": node_status(status, run_status),
            "caller": caller,
            "pred": pred,
            "durationMs": duration * 1000.0 if duration is not None else None,
            "model": model,
            "usage": counts or None,
            "error": metadata.get("error_type")
            if isinstance(metadata.get("error_type"), str)
            else None,
            "input": _preview(input_json, limit),
            "output": _preview(output_json, limit),
        },
        ensure_ascii=False,
    )
    return GraphNodeRow(node_id, kind, name, float(created or 0.0), tokens_in, tokens_out, text)
