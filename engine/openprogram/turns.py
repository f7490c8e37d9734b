"""Conversation turns: ``TurnRequest``, ``TurnResult``, ``ChatAgent`` and the turn entries.

``run_turn(agent, request, *, context=None, on_event=None, cancel_event=None,
execution_context=None)`` runs one turn of ``agent`` on ``request.content``: the agent's
instance settings apply, ``context`` (e.g. ``Context.for_session(store, sid, head_id=...)``)
selects the persistent session and branch, and a request naming another session than
the context's is rejected. Events (plain dicts) go to ``on_event`` on the executing
thread; ``cancel_event`` (a ``threading.Event``) is checked cooperatively before the turn
starts and before it returns (a turn cancelled meanwhile reports ``cancelled``).
``resume_turn(agent, continuation, ...)`` re-runs a turn from the continuation of a
paused/cancelled ``TurnResult`` without re-admission. ``arun_turn``/``aresume_turn`` are
the asyncio forms. ``ChatAgent`` exposes them as methods.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from openprogram.agents import Agent

if TYPE_CHECKING:
    from openprogram.context import Context

__all__ = [
    "ChatAgent",
    "TurnRequest",
    "TurnResult",
    "aresume_turn",
    "arun_turn",
    "resume_turn",
    "run_turn",
]

EventFn = Callable[[dict[str, Any]], None]


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


@dataclass(frozen=True)
class TurnResult:
    """How a turn ended: ``completed`` (``output``), ``cancelled`` or ``failed`` (``error``).

    ``continuation`` (JSON) resumes a turn that did not complete via ``resume_turn``.
    """

    request_id: str
    status: str
    output: Any = None
    error: str | None = None
    session_id: str | None = None
    duration_s: float = 0.0
    continuation: dict[str, Any] | None = None


def _emit(on_event: EventFn | None, event: dict[str, Any]) -> None:
    if on_event is not None:
        on_event(event)


def _check_session(request: TurnRequest, context: Context | None) -> None:
    ctx_sid = context.session_id if context is not None else None
    if request.session_id is not None and ctx_sid is not None and request.session_id != ctx_sid:
        raise ValueError(
            f"turn request {request.request_id} is for session {request.session_id!r} but "
            f"the context records into session {ctx_sid!r}"
        )


def run_turn(
    agent: Agent,
    request: TurnRequest,
    *,
    context: Context | None = None,
    on_event: EventFn | None = None,
    cancel_event: threading.Event | None = None,
    execution_context: Mapping[str, Any] | None = None,
) -> TurnResult:
    """Run one turn of ``agent`` (see the module docstring)."""
    if not isinstance(request, TurnRequest):
        raise TypeError(f"run_turn expects a TurnRequest, got {type(request).__name__}")
    ctx = context if context is not None else getattr(agent, "context", None)
    _check_session(request, ctx)
    sid = request.session_id or (ctx.session_id if ctx is not None else None)
    continuation = {
        "request": request.to_json(),
        "execution_context": dict(execution_context or {}),
    }
    started = time.perf_counter()

    def result(status: str, output: Any = None, error: str | None = None) -> TurnResult:
        return TurnResult(
            request_id=request.request_id,
            status=status,
            output=output,
            error=error,
            session_id=sid,
            duration_s=round(time.perf_counter() - started, 6),
            continuation=None if status == "completed" else continuation,
        )

    _emit(on_event, {"type": "turn_started", "request_id": request.request_id, "session_id": sid})
    if cancel_event is not None and cancel_event.is_set():
        _emit(on_event, {"type": "turn_cancelled", "request_id": request.request_id})
        return result("cancelled", error="cancelled before the turn started")
    try:
        if ctx is not None:
            with ctx.bind():
                output = agent(request.content)
        else:
            output = agent(request.content)
    except Exception as exc:
        _emit(
            on_event,
            {
                "type": "turn_failed",
                "request_id": request.request_id,
                "error": f"{type(exc).__name__}: {exc}",
            },
        )
        return result("failed", error=f"{type(exc).__name__}: {exc}")
    if cancel_event is not None and cancel_event.is_set():
        _emit(on_event, {"type": "turn_cancelled", "request_id": request.request_id})
        return result("cancelled", output=output, error="cancelled during the turn")
    _emit(on_event, {"type": "turn_completed", "request_id": request.request_id, "output": output})
    return result("completed", output=output)


def resume_turn(
    agent: Agent,
    continuation: Mapping[str, Any] | TurnResult,
    **options: Any,
) -> TurnResult:
    """Re-run the turn saved in ``continuation`` (a dict or a non-completed ``TurnResult``)."""
    data = continuation.continuation if isinstance(continuation, TurnResult) else continuation
    if not data or "request" not in data:
        raise ValueError("nothing to resume: the continuation holds no turn request")
    req = dict(data["request"])
    request = TurnRequest(
        content=req["content"],
        session_id=req.get("session_id"),
        head_id=req.get("head_id"),
        request_id=req.get("request_id") or uuid.uuid4().hex,
        metadata=req.get("metadata") or {},
    )
    options.setdefault("execution_context", data.get("execution_context"))
    return run_turn(agent, request, **options)


async def arun_turn(agent: Agent, request: TurnRequest, **options: Any) -> TurnResult:
    """Async :func:`run_turn`; cancelling the awaiting task sets the turn's cancel event."""
    cancel = options.pop("cancel_event", None) or threading.Event()
    try:
        return await asyncio.to_thread(run_turn, agent, request, cancel_event=cancel, **options)
    except asyncio.CancelledError:
        cancel.set()
        raise


async def aresume_turn(
    agent: Agent, continuation: Mapping[str, Any] | TurnResult, **options: Any
) -> TurnResult:
    """Async :func:`resume_turn`."""
    return await asyncio.to_thread(resume_turn, agent, continuation, **options)


class ChatAgent(Agent):
    """The Agent type used for chat. It inherits the turn contract of :class:`Agent`
    (``run_turn``/``arun_turn``/``resume_turn``/``aresume_turn``); subclasses that override
    those entries are not wrapped as ordinary recorded calls."""
