"""The shared tool registry (SPEC §2.4): ``@function`` tools and ``tool=True`` methods.

A :class:`Tool` wraps a callable with its registration options and is what the model
sees (``tool.spec``) and what the tool loop dispatches (``tool.execute(**kwargs)``).
Dispatch applies, in order: argument validation and conversion to the annotated types
(``validated_arguments``, shared with plain function tools), the approval requirement,
``check_fn``, the result cache, the wall-clock ``timeout`` (an async tool
is awaited under it), then head/tail truncation of the text fed back to the model.
Gates (``check_fn``, a callable ``requires_approval``) take the tool's arguments as
named parameters, converted to the types they annotate, and fail closed. Every refusal
or failure is raised as :class:`ToolError`, which the tool loop returns to the model as
an error result. An Agent method's call scope is entered in the dispatching thread and
only its body runs under the ``timeout``, as a plain function's.
"""

from __future__ import annotations

import contextvars
import hashlib
import inspect
import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openprogram.errors import ConfigError, OpenProgramError
from openprogram.programs.function_tools import (
    ToolArgumentError,
    call_with_arguments,
    check_json_schema,
    parse_docstring,
    validated_arguments,
)
from openprogram.programs.schema import INJECTED_PARAMS, build_parameters

if TYPE_CHECKING:
    from openprogram.durable.approvals import ApprovedCall
    from openprogram.scope import Frame

#: ``enter(arguments)`` of a tool whose function opens its own call scope (an Agent
#: method): the scope, entered in the dispatching thread, and the body to run in it.
ScopeEntry = Callable[
    [Mapping[str, Any]], AbstractContextManager[tuple["Frame | None", Callable[[], Any]]]
]

__all__ = [
    "DEFAULT_CACHE_TTL",
    "DEFAULT_HEAD_RATIO",
    "DEFAULT_MAX_RESULT_CHARS",
    "INJECTED_PARAMS",
    "REGISTRY",
    "Tool",
    "ToolError",
    "ToolOptions",
    "ToolRegistry",
    "approvals",
    "channel",
    "current_channel",
    "function",
    "isolated_registry",
    "register_tool",
    "resolve_tools",
    "truncate_result",
]

DEFAULT_MAX_RESULT_CHARS = 30_000
DEFAULT_HEAD_RATIO = 0.7
DEFAULT_CACHE_TTL = 300.0
DEFERRED_TOOL_NAME = "deferred_tool"
#: ``toolset="default"``: every available registered tool (as ``tools=None``).
DEFAULT_TOOLSET = "default"


class ToolError(OpenProgramError):
    """A tool call that was refused or failed; its message goes back to the model."""


@dataclass(frozen=True)
class ToolOptions:
    """Every registration option of the seed's table (plus ``expose`` / ``input``)."""

    name: str | None = None
    description: str | None = None
    parameters: Mapping[str, Any] | None = None
    label: str | None = None
    toolset: tuple[str, ...] = ()
    unsafe_in: tuple[str, ...] = ()
    check_fn: Callable[..., Any] | None = None
    requires_env: tuple[str, ...] = ()
    can_use: Callable[..., Any] | None = None
    max_result_chars: int | None = None
    persist_full: bool = False
    head_ratio: float | None = None
    requires_approval: Any = None
    cache: bool = False
    cache_ttl: float = DEFAULT_CACHE_TTL
    timeout: float | None = None
    available_if: Callable[..., Any] | None = None
    defer: bool = False
    register_globally: bool = True
    expose: str = "io"
    input: Mapping[str, Mapping[str, Any]] | None = None

    @classmethod
    def from_mapping(cls, options: Mapping[str, Any]) -> ToolOptions:
        """Options from a ``method_options`` entry or ``@function(**kw)`` (others ignored)."""
        known = {f.name for f in fields(cls)}
        kw = {k: v for k, v in options.items() if k in known and v is not None}
        for key in ("toolset", "unsafe_in", "requires_env"):
            if key in kw:
                value = kw[key]
                kw[key] = (value,) if isinstance(value, str) else tuple(value)
        return cls(**kw)


_channel: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "openprogram_tool_channel", default=None
)
Approver = Callable[["Tool", Mapping[str, Any]], bool]
_approver: contextvars.ContextVar[Approver | None] = contextvars.ContextVar(
    "openprogram_tool_approver", default=None
)


def current_channel() -> str | None:
    """The channel source of the current request (``None`` = unspecified)."""
    return _channel.get()


@contextmanager
def channel(name: str | None) -> Iterator[None]:
    """Mark requests made inside the block as coming from channel ``name``."""
    token = _channel.set(name)
    try:
        yield
    finally:
        _channel.reset(token)


@contextmanager
def approvals(approver: Approver | None) -> Iterator[None]:
    """Install ``approver(tool, arguments) -> bool`` for tools with ``requires_approval``."""
    token = _approver.set(approver)
    try:
        yield
    finally:
        _approver.reset(token)


def _call_flex(fn: Callable[..., Any], *args: Any) -> Any:
    """Call ``fn`` with as many of ``args`` as its signature takes (gates may take none)."""
    try:
        params = [
            p
            for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
        ]
    except (TypeError, ValueError):
        return fn(*args)
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return fn(*args)
    return fn(*args[: len(params)])


class _GateMismatch(Exception):
    """A gate's signature does not fit the tool's arguments."""


def _gate_arguments(gate: Callable[..., Any], arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments for ``gate``: the tool arguments its parameters name.

    Gates take the tool's arguments as named parameters (``def gate(path: str) -> bool``),
    any subset of them, or ``**kwargs`` for all. A parameter that names no argument of the
    tool (and has no default) or is positional-only does not fit.
    """
    try:
        params = list(inspect.signature(gate).parameters.values())
    except (TypeError, ValueError) as exc:
        raise _GateMismatch(f"its signature cannot be read ({exc})") from None
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return dict(arguments)
    out: dict[str, Any] = {}
    for p in params:
        if p.kind is p.VAR_POSITIONAL:
            continue
        if p.name in arguments and p.kind is not p.POSITIONAL_ONLY:
            out[p.name] = arguments[p.name]
        elif p.default is p.empty:
            known = ", ".join(arguments) or "(none)"
            raise _GateMismatch(
                f"its parameter {p.name!r} is not an argument of the tool (arguments: {known})"
            )
    return out


def _run_gate(tool: Tool, kind: str, gate: Callable[..., Any], arguments: Mapping[str, Any]) -> Any:
    """Call a ``check_fn`` / ``requires_approval`` gate; fail closed with a :class:`ToolError`.

    Each argument arrives converted to the type the gate's own parameter annotates, by
    the rule the tool's arguments follow (``validated_arguments``): ``order: Order`` gets
    an ``Order``; an unannotated (or ``dict``) parameter gets it as the model sent it."""
    name = getattr(gate, "__name__", type(gate).__name__)
    try:
        kwargs = _gate_arguments(gate, arguments)
        try:
            kwargs = validated_arguments(
                tool.name, {"properties": {key: {} for key in kwargs}}, gate, kwargs
            )
        except ToolArgumentError as exc:
            raise _GateMismatch(str(exc)) from None
    except _GateMismatch as exc:
        raise ToolError(
            f"tool {tool.name!r} was blocked: its {kind} {name} does not fit the tool's "
            f"arguments: {exc}; a gate takes the tool's arguments as named parameters, "
            "e.g. def gate(path: str) -> bool"
        ) from None
    try:
        return gate(**kwargs)
    except Exception as exc:
        raise ToolError(
            f"tool {tool.name!r} was blocked: its {kind} {name} raised {type(exc).__name__}: {exc}"
        ) from exc


def _await_result(value: Any, timeout: float | None) -> Any:
    """Run an async tool's coroutine to its result (under ``timeout``) from sync code."""
    import asyncio
    import concurrent.futures

    async def run() -> Any:
        return await asyncio.wait_for(value, timeout) if timeout is not None else await value

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(run())
    ctx = contextvars.copy_context()
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(ctx.run, asyncio.run, run()).result()


def truncate_result(text: str, max_chars: int, head_ratio: float, *, note: str = "") -> str:
    """Keep the head and tail of ``text`` (``head_ratio`` of ``max_chars`` from the head)."""
    if len(text) <= max_chars:
        return text
    head = int(max_chars * head_ratio)
    tail = max_chars - head
    dropped = len(text) - head - tail
    marker = f"\n[... {dropped} characters truncated{note} ...]\n"
    return text[:head] + marker + (text[-tail:] if tail > 0 else "")


class Tool:
    """A model-callable tool: ``spec`` for the model, ``execute(**kwargs)`` for dispatch.

    Calling the tool object directly calls the wrapped function unchanged.
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        options: ToolOptions | None = None,
        *,
        scoped: bool = False,
        signature_of: Callable[..., Any] | None = None,
        doc: str | None = None,
        enter: ScopeEntry | None = None,
    ) -> None:
        self.fn = fn
        self.options = options or ToolOptions()
        # True when ``fn`` already opens its own call scope (Agent methods); ``enter``
        # then opens that scope apart from running the body (see _dispatch).
        self.scoped = scoped
        self._enter = enter
        src = signature_of or fn
        self._src = src
        self.name: str = self.options.name or str(getattr(src, "__name__", "tool"))
        text = doc if doc is not None else inspect.getdoc(src) or ""
        self.description: str = self.options.description or parse_docstring(text)[0]
        self.doc = text
        self.label: str = self.options.label or self.name.replace("_", " ")
        self.parameters: dict[str, Any] = (
            dict(self.options.parameters)
            if self.options.parameters is not None
            else build_parameters(src, self.options.input)
        )
        check_json_schema(self.name, self.parameters)
        self.registry: ToolRegistry | None = None
        # The Agent class of a ``tool=True`` method, and the registered tools of unrelated
        # classes this one shares its name with (see ToolRegistry.register).
        self.owner: type | None = None
        self.rivals: tuple[Tool, ...] = ()
        self.clock: Callable[[], float] = time.monotonic
        self._cache: dict[str, tuple[float, str]] = {}
        self._lock = threading.Lock()
        self.__name__ = self.name
        self.__doc__ = text or None
        self.__wrapped__ = fn

    def __repr__(self) -> str:
        return f"<Tool {self.name!r}>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    @property
    def spec(self) -> dict[str, Any]:
        """The JSON-schema tool spec ``{"name", "description", "parameters"}``."""
        return {
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
        }

    # ------------------------------------------------------------------ availability
    def available(self, channel_name: str | None = None) -> bool:
        """Whether the tool is offered now (``requires_env``, ``unsafe_in``, ``can_use``)."""
        opts = self.options
        if any(not os.environ.get(var) for var in opts.requires_env):
            return False
        if channel_name is not None and channel_name in opts.unsafe_in:
            return False
        if opts.can_use is not None:
            from openprogram.context import Context

            try:
                return bool(_call_flex(opts.can_use, Context.current()))
            except Exception:
                return False
        return True

    # ------------------------------------------------------------------ dispatch
    def execute(self, **kwargs: Any) -> str:
        """Dispatch one model tool call; returns the text fed back to the model.

        Raises :class:`ToolError` (an error result for the model) when the call is
        refused, times out, has bad arguments, or the function raises.
        """
        opts = self.options
        try:  # the function gets typed values; gates their own, approvals and the cache JSON
            typed = validated_arguments(
                self.name, self.parameters, self._src, kwargs, open_kwargs=self._open_kwargs()
            )
        except ToolArgumentError as exc:
            raise ToolError(str(exc)) from None
        approved = self._check_approval(kwargs)
        if opts.check_fn is not None:
            if not _run_gate(self, "check_fn", opts.check_fn, self._gate_view(kwargs)):
                raise ToolError(f"tool {self.name!r} was blocked by its check_fn")
        key = ""
        if opts.cache:
            key = json.dumps(kwargs, sort_keys=True, default=repr)
            with self._lock:
                hit = self._cache.get(key)
            if hit is not None and hit[0] > self.clock():
                return hit[1]
        try:
            text = self._finish(self._dispatch(typed, inputs=kwargs))
        except ToolError as exc:
            if approved is not None:
                approved.record(f"error: {exc}")
            raise
        if approved is not None:  # the approval of a run it used: its result is kept
            approved.record(text)
        if opts.cache:
            with self._lock:
                self._cache[key] = (self.clock() + float(opts.cache_ttl), text)
        return text

    def _open_kwargs(self) -> bool:
        try:
            params = inspect.signature(self._src).parameters.values()
        except (TypeError, ValueError):
            return False
        return any(p.kind is p.VAR_KEYWORD for p in params)

    def _gate_view(self, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """The call's arguments with the tool's defaults filled in (what gates see)."""
        view: dict[str, Any] = {}
        try:
            for p in inspect.signature(self._src).parameters.values():
                if p.name in kwargs:
                    view[p.name] = kwargs[p.name]
                elif p.default is not p.empty and p.name not in INJECTED_PARAMS:
                    view[p.name] = p.default
        except (TypeError, ValueError):
            pass
        view.update(kwargs)
        return view

    def _check_approval(self, kwargs: Mapping[str, Any]) -> ApprovedCall | None:
        """Raise when the call may not run; inside a durable run, the run's approval it
        uses (once: it is marked executed now)."""
        need = self.options.requires_approval
        if callable(need):
            need = _run_gate(self, "requires_approval", need, self._gate_view(kwargs))
        if not need:
            return None
        approver = _approver.get()
        if approver is None:
            from openprogram.durable.approvals import decide_in_run

            # inside a durable run: pauses the run as awaiting_approval until decided
            decided = decide_in_run(self.name, kwargs)
            if decided:
                return decided
            if decided is False:
                raise ToolError(
                    f"tool {self.name!r} was denied by the user; do not retry it, "
                    "continue without it"
                )
        if approver is None or not approver(self, dict(kwargs)):
            raise ToolError(
                f"tool {self.name!r} requires approval and was not approved; "
                "do not retry it without the user's approval"
            )
        return None

    def _dispatch(self, kwargs: dict[str, Any], inputs: Mapping[str, Any] | None = None) -> Any:
        """Run the tool; a plain function gets its own ``code`` node (expose ``io``), an
        Agent method its method scope (``enter``).

        The node is opened in the calling thread and only the body runs under the
        timeout, so a timed-out or failing call is closed as ``error`` right away instead
        of staying ``running``, and a late result is not recorded.
        """
        from openprogram.scope import call_scope, current_runtime, set_output

        if self.scoped and self._enter is None:
            return self._guarded(lambda: call_with_arguments(self.fn, kwargs))
        if self._enter is not None:
            with ExitStack() as stack:
                try:
                    frame, body = stack.enter_context(self._enter(kwargs))
                except ToolError:
                    raise
                except Exception as exc:
                    raise self._failure(exc) from exc
                value = self._guarded(body)
                return set_output(frame, value) if frame is not None else value

        wanted = [p for p in self._param_names() if p in INJECTED_PARAMS]
        if wanted and any(kwargs.get(p) is None for p in wanted):
            runtime = current_runtime()
            kwargs = {**kwargs, **{p: runtime for p in wanted if kwargs.get(p) is None}}
        given = kwargs if inputs is None else inputs  # recorded as the model sent them
        recorded = {k: v for k, v in given.items() if k not in INJECTED_PARAMS}
        with call_scope(
            self.name,
            inputs=recorded,
            doc=self.doc or None,
            options={"expose": self.options.expose},
        ) as frame:
            return set_output(frame, self._guarded(lambda: call_with_arguments(self.fn, kwargs)))

    def _param_names(self) -> list[str]:
        try:
            return list(inspect.signature(self.fn).parameters)
        except (TypeError, ValueError):
            return []

    def _failure(self, exc: BaseException) -> ToolError:
        return ToolError(f"tool {self.name!r} failed: {type(exc).__name__}: {exc}")

    def _guarded(self, body: Callable[[], Any]) -> Any:
        """Run ``body()`` (under the ``timeout`` when set, in a worker thread); failures
        become :class:`ToolError`."""
        timeout = self.options.timeout
        if timeout is None:
            try:
                value = body()
                return _await_result(value, None) if inspect.isawaitable(value) else value
            except ToolError:
                raise
            except Exception as exc:
                raise self._failure(exc) from exc
        box: dict[str, Any] = {}
        ctx = contextvars.copy_context()

        def call() -> Any:
            value = body()  # an async tool is awaited under the same timeout
            return _await_result(value, timeout) if inspect.isawaitable(value) else value

        def run() -> None:
            try:
                box["value"] = ctx.run(call)
            except BaseException as exc:
                box["error"] = exc

        worker = threading.Thread(target=run, name=f"tool-{self.name}", daemon=True)
        worker.start()
        worker.join(timeout)
        if worker.is_alive():
            raise ToolError(
                f"tool {self.name!r} timed out after {timeout:g} s (its timeout); "
                "the call was abandoned"
            )
        if "error" in box:
            failure = box["error"]
            if isinstance(failure, ToolError):
                raise failure
            if isinstance(failure, TimeoutError):
                raise ToolError(
                    f"tool {self.name!r} timed out after {timeout:g} s (its timeout); "
                    "the call was cancelled"
                ) from failure
            raise self._failure(failure) from failure
        return box.get("value")

    def _finish(self, value: Any) -> str:
        from openprogram.runtime import format_tool_result

        opts = self.options
        text = format_tool_result(value)
        limit = opts.max_result_chars or DEFAULT_MAX_RESULT_CHARS
        if len(text) <= limit:
            return text
        ratio = opts.head_ratio if opts.head_ratio is not None else DEFAULT_HEAD_RATIO
        note = ""
        if opts.persist_full:
            path = self._persist(text)
            note = f"; full result saved to {path}"
        return truncate_result(text, limit, ratio, note=note)

    def _persist(self, text: str) -> Path:
        registry = self.registry or REGISTRY
        root = registry.persist_dir or _local_store() / "tool_results"
        root.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
        path = root / f"{self.name}-{digest}.txt"
        path.write_text(text, encoding="utf-8")
        return path


def _local_store() -> Path:
    """The store folder (``--store``/``$OPENPROGRAM_STORE``, as the CLI resolves it), or
    ``.openprogram`` beside a PostgreSQL store, which has no folder."""
    from openprogram.store.session_store import DEFAULT_ROOT, store_location

    where = store_location()
    return where if isinstance(where, Path) else Path(DEFAULT_ROOT)


class _DeferredTool(Tool):
    """Meta-tool offering deferred tools: fetch a schema, or call one by name."""

    def __init__(self, deferred: Sequence[Tool]) -> None:
        self.deferred = {t.name: t for t in deferred}

        def deferred_tool(name: str, arguments: dict[str, Any] | None = None) -> Any:
            return self._run(name, arguments)

        listing = "; ".join(f"{t.name}: {t.description}" for t in deferred)
        super().__init__(
            deferred_tool,
            ToolOptions(
                name=DEFERRED_TOOL_NAME,
                description=(
                    "Use a deferred tool. Call with only `name` to get its parameter schema, "
                    f"then with `name` and `arguments` to run it. Deferred tools: {listing}"
                ),
                parameters={
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "enum": sorted(self.deferred)},
                        "arguments": {"type": "object"},
                    },
                    "required": ["name"],
                },
            ),
            scoped=True,
        )

    def _run(self, name: str, arguments: dict[str, Any] | None) -> Any:
        tool = self.deferred.get(name)
        if tool is None:
            raise ToolError(f"no deferred tool named {name!r}")
        if arguments is None:
            return json.dumps(tool.spec, ensure_ascii=False)
        return tool.execute(**arguments)


_own_tools: contextvars.ContextVar[Mapping[str, Tool] | None] = contextvars.ContextVar(
    "openprogram_own_tools", default=None
)


@contextmanager
def own_tools(tools: Mapping[str, Tool]) -> Iterator[None]:
    """Inside the block, ``tools`` (an Agent's own ``tool=True`` methods during its call)
    take the place of registered tools of the same names when tools are resolved."""
    token = _own_tools.set({**(_own_tools.get() or {}), **tools})
    try:
        yield
    finally:
        _own_tools.reset(token)


def _related(a: type, b: type) -> bool:
    """Whether two Agent classes are one lineage: a subclass, or a redefinition."""
    same = (a.__module__, a.__qualname__) == (b.__module__, b.__qualname__)
    return same or issubclass(a, b) or issubclass(b, a)


def _owner_name(tool: Tool) -> str:
    owner = tool.owner
    return f"{owner.__module__}.{owner.__qualname__}" if owner is not None else tool.name


def _unambiguous(tool: Tool) -> Tool:
    """``tool`` picked from the registry, unless its name is shared by ``tool=True``
    methods of unrelated Agent classes and this is not a call of one of them."""
    if tool.rivals and (_own_tools.get() or {}).get(tool.name) is not tool:
        classes = " and ".join(_owner_name(t) for t in (tool, *tool.rivals))
        raise ConfigError(
            f"tool {tool.name!r} is ambiguous: it is a tool=True method of both {classes}; "
            "offer it from a call of one of those Agents, pass the bound method "
            "(tools=[agent.method]), or give one of them another name (method_options "
            "name=...)"
        )
    return tool


class ToolRegistry:
    """Name -> :class:`Tool`. ``REGISTRY`` is the shared, process-wide instance.

    ``tool=True`` methods of two unrelated Agent classes may share a name: the name then
    resolves, inside a call of one of those Agents, to that Agent's own method, and
    elsewhere is an error naming both classes.
    """

    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}
        self._lock = threading.Lock()
        self.persist_dir: Path | None = None

    def register(self, tool: Tool) -> Tool:
        """Add ``tool`` (replacing one of the same name) unless its ``available_if`` fails.

        A ``tool=True`` method replacing one of an unrelated Agent class keeps it as a rival
        (the name becomes ambiguous outside both classes' calls, see :meth:`resolve`)."""
        gate = tool.options.available_if
        if gate is not None:
            try:
                if not _call_flex(gate):
                    return tool
            except Exception:
                return tool
        tool.registry = self
        with self._lock:
            old = self._tools.get(tool.name)
            if old is not None and old is not tool and tool.owner is not None:
                owner = tool.owner
                tool.rivals = tuple(
                    t
                    for t in (old, *old.rivals)
                    if t.owner is not None and not _related(t.owner, owner)
                )
            self._tools[tool.name] = tool
        return tool

    def unregister(self, name: str) -> None:
        with self._lock:
            self._tools.pop(name, None)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def names(self) -> list[str]:
        return sorted(self._tools)

    def tools(self) -> list[Tool]:
        return [self._tools[n] for n in sorted(self._tools)]

    def describe(self) -> list[dict[str, Any]]:
        """Every tool with its label, toolsets and flags (for UIs and listings)."""
        return [
            {
                "name": t.name,
                "label": t.label,
                "description": t.description,
                "toolset": list(t.options.toolset),
                "defer": t.options.defer,
                "requires_approval": bool(t.options.requires_approval),
            }
            for t in self.tools()
        ]

    def snapshot(self) -> dict[str, Tool]:
        with self._lock:
            return dict(self._tools)

    def restore(self, snapshot: Mapping[str, Tool]) -> None:
        with self._lock:
            self._tools = dict(snapshot)

    def resolve(
        self,
        tools: Iterable[Any] | None = None,
        *,
        toolset: str | Sequence[str] | None = None,
        channel_name: str | None = None,
    ) -> list[Any]:
        """The tool objects to offer for one request.

        ``tools=None`` means the available registered tools (restricted to ``toolset``
        when given); a list is used as given, with strings looked up by name. Deferred
        tools are offered through one ``deferred_tool`` meta-tool.
        """
        chan = channel_name if channel_name is not None else current_channel()
        sets = (toolset,) if isinstance(toolset, str) else tuple(toolset or ())
        registered = self._visible()
        if DEFAULT_TOOLSET in sets:  # every available registered tool
            sets = ()
            tools = None if tools is None else [*tools, *map(_unambiguous, registered)]
        self._check_toolsets(sets)
        if tools is None:
            chosen: list[Any] = [
                _unambiguous(t)
                for t in registered
                if not sets or set(sets) & set(t.options.toolset)
            ]
        else:
            by_name = {t.name: t for t in registered}
            chosen = []
            for item in tools:
                if isinstance(item, str):
                    found = by_name.get(item)
                    if found is None:
                        raise ValueError(
                            f"unknown tool {item!r}; registered tools: {', '.join(self.names()) or 'none'}"
                        )
                    chosen.append(_unambiguous(found))
                else:
                    chosen.append(item)
            if sets:
                chosen.extend(
                    _unambiguous(t)
                    for t in registered
                    if set(sets) & set(t.options.toolset) and t not in chosen
                )
        offered: list[Any] = []
        deferred: list[Tool] = []
        for item in chosen:
            tool = item if isinstance(item, Tool) else getattr(item, "as_tool", lambda: None)()
            if tool is None:
                offered.append(item)
                continue
            if not tool.available(chan):
                continue
            (deferred if tool.options.defer else offered).append(tool)
        if deferred:
            offered.append(_DeferredTool(deferred))
        return offered

    def _visible(self) -> list[Tool]:
        """The registered tools as the current call sees them: the offering Agent's own
        ``tool=True`` methods in place of registered tools of the same names."""
        own = _own_tools.get() or {}
        return [own.get(t.name, t) for t in self.tools()]

    def toolsets(self) -> list[str]:
        """Names of the toolsets registered tools belong to (plus ``"default"``)."""
        names = {name for t in self.tools() for name in t.options.toolset}
        return sorted(names | {DEFAULT_TOOLSET})

    def _check_toolsets(self, sets: Sequence[str]) -> None:
        known = self.toolsets()
        for name in sets:
            if not isinstance(name, str) or name not in known:
                raise ConfigError(
                    f"unknown toolset {name!r}; known toolsets: {', '.join(known)} "
                    "(a tool joins one with @function(toolset=...) or method_options)"
                )


REGISTRY = ToolRegistry()


def register_tool(fn: Callable[..., Any], **options: Any) -> Tool:
    """Build a :class:`Tool` for ``fn`` and add it to the registry (see ``@function``)."""
    tool = fn if isinstance(fn, Tool) else Tool(fn, ToolOptions.from_mapping(options))
    if isinstance(fn, Tool) and options:
        tool = Tool(fn.fn, replace(fn.options, **ToolOptions.from_mapping(options).__dict__))
    if tool.options.register_globally:
        REGISTRY.register(tool)
    return tool


def function(fn: Callable[..., Any] | None = None, **options: Any) -> Any:
    """Register a plain function as a model-callable tool.

    ``@function`` or ``@function(name=..., timeout=..., cache=True, ...)`` with any option
    of the registration table. Returns the :class:`Tool` (still callable like ``fn``).
    """
    unknown = set(options) - {f.name for f in fields(ToolOptions)}
    if unknown:
        from openprogram.options import did_you_mean

        key = sorted(unknown)[0]
        best = did_you_mean(key, [f.name for f in fields(ToolOptions)])
        hint = f"; did you mean {best!r}?" if best else ""
        raise TypeError(f"@function got an unknown option {key!r}{hint}")

    def decorate(f: Callable[..., Any]) -> Tool:
        return register_tool(f, **options)

    return decorate(fn) if fn is not None else decorate


def resolve_tools(
    tools: Iterable[Any] | None = None,
    *,
    toolset: str | Sequence[str] | None = None,
    channel_name: str | None = None,
) -> list[Any]:
    """:meth:`ToolRegistry.resolve` on the shared registry."""
    return REGISTRY.resolve(tools, toolset=toolset, channel_name=channel_name)


@contextmanager
def isolated_registry() -> Iterator[ToolRegistry]:
    """Snapshot the shared registry and restore it on exit (for tests)."""
    snap = REGISTRY.snapshot()
    persist = REGISTRY.persist_dir
    try:
        yield REGISTRY
    finally:
        REGISTRY.restore(snap)
        REGISTRY.persist_dir = persist
