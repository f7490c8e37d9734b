"""Turn control: cooperative cancellation at safe points and the turn's event sink.

A running turn installs a :class:`TurnControl` in a ``ContextVar`` (so worker threads
started with a copied context and asyncio tasks see it too). Code on the execution path
calls :func:`checkpoint` at *safe points* (before each model request, before each tool
dispatch, on entry of each scoped Agent method): when the turn's cancel event is set it
raises :class:`TurnCancelled`, otherwise it emits the event. :func:`emit` only emits.
Both are a single ``ContextVar`` lookup when no turn is active.

``TurnCancelled`` subclasses :class:`asyncio.CancelledError` (a ``BaseException``): it
passes through ``except Exception`` in tools and user code, and call scopes record the
nodes it unwinds as ``cancelled``.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = [
    "EventFn",
    "TurnCancelled",
    "TurnControl",
    "checkpoint",
    "current_control",
    "emit",
    "turn_control",
]

log = logging.getLogger("openprogram.turns")

EventFn = Callable[[dict[str, Any]], None]


class TurnCancelled(asyncio.CancelledError):
    """The turn's cancel event was set; raised at the next safe point.

    ``where`` is the safe point that stopped the turn (``{"type": ..., **info}``);
    ``result`` is the cancelled ``TurnResult`` when ``arun_turn``'s task was cancelled.
    """

    def __init__(self, where: dict[str, Any] | None = None, result: Any = None) -> None:
        self.where = dict(where or {})
        self.result = result
        at = self.where.get("type", "a safe point")
        name = self.where.get("name")
        super().__init__(f"turn cancelled at {at}" + (f" ({name})" if name else ""))


class TurnControl:
    """Cancel event and event sink of one running turn (``parent``: an enclosing turn)."""

    __slots__ = ("cancel_event", "on_event", "parent", "request_id", "stopped_at")

    def __init__(
        self,
        request_id: str,
        *,
        cancel_event: threading.Event | None = None,
        on_event: EventFn | None = None,
        parent: TurnControl | None = None,
    ) -> None:
        self.request_id = request_id
        self.cancel_event = cancel_event
        self.on_event = on_event
        self.parent = parent
        self.stopped_at: dict[str, Any] | None = None

    @property
    def cancelled(self) -> bool:
        """True when this turn's (or an enclosing turn's) cancel event is set."""
        control: TurnControl | None = self
        while control is not None:
            event = control.cancel_event
            if event is not None and event.is_set():
                return True
            control = control.parent
        return False

    def emit(self, event_type: str, info: dict[str, Any]) -> None:
        """Send ``{"type": event_type, "request_id": ..., **info}`` to the sink.

        A failing sink is logged and ignored: a UI bug never breaks the turn.
        """
        sink = self.on_event
        if sink is None:
            return
        event = {"type": event_type, "request_id": self.request_id, **info}
        try:
            sink(event)
        except Exception as exc:
            log.warning("on_event failed for %s: %s: %s", event_type, type(exc).__name__, exc)

    def checkpoint(self, event_type: str, info: dict[str, Any]) -> None:
        """Raise :class:`TurnCancelled` if cancelled, else emit the event."""
        if self.cancelled:
            self.stopped_at = {"type": event_type, **info}
            raise TurnCancelled(self.stopped_at)
        self.emit(event_type, info)


_control: contextvars.ContextVar[TurnControl | None] = contextvars.ContextVar(
    "openprogram_turn_control", default=None
)


def current_control() -> TurnControl | None:
    """The control of the turn running in this thread/task, or ``None``."""
    return _control.get()


@contextmanager
def turn_control(control: TurnControl) -> Iterator[TurnControl]:
    """Install ``control`` for the ``with`` block (the enclosing turn becomes its parent)."""
    if control.parent is None:
        control.parent = _control.get()
    token = _control.set(control)
    try:
        yield control
    finally:
        _control.reset(token)


def checkpoint(event_type: str, **info: Any) -> None:
    """A safe point: raise :class:`TurnCancelled` when the turn is cancelled, else emit.

    No-op outside a turn. ``info`` must be JSON-serialisable and hold no secrets.
    """
    control = _control.get()
    if control is not None:
        control.checkpoint(event_type, info)


def emit(event_type: str, **info: Any) -> None:
    """Emit an event to the current turn's sink (no-op outside a turn)."""
    control = _control.get()
    if control is not None:
        control.emit(event_type, info)
