"""``Context``: named content blocks, request-time providers and history selection.

A ``Context`` is a mutable mapping of named blocks inherited from its parent. Providers
are synchronous callables ``provider(context) -> value`` evaluated at every model request;
a failing provider fails that request with :class:`ContextProviderError`. ``history_filter``
selects which visible DAG nodes are rendered into a prompt. A Context given ``store=`` (a
``SessionNodeWriter``) records into, and renders history from, that explicit session, so
repeated standalone calls continue one session; the caller owns and closes the store.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from openprogram.errors import OpenProgramError

if TYPE_CHECKING:
    from openprogram.store import SessionNodeWriter, SessionStore

__all__ = ["Context", "ContextProviderError", "HistoryFilter"]

Provider = Callable[["Context"], Any]
HistoryFilter = str | bool | Callable[[Any, "Context"], bool]
HISTORY_FILTER_VALUES = ("dag", "current_call")


class ContextProviderError(OpenProgramError):
    """A context provider raised (or returned something unusable) during a model request."""


class _Unset:
    def __repr__(self) -> str:
        return "<unset>"


_UNSET: Any = _Unset()

_current: contextvars.ContextVar[Context | None] = contextvars.ContextVar(
    "openprogram_context", default=None
)


def _check_history_filter(value: Any) -> None:
    if value is False or value in HISTORY_FILTER_VALUES or callable(value):
        return
    raise ValueError(
        f"history_filter must be 'dag', 'current_call', False or a callable (node, context) "
        f"-> bool, got {value!r}"
    )


def _check_providers(providers: Mapping[str, Any]) -> dict[str, Provider]:
    out: dict[str, Provider] = {}
    for name, fn in providers.items():
        if not callable(fn):
            raise TypeError(
                f"context provider {name!r} must be a callable (context) -> value, got "
                f"{type(fn).__name__}; expression strings are never evaluated"
            )
        out[str(name)] = fn
    return out


class Context(MutableMapping[str, Any]):
    """Named blocks + providers + history selection for model requests (SPEC §2.5)."""

    def __init__(
        self,
        blocks: Mapping[str, Any] | None = None,
        *,
        parent: Context | None = None,
        providers: Mapping[str, Provider] | None = None,
        history_filter: HistoryFilter = _UNSET,
        call_id: str | None = None,
        store: SessionNodeWriter | None = None,
        head_id: str | None = None,
    ) -> None:
        if parent is not None and not isinstance(parent, Context):
            raise TypeError(f"Context parent must be a Context, got {type(parent).__name__}")
        if history_filter is not _UNSET:
            _check_history_filter(history_filter)
        if store is not None and not hasattr(store, "append"):
            raise TypeError(
                "Context(store=...) takes a SessionNodeWriter; use "
                "Context.for_session(store, session_id) for a SessionStore"
            )
        self._blocks: dict[str, Any] = dict(blocks or {})
        self.parent = parent
        self._providers: dict[str, Provider] = _check_providers(providers or {})
        self._history_filter: Any = history_filter
        self.call_id = call_id
        self._store = store
        self._head_id = head_id
        self._head_applied = head_id is None

    # ------------------------------------------------------------------ mapping
    def __getitem__(self, key: str) -> Any:
        ctx: Context | None = self
        while ctx is not None:
            if key in ctx._blocks:
                return ctx._blocks[key]
            ctx = ctx.parent
        raise KeyError(key)

    def __setitem__(self, key: str, value: Any) -> None:
        self._blocks[key] = value

    def __delitem__(self, key: str) -> None:
        if key not in self._blocks:
            raise KeyError(f"{key!r} is not a block of this Context (inherited blocks stay)")
        del self._blocks[key]

    def _chain(self) -> list[Context]:
        chain: list[Context] = []
        ctx: Context | None = self
        while ctx is not None:
            chain.append(ctx)
            ctx = ctx.parent
        return chain[::-1]  # root first

    def __iter__(self) -> Iterator[str]:
        seen: dict[str, None] = {}
        for ctx in self._chain():
            for key in ctx._blocks:
                seen[key] = None
        return iter(seen)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __repr__(self) -> str:
        return (
            f"Context(blocks={list(self)!r}, providers={list(self.providers)!r}, "
            f"history_filter={self.history_filter!r}, session_id={self.session_id!r})"
        )

    # ------------------------------------------------------------------ settings
    @property
    def providers(self) -> dict[str, Provider]:
        """Providers of this Context and its ancestors (nearest wins)."""
        out: dict[str, Provider] = {}
        for ctx in self._chain():
            out.update(ctx._providers)
        return out

    @property
    def history_filter(self) -> HistoryFilter:
        """The effective history filter (own, else inherited, else ``"dag"``)."""
        ctx: Context | None = self
        while ctx is not None:
            if ctx._history_filter is not _UNSET:
                return ctx._history_filter
            ctx = ctx.parent
        return "dag"

    @history_filter.setter
    def history_filter(self, value: HistoryFilter) -> None:
        _check_history_filter(value)
        self._history_filter = value

    @property
    def store(self) -> SessionNodeWriter | None:
        """The explicit session writer of this Context or an ancestor, or ``None``."""
        ctx: Context | None = self
        while ctx is not None:
            if ctx._store is not None:
                return ctx._store
            ctx = ctx.parent
        return None

    @property
    def session_id(self) -> str | None:
        """Id of the session this Context's explicit store records into, or ``None``."""
        store = self.store
        return None if store is None else getattr(store, "session_id", None)

    def prepare_session(self) -> SessionNodeWriter | None:
        """The explicit writer, after moving it to ``head_id`` on first use."""
        ctx: Context | None = self
        while ctx is not None:
            if ctx._store is not None:
                if not ctx._head_applied:
                    ctx._store.move_head(ctx._head_id)  # type: ignore[arg-type]
                    ctx._head_applied = True
                return ctx._store
            ctx = ctx.parent
        return None

    def descends_from(self, other: Context) -> bool:
        """True when ``other`` is this Context or one of its ancestors."""
        return any(ctx is other for ctx in self._chain())

    # ------------------------------------------------------------------ derivation
    def derive(
        self,
        blocks: Mapping[str, Any] | None = None,
        *,
        providers: Mapping[str, Provider] | None = None,
        history_filter: HistoryFilter = _UNSET,
        call_id: str | None = None,
    ) -> Context:
        """A child Context with its own blocks, inheriting everything from this one."""
        return Context(
            blocks,
            parent=self,
            providers=providers,
            history_filter=history_filter,
            call_id=call_id if call_id is not None else self.call_id,
        )

    def merge(self, other: Context | Mapping[str, Any]) -> Context:
        """Copy ``other``'s blocks, providers and explicit history filter into this Context.

        The scope call identity (``call_id``) is kept. Returns ``self``.
        """
        if isinstance(other, Context):
            for key in other:
                self._blocks[key] = other[key]
            self._providers.update(other.providers)
            for ctx in reversed(other._chain()):
                if ctx._history_filter is not _UNSET:
                    self._history_filter = ctx._history_filter
                    break
        else:
            self._blocks.update(other)
        return self

    @classmethod
    def current(cls) -> Context | None:
        """The Context bound to the current task, or ``None``."""
        return _current.get()

    @contextmanager
    def bind(self) -> Iterator[Context]:
        """Bind this Context as :meth:`current` inside the ``with`` block."""
        token = _current.set(self)
        try:
            yield self
        finally:
            _current.reset(token)

    @classmethod
    def for_session(
        cls,
        store: SessionStore,
        session_id: str,
        *,
        head_id: str | None = None,
        blocks: Mapping[str, Any] | None = None,
        providers: Mapping[str, Provider] | None = None,
    ) -> Context:
        """A Context recording into session ``session_id`` of ``store`` (from ``head_id``)."""
        from openprogram.store import SessionNodeWriter

        writer = SessionNodeWriter(store, session_id)
        return cls(blocks, providers=providers, store=writer, head_id=head_id)

    # ------------------------------------------------------------------ requests
    def evaluate(self) -> dict[str, Any]:
        """Blocks and provider values for one model request (providers run now).

        Raises :class:`ContextProviderError` naming the provider when one fails.
        """
        for ready in _ready.get():  # evaluated just before this request (reuse_evaluations)
            if ready.context is self:
                with ready.lock:
                    taken, ready.taken = ready.taken, True
                if not taken:
                    return dict(ready.values)
        values: dict[str, Any] = {key: self[key] for key in self}
        for name, fn in self.providers.items():
            try:
                value = fn(self)
            except Exception as exc:
                raise ContextProviderError(
                    f"context provider {name!r} failed: {type(exc).__name__}: {exc}"
                ) from exc
            if hasattr(value, "__await__"):
                close = getattr(value, "close", None)
                if callable(close):
                    close()
                raise ContextProviderError(
                    f"context provider {name!r} returned an awaitable; providers must be "
                    "synchronous callables"
                )
            values[name] = value
        recording = _recording.get()
        if recording is not None:
            recording.append((self, dict(values)))
        return values


Evaluation = tuple[Context, dict[str, Any]]


class _Ready:
    """One evaluation handed on to the next request of its Context (taken once)."""

    def __init__(self, context: Context, values: dict[str, Any]) -> None:
        self.context = context
        self.values = values
        self.taken = False
        self.lock = threading.Lock()


_recording: contextvars.ContextVar[list[Evaluation] | None] = contextvars.ContextVar(
    "openprogram_context_recording", default=None
)
_ready: contextvars.ContextVar[tuple[_Ready, ...]] = contextvars.ContextVar(
    "openprogram_context_ready", default=()
)


@contextmanager
def record_evaluations() -> Iterator[list[Evaluation]]:
    """Collect ``(context, values)`` of every :meth:`Context.evaluate` inside the block."""
    found: list[Evaluation] = []
    token = _recording.set(found)
    try:
        yield found
    finally:
        _recording.reset(token)


@contextmanager
def reuse_evaluations(evaluations: list[Evaluation]) -> Iterator[None]:
    """Inside the block, the next :meth:`Context.evaluate` of each Context in
    ``evaluations`` returns its recorded values instead of running the providers again
    (later ones run them as usual): for a caller that evaluated the Context just before
    the request it makes, as the Planner's checkpoint does to key a call, so providers
    run once per request."""
    if not evaluations:
        yield
        return
    token = _ready.set((*_ready.get(), *(_Ready(c, v) for c, v in evaluations)))
    try:
        yield
    finally:
        _ready.reset(token)
