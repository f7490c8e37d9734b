"""Approvals of ``requires_approval`` tools called inside a durable run.

With no approver installed (``openprogram.programs.approvals``), such a call inside a
run does not fail: the run pauses as ``awaiting_approval`` (the call's tool and
arguments are recorded, and a step it happened in is marked to run again). The user
approves or denies it — ``openprogram approve RUN_ID`` / ``openprogram deny RUN_ID`` or
:func:`approve_run` / :func:`deny_run` — which records the decision and resumes the run;
when the same call (tool and arguments) is made again, an approved call runs and a
denied one returns a refusal to the model. Awaiting runs are never resumed
automatically (``resume --all-interrupted`` skips them; a plain ``resume`` refuses
until the request is decided).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from hashlib import sha256
from typing import TYPE_CHECKING, Any

from openprogram.contract.runs import ApprovalStatus, PauseReason, RunStatus
from openprogram.durable.errors import RunNotFound, RunPaused, RunStateError
from openprogram.durable.steps import current_run_id
from openprogram.store.runs import executing_store

if TYPE_CHECKING:
    from openprogram.durable.runner import RunOutcome
    from openprogram.store.runs import RunStore

__all__ = [
    "ApprovalPending",
    "approve_run",
    "decide_in_run",
    "deny_run",
    "pending_request",
    "refuse_undecided",
]


class ApprovalPending(RunPaused):
    """The run pauses until a tool call is approved or denied. The step it happened in
    is marked failed (not uncertain): the tool itself did not run, so the step runs
    again on resume."""

    reruns_step = True


def _key(tool: str, arguments: Mapping[str, Any]) -> str:
    text = json.dumps(dict(arguments), sort_keys=True, separators=(",", ":"), default=repr)
    return f"approval:{tool}:{sha256(text.encode()).hexdigest()[:24]}"


def decide_in_run(tool: str, arguments: Mapping[str, Any]) -> bool | None:
    """Inside a durable run: ``True`` (approved) or ``False`` (denied) for this call, or
    :class:`ApprovalPending` when undecided. ``None`` outside a run."""
    run_id = current_run_id()
    db = executing_store()
    if run_id is None or db is None:
        return None
    key = _key(tool, arguments)
    status = db.approval_status(run_id, key)
    if status == ApprovalStatus.APPROVED:
        return True
    if status == ApprovalStatus.DENIED:
        return False
    shown = json.dumps(dict(arguments), ensure_ascii=False, default=repr)
    db.request_approval(run_id, key, tool, shown)
    raise ApprovalPending(
        PauseReason.AWAITING_APPROVAL.value,
        f"tool {tool!r} requires approval for {shown[:200]}; approve it with "
        f"`openprogram approve {run_id}` or deny it with `openprogram deny {run_id}`",
        tool,
        None,
    )


def pending_request(run_id: str, *, store: str | os.PathLike[str] | None = None) -> Any:
    """``{"tool", "arguments"}`` of the run's undecided approval request, or None."""
    from openprogram.store.runs import open_run_store

    with open_run_store(store, create=False) as db:
        found = db.pending_approval(run_id)
    if found is None:
        return None
    _, tool, args = found
    return {"tool": tool, "arguments": json.loads(args)}


def refuse_undecided(db: RunStore, run_id: str, pause_reason: str | None) -> None:
    """Raise :class:`RunStateError` when the run still waits for an approval decision."""
    if pause_reason != PauseReason.AWAITING_APPROVAL:
        return
    pending = db.pending_approval(run_id)
    if pending is not None:
        raise RunStateError(
            f"run {run_id} is awaiting approval of tool {pending[1]!r} "
            f"({pending[2][:200]}); approve it with `openprogram approve {run_id}` or deny "
            f"it with `openprogram deny {run_id}`"
        )


def _decide(
    run_id: str,
    decision: ApprovalStatus,
    store: str | os.PathLike[str] | None,
    resume: bool,
    queue: str | None,
) -> RunOutcome | None:
    from openprogram.durable.runner import requeue_run, resume_run
    from openprogram.store.runs import open_run_store

    with open_run_store(store, create=False) as db:
        run = db.get_run(run_id)
        if run is None:
            raise RunNotFound(f"no run {run_id!r} in {db.location}")
        pending = db.pending_approval(run_id)
        if (
            run.status != RunStatus.PAUSED
            or run.pause_reason != PauseReason.AWAITING_APPROVAL
            or pending is None
        ):
            raise RunStateError(
                f"run {run_id} is {run.status}"
                + (f" ({run.pause_reason})" if run.pause_reason else "")
                + " and not awaiting approval"
            )
        if not db.decide_approval(run_id, pending[0], decision.value):
            raise RunStateError(f"the approval request of run {run_id} was decided meanwhile")
        if not resume and queue is None and db.pending_approval(run_id) is None:
            # it waits for a resume now, not for a decision
            db.repause(
                run_id,
                PauseReason.REQUESTED,
                f"the call of tool {pending[1]!r} was {decision.value}; continue the run "
                f"with: openprogram resume {run_id}",
                was=PauseReason.AWAITING_APPROVAL,
            )
            return None
    if queue is not None:  # the workers of the queue resume it (requeue_run)
        requeue_run(run_id, store=store, queue=queue)
        return None
    return resume_run(run_id, store=store) if resume else None


def approve_run(
    run_id: str,
    *,
    store: str | os.PathLike[str] | None = None,
    resume: bool = True,
    queue: str | None = None,
) -> RunOutcome | None:
    """Approve the tool call a run awaits and (by default) resume the run; with ``queue``
    hand it to the workers of that queue instead (``None`` is returned)."""
    return _decide(run_id, ApprovalStatus.APPROVED, store, resume, queue)


def deny_run(
    run_id: str,
    *,
    store: str | os.PathLike[str] | None = None,
    resume: bool = True,
    queue: str | None = None,
) -> RunOutcome | None:
    """Deny the tool call a run awaits (the model is told) and (by default) resume it; with
    ``queue`` hand it to the workers of that queue instead (``None`` is returned)."""
    return _decide(run_id, ApprovalStatus.DENIED, store, resume, queue)
