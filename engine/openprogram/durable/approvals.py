"""Approvals of ``requires_approval`` tools called inside a durable run.

With no approver installed (``openprogram.programs.approvals``), such a call inside a
run does not fail: the run pauses as ``awaiting_approval`` (the call's tool and
arguments are recorded, and a step it happened in is marked to run again). The user
approves or denies it — ``openprogram approve RUN_ID`` / ``openprogram deny RUN_ID`` or
:func:`approve_run` / :func:`deny_run` — which records the decision and resumes the run.
Awaiting runs are never resumed automatically (``resume --all-interrupted`` skips them;
a plain ``resume`` refuses until the request is decided).

The step runs again, but its tool loops continue where they stood at the pause: the
pause keeps their state (the conversation, the model's replies and the tool calls not
run yet, :mod:`openprogram.runtime.paused_loops`) and the next execution of the run
hands it to the loops of the re-run step, so no model request is sent again — the
decided call itself is what runs next, with the arguments approved, and the loop goes
on live from there with the conversation an uninterrupted run would have had.

One approval authorises one execution: the approved call is marked ``executed``
before it runs (its result is recorded when it returns), and a later request of the
same call (tool and arguments) — the model asking again, the step re-run after a
failure — pauses the run for a new decision instead of running it again. A denial
holds for every later request of that call.

A run whose entry is not resumable cannot pause (resuming it could only run the entry
again from its start, repeating what ran before the call): such a call fails the run
with :class:`ApprovalUnavailable`, which says how to get a decision.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from hashlib import sha256
from typing import TYPE_CHECKING, Any, Literal

from openprogram.contract.runs import ApprovalStatus, PauseReason, RunStatus
from openprogram.durable.errors import DECLARE_RESUMABLE, RunNotFound, RunPaused, RunStateError
from openprogram.durable.steps import current_run_id
from openprogram.runtime import paused_loops
from openprogram.store.jsoncodec import utf8_json
from openprogram.store.runs import executing_store

if TYPE_CHECKING:
    from openprogram.durable.runner import RunOutcome
    from openprogram.store.runs import RunStore

__all__ = [
    "ApprovalPending",
    "ApprovalUnavailable",
    "ApprovedCall",
    "approve_run",
    "decide_in_run",
    "deny_run",
    "keep_loops",
    "pending_request",
    "refuse_undecided",
    "take_loops",
]

#: The note (kind ``approval_loops``) holding where the tool loops stood at the run's
#: last approval pause, taken by the run's next execution.
_LOOPS = ("approvals/loops", "approval_loops")
_RESULT_KIND = "approval_result"  # the result of an approved call that ran


class ApprovalPending(RunPaused):
    """The run pauses until a tool call is approved or denied. The step it happened in
    is marked failed (not uncertain): the tool itself did not run, so the step runs
    again on resume."""

    reruns_step = True


class ApprovalUnavailable(BaseException):
    """A ``requires_approval`` tool called, with no approver, inside a run whose entry is
    not resumable: the run cannot pause for a decision (it could only be run again from
    its start, repeating what ran before the call), so it fails, saying how to get one.
    A ``BaseException``, as :class:`RunPaused`, so that neither the tool loop (which
    would hand the model a refusal and let the run complete) nor a Program's
    ``except Exception`` swallows it."""


def _not_resumable(tool: str) -> ApprovalUnavailable:
    return ApprovalUnavailable(
        f"tool {tool!r} requires approval, and this run cannot pause for a decision: its "
        f"entry is not declared resumable. {DECLARE_RESUMABLE} and "
        "the run pauses as awaiting_approval until `openprogram approve RUN_ID` or "
        "`openprogram deny RUN_ID`; or call it with an approver installed "
        "(openprogram.programs.approvals)"
    )


def _call_key(tool: str, arguments: Mapping[str, Any]) -> str:
    text = json.dumps(dict(arguments), sort_keys=True, separators=(",", ":"), default=repr)
    return f"approval:{tool}:{sha256(text.encode()).hexdigest()[:24]}"


def _request_key(call: str, occurrence: int) -> str:
    """The record of the ``occurrence``-th request of the call ``call`` (the first one
    keeps the call's key, as records written before requests were counted)."""
    return call if occurrence == 0 else f"{call}#{occurrence}"


@dataclass(frozen=True)
class ApprovedCall:
    """The approval a call inside a run uses: marked executed before the call runs;
    :meth:`record` keeps the call's result with it."""

    run_id: str
    key: str

    def record(self, result: str) -> None:
        db = executing_store()
        if db is not None:
            db.keep_approval_note(self.run_id, f"{self.key}/result", _RESULT_KIND, result)


def decide_in_run(tool: str, arguments: Mapping[str, Any]) -> ApprovedCall | Literal[False] | None:
    """Inside a durable run: the :class:`ApprovedCall` whose approval this call uses
    (it runs now, once), ``False`` (denied) for this call, or :class:`ApprovalPending`
    when undecided or when its approval was used already; :class:`ApprovalUnavailable`
    inside a run whose entry is not resumable. ``None`` outside a run."""
    run_id = current_run_id()
    db = executing_store()
    if db is None:
        return None
    if run_id is None:  # a run of an entry that is not resumable: nothing could resume it
        raise _not_resumable(tool)
    call = _call_key(tool, arguments)
    latest = db.latest_approval(run_id, call)
    occurrence = 0
    used = ""
    if latest is not None:
        key, status, occurrence = latest
        if status == ApprovalStatus.APPROVED and db.consume_approval(run_id, key):
            return ApprovedCall(run_id, key)
        if status == ApprovalStatus.DENIED:
            return False
        if status != ApprovalStatus.REQUESTED:  # used (executed): ask again
            result = db.approval_note(run_id, f"{key}/result", _RESULT_KIND)
            used = (
                "; an identical call approved before already ran in this run"
                + (f" (it returned {result[:200]!r})" if result is not None else "")
                + ", and an approval allows one execution"
            )
            occurrence += 1
    shown = utf8_json(json.dumps(dict(arguments), ensure_ascii=False, default=repr))
    db.request_approval(run_id, _request_key(call, occurrence), call, occurrence, tool, shown)
    raise ApprovalPending(
        PauseReason.AWAITING_APPROVAL.value,
        f"tool {tool!r} requires approval for {shown[:200]}{used}; approve it with "
        f"`openprogram approve {run_id}` or deny it with `openprogram deny {run_id}`",
        tool,
        None,
    )


def keep_loops(db: RunStore, run_id: str, paused: RunPaused) -> None:
    """At an approval pause, keep where the tool loops it passed through stood (for the
    run's next execution: :func:`take_loops`)."""
    if not isinstance(paused, ApprovalPending):
        return
    states = paused_loops.saved(paused)
    if states:
        db.keep_approval_note(run_id, *_LOOPS, utf8_json(json.dumps(states, ensure_ascii=False)))


def take_loops(db: RunStore, run_id: str) -> list[dict[str, Any]] | None:
    """The loop states the run's last approval pause kept, once (an execution takes
    them: a later one runs its steps from their start)."""
    text = db.take_approval_note(run_id, *_LOOPS)
    if text is None:
        return None
    states = json.loads(text)
    return states if isinstance(states, list) and states else None


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
    from openprogram.durable.worker import check_queue
    from openprogram.store.runs import open_run_store

    if queue is not None:  # before the decision is recorded
        check_queue(queue)
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
