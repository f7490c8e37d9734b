"""Call scopes: the primitive behind every recorded function call.

A *frame* is one active call of a scoped function (an ``Agent`` method, an entry, a
durable step). Frames form a stack through a ``ContextVar`` so threads and asyncio tasks
each see their own chain. Each frame knows:

* the ``Runtime`` model requests inside it run on (inherited from the caller; the
  outermost call holds a :class:`RuntimeSlot` that creates one on first need and closes
  it when the call returns, see :func:`runtime_for_call`),
* the session writer it records into (``None`` = recording is a no-op),
* its DAG node id and its options (``expose``, ``render_range``, ``system``).

``call_scope`` opens a frame and writes the ``code`` node on entry and fills its
``output``/``status`` on exit; ``record_llm_call`` writes one ``llm`` node for a model
request made inside the current frame.
"""

from __future__ import annotations

import contextvars
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager as ContextManager
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any

from openprogram.branches import current_branch, current_forks
from openprogram.contract.json_depth import MAX_JSON_DEPTH, nested_deeper_than
from openprogram.errors import StoreError, stopped_by
from openprogram.history import AFTER_REPLAY, STEP_KEY

if TYPE_CHECKING:
    from openprogram.runtime.runtime import Runtime
    from openprogram.runtime.types import ModelRequest, ModelResponse
    from openprogram.store import SessionNodeWriter


@dataclass
class Frame:
    """One active scoped call."""

    name: str
    parent: Frame | None = None
    runtime: Runtime | None = None
    writer: SessionNodeWriter | None = None
    node_id: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    # seq of the first node written inside this frame (for render_range "subcalls").
    start_seq: int | None = None
    # Anything a layer wants to keep for the duration of the call (e.g. a Context).
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def depth(self) -> int:
        d, f = 0, self.parent
        while f is not None:
            d, f = d + 1, f.parent
        return d

    @property
    def hidden(self) -> bool:
        """True when this frame or an ancestor has ``expose="hidden"`` (nothing recorded)."""
        f: Frame | None = self
        while f is not None:
            if f.options.get("expose") == "hidden":
                return True
            f = f.parent
        return False


_current: contextvars.ContextVar[Frame | None] = contextvars.ContextVar(
    "openprogram_frame", default=None
)
# A writer installed for calls that have no recording frame (set by entry points).
_installed_writer: contextvars.ContextVar[SessionNodeWriter | None] = contextvars.ContextVar(
    "openprogram_writer", default=None
)


#: ``frame.extras`` key a run's entry frame holds its entry callable under: an Agent
#: method that is the entry continues in that frame instead of writing a second node.
ENTRY_EXTRA = "op_entry"


# The frame stack's three primitives are the ContextVar's own methods, not functions
# wrapping them: a durable step calls each once (a Python call saved per use).
current_frame: Callable[[], Frame | None] = _current.get
"""The innermost active frame in this thread/task, or ``None``."""


class RuntimeSlot:
    """The runtime of an outermost call (or run): created on first need, closed at its end.

    Opened by :func:`runtime_scope` (and by the outermost :func:`call_scope`), so every
    model request of one top-level call or run shares one runtime: one HTTP client, and a
    ``replay:`` cassette consumed in order across the whole call.
    """

    __slots__ = ("_lock", "model", "runtime")

    def __init__(self, model: str | None = None) -> None:
        self.runtime: Runtime | None = None
        self.model = model  # of the runtime made on first use; None: autodetected
        self._lock = threading.Lock()

    def get(self, wanted: str | None = None) -> Runtime:
        """The slot's runtime, created with ``create_runtime()`` on first use (for the
        slot's model, else the configured default, else ``wanted``: the model the first
        request asks for, so a model given in code needs no default configured)."""
        with self._lock:
            if self.runtime is None:
                from openprogram.runtime.runtime import implicit_runtime

                self.runtime = implicit_runtime(self.model, wanted=wanted)
            return self.runtime

    def close(self) -> None:
        with self._lock:
            runtime, self.runtime = self.runtime, None
        if runtime is not None:
            runtime.close()


_slot: contextvars.ContextVar[RuntimeSlot | None] = contextvars.ContextVar(
    "openprogram_runtime_slot", default=None
)


def current_runtime() -> Runtime | None:
    """The runtime bound here, without creating one: the nearest enclosing frame's, else
    the one the outermost call already created, else ``None``."""
    f = _current.get()
    while f is not None:
        if f.runtime is not None:
            return f.runtime
        f = f.parent
    slot = _slot.get()
    return slot.runtime if slot is not None else None


def runtime_for_call(wanted: str | None = None) -> Runtime | None:
    """The runtime a model request made here runs on.

    Resolution (after an explicit argument and the Agent's own runtime, which callers
    check first): the nearest enclosing frame's runtime, else the outermost call's runtime
    (created by ``create_runtime()`` on first use and closed when that call returns; for
    ``wanted``, the model the request asks for, when no default model is configured).
    ``None`` outside any call or :func:`runtime_scope`.
    """
    bound = current_runtime()
    if bound is not None:
        return bound
    slot = _slot.get()
    return slot.get(wanted) if slot is not None else None


@contextmanager
def runtime_scope(model: str | None = None) -> Iterator[None]:
    """Make the block an outermost call: model requests inside it share one runtime,
    created on first need (for ``model``, else the autodetected one) and closed at the
    end (no-op inside an enclosing call)."""
    if _slot.get() is not None:
        yield
        return
    slot = RuntimeSlot(model)
    token = _slot.set(slot)
    try:
        yield
    finally:
        _slot.reset(token)
        slot.close()


def nearest_option(key: str) -> Any:
    """The value of ``key`` in the options of the nearest enclosing frame that sets it."""
    f = _current.get()
    while f is not None:
        value = f.options.get(key)
        if value is not None:
            return value
        f = f.parent
    return None


def current_writer() -> SessionNodeWriter | None:
    """The session writer in effect here (nearest frame, else the installed one)."""
    f = _current.get()
    while f is not None:
        if f.writer is not None:
            return f.writer
        f = f.parent
    return _installed_writer.get()


@contextmanager
def use_writer(writer: SessionNodeWriter | None) -> Iterator[None]:
    """Install ``writer`` for calls made inside the ``with`` block (entry points use this)."""
    token = _installed_writer.set(writer)
    try:
        yield
    finally:
        _installed_writer.reset(token)


_SCALARS = frozenset((str, int, bool, type(None)))  # float: finite ones only (no NaN)
_INF = float("inf")


def _plain_json(value: Any, depth: int = 0) -> bool:
    """True when ``value`` is built only of exact JSON types (so ``json.dumps`` accepts it,
    ``allow_nan=False`` too).

    A fast pre-check for :func:`to_json_value`; ``False`` only means "ask ``json.dumps``".
    """
    t = type(value)
    if t in _SCALARS:
        return True
    if t is float:
        return -_INF < value < _INF  # NaN compares false
    if depth > 32:
        return False
    if t is dict:
        for k, v in value.items():
            if type(k) is not str or (type(v) not in _SCALARS and not _plain_json(v, depth + 1)):
                return False
        return True
    if t is list:
        for v in value:
            if type(v) not in _SCALARS and not _plain_json(v, depth + 1):
                return False
        return True
    return False


def to_json_value(value: Any) -> Any:
    """Best-effort JSON form of an argument or result for the DAG (never raises): a value
    ``json.dumps(allow_nan=False)`` accepts as it is; else a copy where mappings have
    ``str`` keys, sequences and sets are lists, and what has no JSON form is a string:
    its ``repr`` (``"nan"`` for NaN), ``"<circular reference>"``, or ``"<nested deeper
    than 100 levels>"``."""
    if _plain_json(value):
        return value
    try:
        json.dumps(value, allow_nan=False)
        if not nested_deeper_than(value, MAX_JSON_DEPTH):
            return value
    except (TypeError, ValueError, RecursionError):
        pass
    return _json_copy(value, 0, set())


def _json_copy(value: Any, depth: int, open_ids: set[int]) -> Any:
    """:func:`to_json_value`'s copy of ``value`` at ``depth``; ``open_ids``: the
    containers being copied around it (one of them again is a circular reference)."""
    if isinstance(value, float):
        return float(value) if -_INF < value < _INF else repr(float(value))
    if value is None or isinstance(value, (str, int)):
        return value
    container = isinstance(value, (Mapping, list, tuple, set, frozenset))
    if not container:
        return _safe_repr(value)
    if id(value) in open_ids:
        return "<circular reference>"
    if depth >= MAX_JSON_DEPTH:
        return f"<nested deeper than {MAX_JSON_DEPTH} levels>"
    open_ids.add(id(value))
    try:
        if isinstance(value, Mapping):
            return {
                k if isinstance(k, str) else _safe_str(k): _json_copy(v, depth + 1, open_ids)
                for k, v in value.items()
            }
        return [_json_copy(v, depth + 1, open_ids) for v in value]
    except Exception as exc:  # a Mapping or set whose iteration fails
        return f"<{type(value).__name__}: {type(exc).__name__}>"
    finally:
        open_ids.discard(id(value))


def _safe_repr(value: Any) -> str:
    try:
        return repr(value)
    except Exception:  # a __repr__ that raises
        return f"<{type(value).__name__} object>"


def _safe_str(value: Any) -> str:
    try:
        return str(value)
    except Exception:
        return _safe_repr(value)


#: The options of a call its node's metadata records (``step_key``: set by the durable
#: ``workflow``/``parallel`` calls, :data:`openprogram.history.STEP_KEY`).
_OPTIONS_RECORDED = ("expose", "render_range", STEP_KEY)


# In a resumed run: the step key of the last completed call that replayed here (its saved
# result returned without a node) while no node has been written since. The next node
# written here carries it (:data:`~openprogram.history.AFTER_REPLAY`) and clears it; the
# nodes after that one follow by ``seq``. Prompts place the replayed call's node of the
# earlier execution just before it. Per context: a parallel branch (a copied context)
# marks its own first node. ``None`` (the default) everywhere else.
_after_replay: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "openprogram_after_replay", default=None
)


def note_replay(step_key: str) -> None:
    """The completed call ``step_key`` replayed here: the next node written says so."""
    _after_replay.set(step_key)


def _take_replay() -> str | None:
    """The mark of the node being written (:func:`note_replay`), cleared: only the first
    node after a replay carries it."""
    replayed = _after_replay.get()
    if replayed is not None:
        _after_replay.set(None)
    return replayed


def replay_scope() -> contextvars.Token[str | None]:
    """Start an execution of a run with no replay noted yet (:func:`end_replay_scope`)."""
    return _after_replay.set(None)


def end_replay_scope(token: contextvars.Token[str | None]) -> None:
    _after_replay.reset(token)


def code_metadata(doc: str | None, options: Mapping[str, Any]) -> dict[str, Any]:
    """The metadata of a call's ``code`` node: its docstring, its ``expose``,
    ``render_range`` and ``step_key`` options, the forks of the parallel branch it runs in
    (:mod:`openprogram.branches`) and, in a resumed run, the call replayed just before it."""
    meta: dict[str, Any] = {}
    if doc:
        meta["doc"] = doc
    if options:
        for key in _OPTIONS_RECORDED:
            if options.get(key) is not None:
                meta[key] = options[key]
    forks = current_forks()
    if forks:
        meta["forks"] = [[fork, index] for fork, index in forks]
    replayed = _take_replay()
    if replayed is not None:
        meta[AFTER_REPLAY] = replayed
    return meta


def call_scope(
    name: str,
    *,
    inputs: Mapping[str, Any] | None = None,
    doc: str | None = None,
    options: Mapping[str, Any] | None = None,
    runtime: Runtime | None = None,
    writer: SessionNodeWriter | None = None,
    kind: str = "code",
) -> ContextManager[Frame]:
    """Open a frame for one call and record it as a ``code`` node.

    The body sets ``frame.extras["output"]`` (via :func:`set_output`) to the call's result;
    on exit the node's ``output`` and ``status`` are filled in. An exception marks the node
    ``error`` (``cancelled`` for ``CancelledError``/``KeyboardInterrupt``) and propagates.
    """
    return _CallScope(name, inputs, doc, options, runtime, writer, kind)


class _CallScope:
    """The context manager returned by :func:`call_scope` (a class: it is on hot paths)."""

    __slots__ = ("args", "frame", "slot", "slot_token", "started", "token", "w")

    def __init__(
        self,
        name: str,
        inputs: Mapping[str, Any] | None,
        doc: str | None,
        options: Mapping[str, Any] | None,
        runtime: Runtime | None,
        writer: SessionNodeWriter | None,
        kind: str,
    ) -> None:
        self.args = (name, inputs, doc, options, runtime, writer, kind)
        self.w: SessionNodeWriter | None = None
        self.slot: RuntimeSlot | None = None

    def __enter__(self) -> Frame:
        name, inputs, doc, options, runtime, writer, kind = self.args
        parent = _current.get()
        opts = dict(options) if options else {}
        frame = Frame(name, parent, runtime, writer, None, opts)
        self.frame = frame
        w = writer if writer is not None else current_writer()
        self.started = time.perf_counter()
        if w is not None and not frame.hidden:
            meta = code_metadata(doc, opts)
            lean = getattr(w, "_lean", None)
            meta_json = "{}"
            if meta:
                try:
                    meta_json = _dumps(meta)
                except _JSON_ERRORS:
                    lean = None  # the general path reports it
            if lean is not None and kind.__class__ is str and kind:
                # Hot path: encode once, one INSERT, no Node object.
                node_id, seq = lean.append_json(
                    w.session_id, kind, name, _nearest_node_id(parent),
                    _inputs_json(inputs), None, "running", meta_json, time.time(),
                )  # fmt: skip
            else:
                node = w.append(
                    kind,
                    name,
                    input=to_json_value(dict(inputs) if inputs else {}),
                    status="running",
                    caller_id=_nearest_node_id(parent),
                    metadata=meta,
                )
                node_id, seq = node.id, node.seq
            frame.node_id = node_id
            frame.start_seq = seq
            frame.writer = w
            self.w = w
        # after the node is written: a store error above must not leave a slot behind
        if parent is None and _slot.get() is None:  # the outermost call owns the runtime
            self.slot = RuntimeSlot()
            self.slot_token = _slot.set(self.slot)
        self.token = _current.set(frame)
        return frame

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        frame = self.frame
        w = self.w
        try:
            if w is not None and frame.node_id is not None:
                duration = round(time.perf_counter() - self.started, 6)
                if exc is None:
                    extras = frame.extras
                    status = extras.get("status", "completed")
                    lean = getattr(w, "_lean", None)
                    if lean is not None and status in _TERMINAL:
                        output = extras.get("output")
                        lean.close_node(
                            frame.node_id, status,
                            None if output is None else _value_json(output),
                            duration, time.time(),
                        )  # fmt: skip
                    else:
                        w.update(
                            frame.node_id,
                            status=status,
                            output=to_json_value(extras.get("output")),
                            metadata={"duration_s": duration},
                        )
                else:
                    status, output, meta = exit_record(exc, duration)
                    w.update(frame.node_id, status=status, output=output, metadata=meta)
        finally:
            _current.reset(self.token)
            if self.slot is not None:
                _slot.reset(self.slot_token)
                self.slot.close()


_TERMINAL = frozenset(("completed", "error", "cancelled"))


def _first_dumps(obj: Any) -> str:
    """The store's JSON encoder, imported on first use (keeps this module light)."""
    global _dumps
    from openprogram.store.jsoncodec import dumps

    _dumps = dumps
    return dumps(obj)


_dumps: Callable[[Any], str] = _first_dumps


def _first_value_dumps(obj: Any) -> str:
    """The store's encoder refusing NaN and Infinity (no valid JSON holds them), for the
    values recorded in the DAG; imported on first use."""
    global _value_dumps
    from openprogram.store.jsoncodec import make_dumps

    _value_dumps = make_dumps(allow_nan=False)
    return _value_dumps(obj)


_value_dumps: Callable[[Any], str] = _first_value_dumps
# The string encoder of the store's JSON encoder (``json.dumps``'s, ensure_ascii).
_quote: Callable[[str], str] = json.encoder.encode_basestring_ascii
_JSON_ERRORS = (TypeError, ValueError, RecursionError)


def _value_json(value: Any) -> str:
    """JSON text of ``to_json_value(value)`` (encoded directly when it already is JSON)."""
    try:
        return _value_dumps(value)
    except _JSON_ERRORS:
        return _dumps(to_json_value(value))


def _inputs_json(inputs: Mapping[str, Any] | None) -> str:
    """JSON text of a call's inputs as :func:`call_scope` records them."""
    if not inputs:
        return "{}"
    if inputs.__class__ is dict:
        try:
            return _value_dumps(inputs)
        except _JSON_ERRORS:
            pass
    return _dumps(to_json_value(dict(inputs)))


def set_output(frame: Frame, value: Any) -> Any:
    """Remember ``value`` as the result to record when ``frame`` closes; returns it."""
    frame.extras["output"] = value
    return value


push_frame: Callable[[Frame], contextvars.Token[Frame | None]] = _current.set
"""``push_frame(frame)``: make ``frame`` (already recorded by the caller) the innermost
one; undo with :func:`pop_frame`. For layers that write a frame's node rows themselves."""

pop_frame: Callable[[contextvars.Token[Frame | None]], None] = _current.reset
"""``pop_frame(token)``: undo :func:`push_frame`."""


def nearest_node_id(frame: Frame | None) -> str | None:
    """The node id of ``frame`` or its nearest recorded ancestor (a new node's caller)."""
    while frame is not None:
        if frame.node_id is not None:
            return frame.node_id
        frame = frame.parent
    return None


_nearest_node_id = nearest_node_id


def exit_record(exc: BaseException, duration: float) -> tuple[str, Any, dict[str, Any]]:
    """``(status, output, metadata)`` :func:`call_scope` records for a call ended by ``exc``.

    A call its run's pause unwound (a step awaiting a tool's approval, a pause request,
    a worker giving the run back) is ``paused`` with the pause's message as its
    ``{"paused": ...}`` output, as the run's own node; one its run's cancel unwound is
    ``cancelled``: neither failed."""
    from openprogram.durable.errors import RunCancelled, RunPaused, RunReleased

    meta = {"error_type": type(exc).__name__, "duration_s": duration}
    if isinstance(exc, (RunPaused, RunReleased)):
        message = exc.message if isinstance(exc, RunPaused) else str(exc)
        return "paused", {"paused": message}, meta
    return (
        "cancelled" if _is_cancel(exc) or isinstance(exc, RunCancelled) else "error",
        {"error": f"{type(exc).__name__}: {str(exc) or _stopped(exc)}"},
        meta,
    )


def _stopped(exc: BaseException) -> str:
    """The text of an exception that has none: what stopped the call, for a Ctrl-C or a
    SIGTERM (``cancel --kill``, ``docker stop``), which Python raises without one
    (``Terminated: stopped by SIGTERM``, not ``Terminated:``)."""
    return f"stopped by {stopped_by(exc)}" if isinstance(exc, KeyboardInterrupt) else ""


def _is_cancel(exc: BaseException) -> bool:
    import asyncio
    import concurrent.futures

    return isinstance(
        exc, (asyncio.CancelledError, concurrent.futures.CancelledError, KeyboardInterrupt)
    )


def _calls(calls: Any) -> list[dict[str, Any]]:
    return [_call(c) for c in calls]


def _call(c: Any) -> dict[str, Any]:
    out = {"id": c.id, "name": c.name, "arguments": c.arguments}
    if c.arguments_error is not None:  # unusable arguments: the model's text and the problem
        out.update(raw_arguments=c.raw_arguments, arguments_error=c.arguments_error)
    return out


def message_to_json(m: Any) -> dict[str, Any]:
    """The JSON form of a conversation message (as in an ``llm`` node's input)."""
    return _message_dict(m)


def tool_calls_to_json(calls: Any) -> list[dict[str, Any]]:
    """The JSON form of a reply's tool calls (as in an ``llm`` node's output)."""
    return _calls(calls)


def _message_dict(m: Any) -> dict[str, Any]:
    return {
        "role": m.role,
        "content": m.content,
        "tool_calls": _calls(m.tool_calls),
        "tool_call_id": m.tool_call_id,
        "name": m.name,
        "is_error": m.is_error,
    }


def request_to_json(request: ModelRequest, provider: str) -> dict[str, Any]:
    """The JSON form of a model request stored as an ``llm`` node's input.

    It holds what the model saw (messages, system, tool names and schemas, response
    format) and never any credential.
    """
    return {
        "provider": provider,
        "model": request.model_id,
        "system": request.system,
        "messages": [_message_dict(m) for m in request.messages],
        "tools": [
            {"name": t.name, "description": t.description, "parameters": t.parameters}
            for t in request.tools
        ],
        "response_format": request.response_format,
        "effort": request.effort,
    }


def response_to_json(response: ModelResponse) -> dict[str, Any]:
    """The JSON form of a model reply stored as an ``llm`` node's output."""
    return {
        "text": response.text,
        "tool_calls": _calls(response.tool_calls),
        "finish_reason": response.finish_reason,
    }


def record_llm_call(
    *,
    provider: str,
    request: ModelRequest,
    response: ModelResponse | None,
    error: BaseException | None = None,
    duration_s: float = 0.0,
) -> str | None:
    """Write one ``llm`` node for a finished model request; returns its id (or ``None``).

    No-op when no writer is in effect or the enclosing frame is hidden.
    """
    w = current_writer()
    frame = _current.get()
    if w is None or (frame is not None and frame.hidden):
        return None
    lean = getattr(w, "_lean", None)
    status = "completed" if error is None else "error"
    if lean is None:
        node = w.append(
            "llm",
            request.model_id,
            input=request_to_json(request, provider),
            output=response_to_json(response) if response is not None else {"error": str(error)},
            status=status,
            caller_id=_nearest_node_id(frame),
            metadata=_llm_meta(provider, response, error, duration_s),
        )
        return node.id
    try:  # the same JSON text as encoding the dicts above, built without them
        in_json = request_json(request, provider)
        out_json = (
            response_json(response) if response is not None else _dumps({"error": str(error)})
        )
        meta_json = _llm_meta_json(provider, response, error, duration_s)
    except _JSON_ERRORS as exc:
        raise StoreError(
            f"node {request.model_id!r}: input, output and metadata must be JSON values ({exc})"
        ) from None
    node_id: str
    node_id, _ = lean.append_json(
        w.session_id, "llm", request.model_id, _nearest_node_id(frame), in_json, out_json,
        status, meta_json, time.time(),
    )  # fmt: skip
    return node_id


def _llm_meta(
    provider: str,
    response: ModelResponse | None,
    error: BaseException | None,
    duration_s: float,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"duration_s": round(duration_s, 6), "provider": provider}
    if response is not None:
        meta["usage"] = response.usage.to_json()
        if response.request_id:
            meta["request_id"] = response.request_id
        if response.model:
            meta["response_model"] = response.model
    if error is not None:
        meta["error_type"] = type(error).__name__
    branch = current_branch()
    if branch:
        meta["branch"] = branch  # the replay stream of a parallel branch
        meta["forks"] = [[fork, index] for fork, index in current_forks()]
    replayed = _take_replay()
    if replayed is not None:
        meta[AFTER_REPLAY] = replayed
    return meta


def _llm_meta_json(
    provider: str,
    response: ModelResponse | None,
    error: BaseException | None,
    duration_s: float,
) -> str:
    """``dumps(_llm_meta(...))`` without the dict."""
    d = round(duration_s, 6)
    d_json = repr(d) if d.__class__ is float and d - d == 0 else _dumps(d)  # finite: repr
    text = f'{{"duration_s": {d_json}, "provider": {_j(provider)}'
    if response is not None:
        u = response.usage
        i, o = u.input_tokens, u.output_tokens
        if i.__class__ is int and o.__class__ is int and u.__class__.__module__ == _TYPES:
            text += f', "usage": {{"input_tokens": {i}, "output_tokens": {o}}}'
        else:
            text += f', "usage": {_dumps(u.to_json())}'
        if response.request_id:
            text += f', "request_id": {_j(response.request_id)}'
        if response.model:
            text += f', "response_model": {_j(response.model)}'
    if error is not None:
        text += f', "error_type": {_j(type(error).__name__)}'
    branch = current_branch()
    if branch:
        text += f', "branch": {_j(branch)}'
        forks = ", ".join(f"[{_j(fork)}, {index}]" for fork, index in current_forks())
        text += f', "forks": [{forks}]'
    replayed = _take_replay()
    if replayed is not None:
        text += f', "{AFTER_REPLAY}": {_j(replayed)}'
    return text + "}"


_TYPES = "openprogram.runtime.types"  # where ``Usage`` (and its ``to_json``) lives


def _j(value: Any) -> str:
    """JSON text of ``value``, as the store's encoder writes it (strings and None fast)."""
    if value.__class__ is str:
        return _quote(value)
    if value is None:
        return "null"
    return _dumps(value)


def _message_json(m: Any) -> str:
    if m.tool_calls or m.is_error is not False:
        return _dumps(_message_dict(m))
    role, content, call_id, name = m.role, m.content, m.tool_call_id, m.name
    return (
        f'{{"role": {_quote(role) if role.__class__ is str else _j(role)}, '
        f'"content": {_quote(content) if content.__class__ is str else _j(content)}, '
        f'"tool_calls": [], "tool_call_id": {"null" if call_id is None else _j(call_id)}, '
        f'"name": {"null" if name is None else _j(name)}, "is_error": false}}'
    )


def _tool_json(t: Any) -> str:
    return (
        f'{{"name": {_j(t.name)}, "description": {_j(t.description)}, '
        f'"parameters": {_j(t.parameters)}}}'
    )


def request_json(request: ModelRequest, provider: str) -> str:
    """``request_to_json(request, provider)`` as JSON text (the store's encoding)."""
    messages = ", ".join([_message_json(m) for m in request.messages])
    tools = ", ".join([_tool_json(t) for t in request.tools])
    return (
        f'{{"provider": {_j(provider)}, "model": {_j(request.model_id)}, '
        f'"system": {_j(request.system)}, "messages": [{messages}], "tools": [{tools}], '
        f'"response_format": {_j(request.response_format)}, "effort": {_j(request.effort)}}}'
    )


def response_json(response: ModelResponse) -> str:
    """``response_to_json(response)`` as JSON text (the store's encoding)."""
    calls = "[]" if not response.tool_calls else _dumps(_calls(response.tool_calls))
    return (
        f'{{"text": {_j(response.text)}, "tool_calls": {calls}, '
        f'"finish_reason": {_j(response.finish_reason)}}}'
    )
