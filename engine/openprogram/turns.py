"""Conversation turns: ``TurnRequest``, ``TurnResult``, ``ChatAgent`` and the turn entries.

``run_turn(agent, request, *, context=None, on_event=None, cancel_event=None,
execution_context=None)`` runs one turn of ``agent`` on ``request.content``: the agent's
instance settings apply, ``context`` (e.g. ``Context.for_session(store, sid, head_id=...)``)
selects the persistent session and branch (``request.head_id`` overrides the branch), and
a request naming another session than the context's is rejected before anything runs.

The turn is recorded as one ``code`` node named ``turn`` (``expose="llm"``: later turns see
its model exchanges) with the model requests and method calls inside it. Cancellation is
cooperative (:mod:`openprogram.safepoints`): setting ``cancel_event`` stops the turn at the
next safe point — before a model request, before a tool dispatch, on entry of a scoped
Agent method — the nodes it unwinds are recorded ``cancelled`` and the result is
``TurnResult(status="cancelled", continuation=...)``. The continuation is also saved in the
turn node's metadata, so ``resume_turn(agent, continuation | result | turn_node_id)``
re-runs a cancelled turn from the branch point it started at, without re-admission. A
turn *paused* inside its tool loop (a resumable tool's run paused, or the pause event
stopped it before a tool dispatch) saves the loop's conversation and its pending tool
calls: resuming continues at the paused call and sends no model request made before the
pause again (:mod:`openprogram.runtime.paused_loops`).

Events (JSON dicts with ``type`` and ``request_id``) go to ``on_event`` on the executing
thread: ``turn.started``, ``llm.request``, ``llm.response``, ``tool.started``,
``tool.finished``, ``call.started`` and one of ``turn.completed|cancelled|failed``.
``arun_turn``/``aresume_turn`` are the asyncio forms; cancelling the awaiting task sets
the cancel event, waits for the worker to stop at its next safe point, and raises
:class:`~openprogram.safepoints.TurnCancelled` whose ``result`` holds the continuation.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from openprogram.agents import Agent
from openprogram.durable.errors import RunPaused
from openprogram.runtime import paused_loops
from openprogram.safepoints import (
    TurnCancelled,
    TurnControl,
    TurnPaused,
    append_input,
    turn_control,
)
from openprogram.scope import call_scope, set_output, to_json_value

if TYPE_CHECKING:
    from openprogram.context import Context
    from openprogram.store import SessionNodeWriter

__all__ = [
    "ChatAgent",
    "TurnCancelled",
    "TurnPaused",
    "TurnRequest",
    "TurnResult",
    "append_input",
    "aresume_turn",
    "arun_turn",
    "resume_turn",
    "run_turn",
]

EventFn = Callable[[dict[str, Any]], None]
CONTINUATION_VERSION = 1
TURN_NODE_NAME = "turn"


@dataclass(frozen=True)
class TurnRequest:
    """One user turn: its content, and optionally the session/branch it belongs to."""

    content: str | list[dict[str, Any]]
    session_id: str | None = None
    head_id: str | None = None
    request_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "content": self.content,
            "session_id": self.session_id,
            "head_id": self.head_id,
            "request_id": self.request_id,
            "metadata": dict(self.metadata),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TurnRequest:
        if not isinstance(data, Mapping) or "content" not in data:
            raise ValueError("a turn request needs at least 'content'")
        return cls(
            content=data["content"],
            session_id=data.get("session_id"),
            head_id=data.get("head_id"),
            request_id=data.get("request_id") or uuid.uuid4().hex,
            metadata=data.get("metadata") or {},
        )


@dataclass(frozen=True)
class TurnResult:
    """How a turn ended: ``completed`` (``output``), ``cancelled``, ``paused`` (a resumable
    tool's run paused; its tool call is pending) or ``failed`` (``error``).

    ``continuation`` (JSON) resumes a turn that did not complete via ``resume_turn``;
    ``turn_node_id`` is the turn's node in the session DAG (when recorded).
    """

    request_id: str
    status: str
    output: Any = None
    error: str | None = None
    session_id: str | None = None
    duration_s: float = 0.0
    continuation: dict[str, Any] | None = None
    turn_node_id: str | None = None


def _check_session(request: TurnRequest, context: Context | None) -> None:
    ctx_sid = context.session_id if context is not None else None
    if request.session_id is not None and ctx_sid is not None and request.session_id != ctx_sid:
        raise ValueError(
            f"turn request {request.request_id} is for session {request.session_id!r} but "
            f"the context records into session {ctx_sid!r}"
        )


def _prepare_writer(request: TurnRequest, ctx: Context | None) -> SessionNodeWriter | None:
    """The context's session writer, moved to ``request.head_id`` when one is given."""
    writer = ctx.prepare_session() if ctx is not None else None
    if request.head_id is not None:
        if writer is None:
            raise ValueError(
                f"turn request {request.request_id} names head {request.head_id!r} but no "
                "Context with a session was given (use Context.for_session(store, sid))"
            )
        writer.move_head(request.head_id)
    return writer


def run_turn(
    agent: Agent,
    request: TurnRequest,
    *,
    context: Context | None = None,
    on_event: EventFn | None = None,
    cancel_event: threading.Event | None = None,
    execution_context: Mapping[str, Any] | None = None,
    pause_event: threading.Event | None = None,
) -> TurnResult:
    """Run one turn of ``agent`` (see the module docstring)."""
    return _run(
        agent,
        request,
        context=context,
        on_event=on_event,
        cancel_event=cancel_event,
        execution_context=execution_context,
        resumed_from=None,
        pause_event=pause_event,
    )


def _run(
    agent: Agent,
    request: TurnRequest,
    *,
    context: Context | None,
    on_event: EventFn | None,
    cancel_event: threading.Event | None,
    execution_context: Mapping[str, Any] | None,
    resumed_from: str | None,
    pause_event: threading.Event | None = None,
    pending_input: list[Any] | None = None,
) -> TurnResult:
    if not isinstance(request, TurnRequest):
        raise TypeError(f"run_turn expects a TurnRequest, got {type(request).__name__}")
    ctx = context if context is not None else getattr(agent, "context", None)
    _check_session(request, ctx)
    writer = _prepare_writer(request, ctx)
    sid = request.session_id or (ctx.session_id if ctx is not None else None)
    start_head = writer.head_id if writer is not None else None
    continuation: dict[str, Any] = {
        "version": CONTINUATION_VERSION,
        "session_id": sid,
        "request": {**request.to_json(), "session_id": sid, "head_id": start_head},
        "execution_context": dict(execution_context or {}),
    }
    control = TurnControl(
        request.request_id, cancel_event=cancel_event, on_event=on_event, pause_event=pause_event
    )
    for content in pending_input or ():  # appended before the turn paused, not yet delivered
        control.append_input(content)
    pending_runs = _pending_runs()  # runs of resumable tools this turn hands back
    if pending_runs:
        continuation["pending_runs"] = pending_runs
    started = time.perf_counter()
    node_id: str | None = None
    finished: list[dict[str, Any]] = []  # loops the turn's body ran to the end

    def finish(status: str, output: Any = None, error: str | None = None) -> TurnResult:
        done = status == "completed"
        continuation["turn_node_id"] = node_id
        if not done and writer is not None and node_id is not None:
            if status == "paused":
                writer.update(node_id, status="paused", metadata={"continuation": continuation})
            else:
                writer.update(node_id, metadata={"continuation": continuation})
        event: dict[str, Any] = {"status": status, "turn_node_id": node_id}
        if done:
            event["output"] = to_json_value(output)
        if error is not None:
            event["error"] = error
        control.emit(f"turn.{status}", event)
        return TurnResult(
            request_id=request.request_id,
            status=status,
            output=output,
            error=error,
            session_id=sid,
            duration_s=round(time.perf_counter() - started, 6),
            continuation=None if done else continuation,
            turn_node_id=node_id,
        )

    with turn_control(control):
        control.emit(
            "turn.started",
            {"session_id": sid, "head_id": start_head, "resumed_from": resumed_from},
        )
        try:
            if control.cancelled:
                raise TurnCancelled({"type": "turn.started"})
            with (
                _bound(ctx),
                call_scope(
                    TURN_NODE_NAME,
                    inputs={"content": request.content},
                    options={"expose": "llm"},
                    writer=writer,
                ) as frame,
            ):
                node_id = frame.node_id
                if frame.writer is not None and node_id is not None:
                    meta: dict[str, Any] = {"request_id": request.request_id}
                    if resumed_from is not None:
                        meta["resumed_from"] = resumed_from
                    frame.writer.update(node_id, metadata=meta)
                # ``context=`` given to the turn is the request's Context (blocks,
                # providers, history filter), not the Agent's own one
                with paused_loops.journal(finished):  # the loops of the turn's body
                    if context is not None:
                        reply = agent(request.content, context=context)
                    else:
                        reply = agent(request.content)
                output = set_output(frame, reply)
        except TurnPaused as exc:  # paused at a safe point: persisted, resumable
            continuation["stopped_at"] = exc.where
            _keep_loops(continuation, exc, finished)
            undelivered = control.take_input()
            if undelivered:
                continuation["pending_input"] = undelivered
            return finish("paused", error=str(exc))
        except TurnCancelled as exc:
            continuation["stopped_at"] = exc.where
            return finish("cancelled", error=str(exc))
        except RunPaused as exc:  # a resumable tool's run paused: its tool call is pending
            if exc.run_id is None:
                raise
            if exc.call_identity is not None:
                pending_runs[exc.call_identity] = exc.run_id
                continuation["pending_runs"] = pending_runs
            continuation["stopped_at"] = {"type": "run.paused", "run_id": exc.run_id}
            _keep_loops(continuation, exc, finished)
            return finish("paused", error=str(exc))
        except (asyncio.CancelledError, concurrent.futures.CancelledError) as exc:
            if not control.cancelled:
                raise
            continuation["stopped_at"] = control.stopped_at or {}
            return finish("cancelled", error=f"turn cancelled ({type(exc).__name__})")
        except Exception as exc:
            return finish("failed", error=f"{type(exc).__name__}: {exc}")
    return finish("completed", output=output)


def _keep_loops(
    continuation: dict[str, Any], paused: BaseException, finished: list[dict[str, Any]]
) -> None:
    """Save where the turn's tool loops stood (and the loops its body had finished), so
    resuming continues there."""
    for key, value in (("loops", paused_loops.saved(paused)), ("done_loops", finished)):
        if value:
            continuation[key] = value
        else:
            continuation.pop(key, None)


def _pending_runs() -> dict[str, str]:
    from openprogram.durable.direct import adopted_runs

    return adopted_runs()


def _bound(ctx: Context | None) -> Any:
    from contextlib import nullcontext

    return ctx.bind() if ctx is not None else nullcontext()


def _load_continuation(
    continuation: Mapping[str, Any] | TurnResult | str, ctx: Context | None
) -> dict[str, Any]:
    if isinstance(continuation, TurnResult):
        data = continuation.continuation
        if data is None:
            raise ValueError(
                f"turn {continuation.request_id} {continuation.status}; only a cancelled, "
                "paused or failed turn can be resumed"
            )
        return dict(data)
    if isinstance(continuation, str):
        writer = ctx.store if ctx is not None else None
        if writer is None:
            raise ValueError(
                f"resuming turn node {continuation!r} needs context=Context.for_session(...)"
            )
        node = writer.store.get_node(continuation)
        if node is None or node.session_id != writer.session_id:
            raise ValueError(
                f"no turn node {continuation!r} in session {writer.session_id!r}; pick one "
                f"from `openprogram show {writer.session_id}`"
            )
        saved = (node.metadata or {}).get("continuation")
        if node.name != TURN_NODE_NAME or not isinstance(saved, Mapping):
            raise ValueError(
                f"node {continuation!r} ({node.kind} {node.name!r}, {node.status}) holds no "
                "turn continuation; only cancelled or failed turns can be resumed"
            )
        return dict(saved)
    if not isinstance(continuation, Mapping) or not isinstance(
        continuation.get("request"), Mapping
    ):
        raise ValueError("nothing to resume: the continuation holds no turn request")
    version = continuation.get("version", CONTINUATION_VERSION)
    if version != CONTINUATION_VERSION:
        raise ValueError(
            f"turn continuation version {version!r} is not supported (expected "
            f"{CONTINUATION_VERSION})"
        )
    return dict(continuation)


def resume_turn(
    agent: Agent,
    continuation: Mapping[str, Any] | TurnResult | str,
    **options: Any,
) -> TurnResult:
    """Re-run the turn saved in ``continuation`` without re-admission.

    ``continuation`` is a non-completed ``TurnResult``, its ``continuation`` dict, or the
    id of a cancelled ``turn`` node of the context's session (its saved continuation).
    The request id, content and branch point are reused; a context recording into another
    session than the continuation's is rejected.
    """
    ctx = options.get("context")
    ctx = ctx if ctx is not None else getattr(agent, "context", None)
    data = _load_continuation(continuation, ctx)
    request = TurnRequest.from_json(data["request"])
    _check_session(request, ctx)
    if request.head_id is not None and (ctx is None or ctx.session_id is None):
        # recorded in a session the caller did not open again: run unrecorded, same request
        request = TurnRequest(
            request.content, None, None, request.request_id, dict(request.metadata)
        )
    options.setdefault("execution_context", data.get("execution_context"))
    resumed_from = data.get("turn_node_id") or _node_of(continuation)
    from openprogram.durable.direct import adopting_runs

    # a resumable tool call that paused the turn continues its run and hands its result
    # over; the tool loop continues at that call with the conversation it had
    with (
        adopting_runs(data.get("pending_runs")),
        paused_loops.resuming(data.get("loops"), data.get("done_loops")),
    ):
        return _run(
            agent,
            request,
            context=options.get("context"),
            on_event=options.get("on_event"),
            cancel_event=options.get("cancel_event"),
            execution_context=options.get("execution_context"),
            resumed_from=resumed_from,
            pause_event=options.get("pause_event"),
            pending_input=list(data.get("pending_input") or ()),
        )


def _node_of(continuation: Any) -> str | None:
    if isinstance(continuation, TurnResult):
        return continuation.turn_node_id
    return continuation if isinstance(continuation, str) else None


async def _in_worker(fn: Callable[..., TurnResult], *args: Any, **options: Any) -> TurnResult:
    """Run ``fn`` in a worker thread; task cancellation sets the cancel event and waits."""
    cancel = options.pop("cancel_event", None) or threading.Event()
    worker = asyncio.ensure_future(asyncio.to_thread(fn, *args, cancel_event=cancel, **options))
    try:
        return await asyncio.shield(worker)
    except asyncio.CancelledError:
        cancel.set()
        try:
            result: TurnResult | None = await worker  # stops at its next safe point
        except Exception:
            result = None
        raise TurnCancelled({"type": "task.cancelled"}, result=result) from None


async def arun_turn(agent: Agent, request: TurnRequest, **options: Any) -> TurnResult:
    """Async :func:`run_turn`; cancelling the awaiting task cancels the turn cooperatively."""
    return await _in_worker(run_turn, agent, request, **options)


async def aresume_turn(
    agent: Agent, continuation: Mapping[str, Any] | TurnResult | str, **options: Any
) -> TurnResult:
    """Async :func:`resume_turn` (same cancellation as :func:`arun_turn`)."""
    return await _in_worker(resume_turn, agent, continuation, **options)


class ChatAgent(Agent):
    """The Agent type used for chat. It inherits the turn contract of :class:`Agent`
    (``run_turn``/``arun_turn``/``resume_turn``/``aresume_turn``); subclasses that override
    those entries are not wrapped as ordinary recorded calls."""
