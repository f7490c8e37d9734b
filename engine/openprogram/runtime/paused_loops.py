"""Where a tool loop stood when its turn paused, and continuing it from there.

A turn pauses inside a tool loop when a resumable tool's run pauses (``RunPaused``) or
the turn's pause event stops it before a tool dispatch (``TurnPaused``). Each loop the
pause passes through attaches its state to the exception (:func:`save`): the
conversation so far (messages, replies, tool trace) and the tool calls not run yet, the
paused one first. :mod:`openprogram.turns` keeps these states in the turn's continuation
(:func:`saved`, outermost loop first). ``resume_turn`` installs them
(:func:`resuming`), and each loop of the resumed turn whose first request is the one the
saved loop started with takes its state (:func:`take`): it runs the pending tool calls
(the paused one continues its run) and goes on with the next model request, so no model
request made before the pause is sent again.

Loops that had **finished** before the pause are kept too, where the resumed turn will
run them again: the loops finished inside the tool call the pause stopped (saved with
the loop that made that call, ``LoopState.done``) and those finished directly in the
turn's body (the turn's ``done_loops``). A resumed loop whose first request is the next
finished one (:func:`take_done`) returns that loop's saved result without a request, so
a method running several loops, the last one paused, resumes at that one. Loops inside
a durable run are not kept (:func:`isolated`): the run resumes at its own steps.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from openprogram.runtime.cassette import (
    response_from_record,
    response_record,
    tool_call_from_record,
)
from openprogram.runtime.types import Message, ModelRequest, ModelResponse, ToolCall
from openprogram.scope import message_to_json, tool_calls_to_json

__all__ = [
    "LoopState",
    "fingerprint",
    "finished",
    "isolated",
    "journal",
    "journaling",
    "resuming",
    "save",
    "saved",
    "take",
    "take_done",
]

_ATTRIBUTE = "openprogram_paused_loops"  # on the exception, innermost loop first


@dataclass
class LoopState:
    """One tool loop at its pause: what to put back and which tool calls to run next."""

    fingerprint: str
    messages: list[Message]
    prompt_index: int
    history: str  # the session history the loop's prompt was rendered with
    responses: list[ModelResponse]
    trace: list[dict[str, Any]]  # ToolCallRecord fields
    pending: list[ToolCall]
    # loops that finished inside the pending tool call before the pause (JSON states)
    done: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "done": self.done,
            "fingerprint": self.fingerprint,
            "messages": [message_to_json(m) for m in self.messages],
            "prompt_index": self.prompt_index,
            "history": self.history,
            "responses": [response_record(r) for r in self.responses],
            "trace": self.trace,
            "pending": tool_calls_to_json(self.pending),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LoopState:
        return cls(
            fingerprint=str(data["fingerprint"]),
            messages=[_message(m) for m in data["messages"]],
            prompt_index=int(data["prompt_index"]),
            history=str(data.get("history") or ""),
            responses=[response_from_record(r) for r in data["responses"]],
            trace=[dict(t) for t in data["trace"]],
            pending=[tool_call_from_record(c) for c in data["pending"]],
            done=[dict(d) for d in data.get("done") or ()],
        )


def fingerprint(template: ModelRequest, prompt: Any) -> str:
    """What identifies a loop across a pause: model, system, tool names and the caller's
    own prompt text (history and context blocks left out: they are rendered afresh)."""
    from openprogram.history import user_text

    tools = [t.name for t in template.tools]
    key = [template.model_id, template.system, tools, user_text(prompt)]
    return hashlib.sha256(json.dumps(key, default=repr).encode()).hexdigest()[:32]


def save(exc: BaseException, state: LoopState) -> None:
    """Attach ``state`` to the pause passing out of its loop (inner loops attach first)."""
    states: list[dict[str, Any]] = exc.__dict__.setdefault(_ATTRIBUTE, [])
    states.append(state.to_json())


def saved(exc: BaseException) -> list[dict[str, Any]]:
    """The loop states the pause passed through, outermost first (JSON)."""
    return list(reversed(exc.__dict__.get(_ATTRIBUTE, [])))


_resuming: contextvars.ContextVar[list[dict[str, Any]] | None] = contextvars.ContextVar(
    "openprogram_resuming_loops", default=None
)
_done: contextvars.ContextVar[list[dict[str, Any]] | None] = contextvars.ContextVar(
    "openprogram_finished_loops", default=None
)  # finished loops the resumed turn runs again, in order
_journal: contextvars.ContextVar[list[dict[str, Any]] | None] = contextvars.ContextVar(
    "openprogram_loop_journal", default=None
)  # where a loop finishing now is listed


@contextmanager
def resuming(
    states: Sequence[Mapping[str, Any]] | None,
    done: Sequence[Mapping[str, Any]] | None = None,
) -> Iterator[None]:
    """Inside the block, loops pick up ``states`` (outermost first) as they start, and
    the finished loops ``done`` (the turn body's) return their saved results."""
    token = _resuming.set([dict(s) for s in states or ()])
    done_token = _done.set([dict(d) for d in done or ()])
    try:
        yield
    finally:
        _done.reset(done_token)
        _resuming.reset(token)


def take(template: ModelRequest, prompt: Any) -> LoopState | None:
    """The saved state of a loop starting as ``template``/``prompt``, if it is the next
    one saved (a loop that does not match runs from its start). The loops that had
    finished inside its pending tool call come next (:func:`take_done`)."""
    states = _resuming.get()
    if not states or states[0].get("fingerprint") != fingerprint(template, prompt):
        return None
    state = LoopState.from_json(states.pop(0))
    done = _done.get()
    if state.done and done is not None:
        done[:0] = [dict(d) for d in state.done]
    return state


def take_done(template: ModelRequest, prompt: Any) -> LoopState | None:
    """The saved final state of a loop starting as ``template``/``prompt`` that had
    finished before the pause, if it is the next finished one."""
    done = _done.get()
    if not done or done[0].get("fingerprint") != fingerprint(template, prompt):
        return None
    return LoopState.from_json(done.pop(0))


@contextmanager
def journal(done: list[dict[str, Any]] | None = None) -> Iterator[list[dict[str, Any]]]:
    """Loops finishing inside the block are listed in ``done`` (a new list by default),
    which is yielded (JSON states)."""
    done = [] if done is None else done
    token = _journal.set(done)
    try:
        yield done
    finally:
        _journal.reset(token)


def journaling() -> bool:
    """Whether a loop finishing here is listed (inside a turn's body or tool call)."""
    return _journal.get() is not None


def finished(state: LoopState) -> None:
    """List a loop that just finished in the enclosing :func:`journal`, if any."""
    listed = _journal.get()
    if listed is not None:
        listed.append(state.to_json())


@contextmanager
def isolated() -> Iterator[None]:
    """A durable run's body: its loops are not listed (the run resumes at its steps)."""
    token = _journal.set(None)
    done_token = _done.set(None)
    try:
        yield
    finally:
        _done.reset(done_token)
        _journal.reset(token)


def _message(data: Mapping[str, Any]) -> Message:
    return Message(
        role=data["role"],
        content=data.get("content") or "",
        tool_calls=[tool_call_from_record(c) for c in data.get("tool_calls") or []],
        tool_call_id=data.get("tool_call_id"),
        name=data.get("name"),
        is_error=bool(data.get("is_error")),
    )
