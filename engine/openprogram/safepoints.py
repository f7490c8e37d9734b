"""Turn control: cooperative cancellation and pausing at safe points, input appended to a
running turn, and the turn's event sink.

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
    "TurnPaused",
    "append_input",
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


class TurnPaused(TurnCancelled):
    """The turn's pause event was set; raised at the next safe point. The turn ends
    ``paused`` with its continuation saved (resume it with ``resume_turn``)."""

    def __str__(self) -> str:
        at = self.where.get("type", "a safe point")
        name = self.where.get("name")
        return f"turn paused at {at}" + (f" ({name})" if name else "")


class TurnControl:
    """Cancel/pause events, input inbox and event sink of one running turn (``parent``:
    an enclosing turn)."""

    __slots__ = (
        "cancel_event",
        "inbox",
        "lock",
        "on_event",
        "parent",
        "pause_event",
        "request_id",
        "stopped_at",
    )

    def __init__(
        self,
        request_id: str,
        *,
        cancel_event: threading.Event | None = None,
        on_event: EventFn | None = None,
        parent: TurnControl | None = None,
        pause_event: threading.Event | None = None,
    ) -> None:
        self.request_id = request_id
        self.cancel_event = cancel_event
        self.pause_event = pause_event
        self.on_event = on_event
        self.parent = parent
        self.stopped_at: dict[str, Any] | None = None
        self.inbox: list[Any] = []  # input appended while the turn runs
        self.lock = threading.Lock()

    def append_input(self, content: Any) -> None:
        """Queue ``content``; it is delivered at the next safe point before a model request."""
        with self.lock:
            self.inbox.append(content)

    def take_input(self) -> list[Any]:
        """Remove and return the queued input (oldest first)."""
        with self.lock:
            taken, self.inbox = self.inbox, []
        return taken

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
        """Raise :class:`TurnCancelled` if cancelled (:class:`TurnPaused` if paused), else
        emit the event."""
        if self.cancelled:
            self.stopped_at = {"type": event_type, **info}
            raise TurnCancelled(self.stopped_at)
        if self.pause_event is not None and self.pause_event.is_set():
            self.stopped_at = {"type": event_type, **info}
            raise TurnPaused(self.stopped_at)
        self.emit(event_type, info)


_control: contextvars.ContextVar[TurnControl | None] = contextvars.ContextVar(
    "openprogram_turn_control", default=None
)


def current_control() -> TurnControl | None:
    """The control of the turn running in this thread/task, or ``None``."""
    return _control.get()


_running: dict[str, TurnControl] = {}  # request id -> control of a running turn
_running_lock = threading.Lock()


@contextmanager
def turn_control(control: TurnControl) -> Iterator[TurnControl]:
    """Install ``control`` for the ``with`` block (the enclosing turn becomes its parent)."""
    if control.parent is None:
        control.parent = _control.get()
    token = _control.set(control)
    with _running_lock:
        outer = _running.get(control.request_id)
        _running[control.request_id] = control
    try:
        yield control
    finally:
        _control.reset(token)
        with _running_lock:
            if outer is None:
                _running.pop(control.request_id, None)
            else:
                _running[control.request_id] = outer


def append_input(request_id: str, content: Any) -> bool:
    """Append ``content`` to the running turn ``request_id``: it is delivered at the next
    safe point, before the next model request. False when no such turn is running."""
    with _running_lock:
        control = _running.get(request_id)
    if control is None:
        return False
    control.append_input(content)
    return True


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
