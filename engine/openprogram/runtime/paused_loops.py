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
"""

from __future__ import annotations

import contextvars
import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from openprogram.runtime.cassette import (
    response_from_record,
    response_record,
    tool_call_from_record,
)
from openprogram.runtime.types import Message, ModelRequest, ModelResponse, ToolCall
from openprogram.scope import message_to_json, tool_calls_to_json

__all__ = ["LoopState", "fingerprint", "resuming", "save", "saved", "take"]

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

    def to_json(self) -> dict[str, Any]:
        return {
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


@contextmanager
def resuming(states: Sequence[Mapping[str, Any]] | None) -> Iterator[None]:
    """Inside the block, loops pick up ``states`` (outermost first) as they start."""
    token = _resuming.set([dict(s) for s in states or ()])
    try:
        yield
    finally:
        _resuming.reset(token)


def take(template: ModelRequest, prompt: Any) -> LoopState | None:
    """The saved state of a loop starting as ``template``/``prompt``, if it is the next
    one saved (a loop that does not match runs from its start)."""
    states = _resuming.get()
    if not states or states[0].get("fingerprint") != fingerprint(template, prompt):
        return None
    return LoopState.from_json(states.pop(0))


def _message(data: Mapping[str, Any]) -> Message:
    return Message(
        role=data["role"],
        content=data.get("content") or "",
        tool_calls=[tool_call_from_record(c) for c in data.get("tool_calls") or []],
        tool_call_id=data.get("tool_call_id"),
        name=data.get("name"),
        is_error=bool(data.get("is_error")),
    )
