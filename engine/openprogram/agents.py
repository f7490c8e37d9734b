"""``Agent``: reusable model settings plus automatic call scopes for its methods.

Settings resolve as class defaults < instance settings < call arguments. Every ordinary
instance method, staticmethod and classmethod of a subclass (``_helpers`` included;
dunders, generators and turn entries excluded) is wrapped at class creation so that each
call opens a call scope: a ``code`` node on entry (docstring in ``metadata.doc``), the
output/status on exit, the method's ``method_options`` applied (``expose``,
``render_range``, ``system``), the Agent's runtime bound (else the caller's, else one
created for the outermost call and closed when it returns), legacy
``runtime``/``exec_runtime``/``review_runtime`` parameters injected, self-recursion
limited to 5 nested calls, and pre-invocation hooks run first. ``tool=True`` methods are
registered in :mod:`openprogram.programs`.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from openprogram.context import Context
from openprogram.errors import RuleViolation, defined_in
from openprogram.options import check_method_options, merge_method_options, tool_methods
from openprogram.programs.function_tools import call_with_arguments, split_arguments
from openprogram.programs.registry import REGISTRY, Tool, ToolOptions, own_tools
from openprogram.safepoints import checkpoint
from openprogram.scope import (
    ENTRY_EXTRA,
    Frame,
    call_scope,
    current_frame,
    pop_frame,
    push_frame,
    runtime_for_call,
    set_output,
)

if TYPE_CHECKING:
    from openprogram.runtime.runtime import Runtime

__all__ = [
    "MAX_SELF_RECURSION",
    "Agent",
    "AgentSpec",
    "Invocation",
    "ScopedMethod",
    "add_pre_invocation_hook",
    "remove_pre_invocation_hook",
]

MAX_SELF_RECURSION = 5
RUNTIME_PARAMS = ("runtime", "exec_runtime", "review_runtime")
SETTINGS = ("model", "instructions", "context", "tools", "runtime", "effort")
CALL_OPTIONS = ("toolset", "choices", "max_iterations", "timeout_s")
# Entry points that are never wrapped (turn entries handle their own scopes).
NOT_SCOPED = frozenset(
    {"arun", "from_spec", "run_turn", "arun_turn", "resume_turn", "aresume_turn"}
)


class _Unset:
    def __repr__(self) -> str:
        return "<unset>"


_UNSET: Any = _Unset()


@dataclass(frozen=True)
class Invocation:
    """What a pre-invocation hook sees: the method about to run and its arguments."""

    name: str
    qualname: str
    arguments: Mapping[str, Any]
    owner: Any


Hook = Callable[[Invocation], Any]
_HOOKS: list[Hook] = []


def add_pre_invocation_hook(hook: Hook) -> Hook:
    """Run ``hook(invocation)`` at the start of every scoped call (it may raise
    ``CancelledError`` to stop the call before anything is recorded). Returns ``hook``."""
    if not callable(hook):
        raise TypeError(f"a pre-invocation hook must be callable, got {type(hook).__name__}")
    _HOOKS.append(hook)
    return hook


def remove_pre_invocation_hook(hook: Hook) -> None:
    """Remove a hook added with :func:`add_pre_invocation_hook` (no error if absent)."""
    try:
        _HOOKS.remove(hook)
    except ValueError:
        pass


@dataclass(frozen=True)
class AgentSpec:
    """Stored Agent configuration usable with :meth:`Agent.from_spec`."""

    model: str | None = None
    instructions: str | None = None
    tools: Sequence[Any] | None = None
    effort: str | None = None
    toolset: Any = None


def _is_runtime(value: Any) -> bool:
    return value is not None and hasattr(value, "exec")


class ScopedMethod:
    """Descriptor that wraps one Agent method in a call scope."""

    def __init__(self, func: Callable[..., Any], kind: str, owner: type) -> None:
        self.func = func
        self.kind = kind  # "instance" | "static" | "class"
        self.owner = owner
        self.name: str = func.__name__
        self.qualname: str = getattr(func, "__qualname__", self.name)
        self.doc = inspect.getdoc(func)
        self.signature = inspect.signature(func)
        self.is_async = inspect.iscoroutinefunction(func)
        self.injected = tuple(p for p in self.signature.parameters if p in RUNTIME_PARAMS)
        functools.update_wrapper(self, func)

    def __repr__(self) -> str:
        return f"<scoped {self.kind} method {self.qualname}>"

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        cls = owner if owner is not None else type(instance)
        if self.kind == "static":
            return BoundScoped(self, None, cls)
        if self.kind == "class":
            return BoundScoped(self, cls, cls)
        if instance is None:
            return self
        return BoundScoped(self, instance, type(instance))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Unbound call (``Class.method(instance, ...)``)."""
        if self.kind == "instance":
            if not args:
                raise TypeError(f"{self.qualname}() missing its instance argument")
            return BoundScoped(self, args[0], type(args[0]))(*args[1:], **kwargs)
        return self.__get__(None, self.owner)(*args, **kwargs)

    # ------------------------------------------------------------------ invocation
    def options_for(self, cls: type) -> dict[str, Any]:
        merged: Mapping[str, Mapping[str, Any]] = getattr(cls, "_op_method_options", {})
        return dict(merged.get(self.name, {}))

    @contextmanager
    def _scope(
        self, cls: type, bound: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Iterator[tuple[Any, tuple[Any, ...], dict[str, Any]]]:
        opts = self.options_for(cls)
        is_tool = bool(opts.get("tool") or opts.get("as_tool"))
        call_args = (bound, *args) if self.kind != "static" else args
        try:  # partial: a required runtime parameter is injected below
            ba = self.signature.bind_partial(*call_args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{self.qualname}(): {exc}") from None
        missing = [p for p in self.injected if ba.arguments.get(p) is None]
        unbound = [
            p.name
            for p in self.signature.parameters.values()
            if p.name not in ba.arguments
            and p.name not in missing
            and p.default is p.empty
            and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]
        if unbound:
            raise TypeError(f"{self.qualname}(): missing a required argument: {unbound[0]!r}")
        arguments = {
            k: v
            for i, (k, v) in enumerate(ba.arguments.items())
            if not (i == 0 and self.kind != "static")
        }
        invocation = Invocation(self.name, self.qualname, dict(arguments), bound)
        for hook in list(_HOOKS):
            hook(invocation)
        self._check_recursion()
        checkpoint("call.started", name=f"{cls.__name__}.{self.name}")  # turn safe point
        holder = bound if self.kind != "static" else cls
        own = getattr(holder, "runtime", None)
        runtime = own if _is_runtime(own) else None  # else the enclosing call's (inherited)
        agent_ctx = getattr(holder, "context", None)
        agent_ctx = agent_ctx if isinstance(agent_ctx, Context) else None
        parent_ctx = agent_ctx if agent_ctx is not None else Context.current()
        with ExitStack() as stack:
            scope_opts = {
                "expose": opts.get("expose") or ("io" if is_tool else "full"),
                "render_range": opts.get("render_range"),
            }
            if opts.get("system") is not None:
                scope_opts["system"] = opts["system"]
            recorded = {k: v for k, v in arguments.items() if k not in self.injected}
            writer = parent_ctx.prepare_session() if parent_ctx is not None else None
            frame = _adopt_entry_frame(self, bound, runtime, scope_opts, stack)
            if frame is None:
                frame = stack.enter_context(
                    call_scope(
                        self.name,
                        inputs=recorded,
                        doc=self.doc,
                        options=scope_opts,
                        runtime=runtime,
                        writer=writer,
                    )
                )
            frame.extras["op_method"] = self
            frame.extras["op_agent"] = holder  # see enclosing_agent_request()
            if self.kind != "static":
                stack.enter_context(offering(bound))
            if missing:  # legacy runtime parameters: this call's runtime
                injected = runtime if runtime is not None else runtime_for_call()
                for p in missing:
                    ba.arguments[p] = injected
            bound_ctx = Context(parent=parent_ctx, call_id=frame.node_id)
            stack.enter_context(bound_ctx.bind())
            yield frame, ba.args, ba.kwargs

    def _check_recursion(self) -> None:
        """Refuse the call that would re-enter this method more than
        :data:`MAX_SELF_RECURSION` times: ``depth`` counts its calls already active, so
        the outer call plus 5 nested ones run and the 6th nested one raises."""
        depth = 0
        frame = current_frame()
        while frame is not None:
            if frame.extras.get("op_method") is self:
                depth += 1
            frame = frame.parent
        if depth > MAX_SELF_RECURSION:
            raise RecursionError(
                f"{self.qualname} called itself more than {MAX_SELF_RECURSION} levels deep; "
                "restructure the recursion as a loop or a separate method"
            )

    def invoke(self, cls: type, bound: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if self.is_async:
            return self._ainvoke(cls, bound, args, kwargs)
        if self.options_for(cls).get("resumable"):
            from openprogram.durable.direct import call_durably, in_run

            if not in_run():  # a direct call from Python: run durably (a new run)
                public = self.__get__(bound, cls)
                return call_durably(public, self.func, bound, args, kwargs, owner=cls)
        with self._scope(cls, bound, args, kwargs) as (frame, a, kw):
            return set_output(frame, self.func(*a, **kw))

    async def _ainvoke(
        self, cls: type, bound: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        with self._scope(cls, bound, args, kwargs) as (frame, a, kw):
            return set_output(frame, await self.func(*a, **kw))

    @contextmanager
    def _served(
        self, cls: type, receiver: Any, arguments: Mapping[str, Any]
    ) -> Iterator[tuple[Frame | None, Callable[[], Any]]]:
        """A tool dispatch of this method with the model's ``arguments``: its call scope,
        entered here (the dispatching thread), and the body to run in it, which the tool
        runs under its ``timeout`` as it runs a plain function (a coroutine for an async
        method). A resumable method runs as a whole (its run keeps its own records)."""
        public = self.__get__(receiver, cls)
        args, kwargs = split_arguments(public, arguments)
        if self.options_for(cls).get("resumable"):
            yield None, lambda: public(*args, **kwargs)
            return
        bound = public.__self__
        with self._scope(public._cls, bound, args, kwargs) as (frame, a, kw):
            yield frame, lambda: self.func(*a, **kw)

    # ------------------------------------------------------------------ tools
    @property
    def spec(self) -> dict[str, Any]:
        """JSON-schema tool spec of this method on its defining class."""
        return self.build_tool(self.owner, None).spec

    def build_tool(self, cls: type, target: Callable[[], Any] | None) -> Tool:
        """A :class:`Tool` for this method on ``cls``; ``target()`` gives the receiver."""
        opts = self.options_for(cls)
        opts.setdefault("expose", "io")

        def dispatch(**kwargs: Any) -> Any:
            receiver = target() if target is not None else None
            return call_with_arguments(self.__get__(receiver, cls), kwargs)

        def enter(
            arguments: Mapping[str, Any],
        ) -> AbstractContextManager[tuple[Frame | None, Callable[[], Any]]]:
            return self._served(cls, target() if target is not None else None, arguments)

        tool = Tool(
            dispatch,
            ToolOptions.from_mapping(opts),
            scoped=True,
            signature_of=_unbound_view(self.func, self.kind),
            doc=self.doc or "",
            enter=enter,
        )
        if opts.get("name") is None:
            tool.name = tool.__name__ = self.name
        return tool


def _adopt_entry_frame(
    method: ScopedMethod,
    bound: Any,
    runtime: Runtime | None,
    options: Mapping[str, Any],
    stack: ExitStack,
) -> Frame | None:
    """When this call is the entry of a run (``openprogram run``), the run already wrote
    its node: continue in a frame for that node instead of writing a second one."""
    parent = current_frame()
    entry = parent.extras.get(ENTRY_EXTRA) if parent is not None else None
    if (
        parent is None
        or getattr(entry, "__func__", None) is not method.func
        or getattr(entry, "__self__", None) is not (bound if method.kind != "static" else None)
        or parent.extras.get("op_entry_adopted")
    ):
        return None
    parent.extras["op_entry_adopted"] = True
    frame = Frame(
        parent.name,
        parent,
        runtime,
        parent.writer,
        parent.node_id,
        {**parent.options, **options},
        parent.start_seq,
    )
    if parent.writer is not None and parent.node_id is not None and method.doc:
        parent.writer.update(parent.node_id, metadata={"doc": method.doc})
    token = push_frame(frame)
    stack.callback(pop_frame, token)
    return frame


def _unbound_view(func: Callable[..., Any], kind: str) -> Callable[..., Any]:
    """``func`` with the receiver parameter dropped from its signature (for schemas)."""
    if kind == "static":
        return func
    sig = inspect.signature(func)
    params = list(sig.parameters.values())[1:]

    @functools.wraps(func)
    def view(*args: Any, **kwargs: Any) -> Any:  # pragma: no cover - schema only
        raise NotImplementedError

    view.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    hints = dict(getattr(func, "__annotations__", {}))
    first = next(iter(sig.parameters), None)
    hints.pop(first or "", None)
    view.__annotations__ = hints
    return view


class BoundScoped:
    """A scoped method bound to its receiver: callable, with ``spec`` and ``execute``."""

    def __init__(self, method: ScopedMethod, receiver: Any, cls: type) -> None:
        self._method = method
        self.__self__ = receiver
        self._cls = cls
        self.__func__ = method.func
        self.__wrapped__ = method.func
        self.__name__ = method.name
        self.__qualname__ = method.qualname
        self.__doc__ = method.func.__doc__
        self.__module__ = getattr(method.func, "__module__", __name__)

    def __repr__(self) -> str:
        return f"<bound scoped method {self.__qualname__} of {self.__self__!r}>"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, BoundScoped)
            and other._method is self._method
            and other.__self__ is self.__self__
        )

    def __hash__(self) -> int:
        return hash((id(self._method), id(self.__self__)))

    @property
    def __signature__(self) -> inspect.Signature:
        sig = self._method.signature
        params = list(sig.parameters.values())
        if self._method.kind != "static":
            params = params[1:]
        return sig.replace(parameters=params)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._method.invoke(self._cls, self.__self__, args, kwargs)

    @property
    def method_options(self) -> dict[str, Any]:
        """The merged ``method_options`` entry of this method."""
        return self._method.options_for(self._cls)

    def as_tool(self) -> Tool:
        """This bound method as a :class:`Tool` (its registration options applied)."""
        receiver = self.__self__
        return self._method.build_tool(self._cls, lambda: receiver)

    @property
    def spec(self) -> dict[str, Any]:
        """JSON-schema tool spec ``{"name", "description", "parameters"}``."""
        return self.as_tool().spec

    def execute(self, **kwargs: Any) -> Any:
        """Call with model-provided keyword arguments (tool dispatch rules applied)."""
        return self.as_tool().execute(**kwargs)


def _method_signatures(cls: type) -> dict[str, inspect.Signature | Sequence[str]]:
    out: dict[str, inspect.Signature | Sequence[str]] = {}
    for klass in reversed(cls.__mro__):
        for name, value in vars(klass).items():
            if name.startswith("__") and name.endswith("__"):
                continue
            func = value.func if isinstance(value, ScopedMethod) else value
            if isinstance(func, (staticmethod, classmethod)):
                func = func.__func__
            if inspect.isfunction(func):
                try:
                    out[name] = inspect.signature(func)
                except (TypeError, ValueError):
                    out[name] = ["**kwargs"]
    return out


def _merged_options(cls: type) -> tuple[dict[str, dict[str, Any]], set[str]]:
    """``method_options`` merged along the MRO, and the methods bases made tools."""
    bases = [vars(klass).get("method_options") for klass in reversed(cls.__mro__[1:])]
    base_tools = tool_methods(merge_method_options(bases))
    return merge_method_options([*bases, vars(cls).get("method_options")]), base_tools


def _wrap_members(cls: type) -> None:
    for name, value in list(vars(cls).items()):
        if (name.startswith("__") and name.endswith("__")) or name in NOT_SCOPED:
            continue
        if isinstance(value, staticmethod):
            kind, func = "static", value.__func__
        elif isinstance(value, classmethod):
            kind, func = "class", value.__func__
        elif inspect.isfunction(value):
            kind, func = "instance", value
        else:
            continue
        if inspect.isgeneratorfunction(func) or inspect.isasyncgenfunction(func):
            continue
        setattr(cls, name, ScopedMethod(func, kind, cls))


def _register_tools(cls: type) -> None:
    tools: dict[str, Tool] = {}
    for name, entry in cls._op_method_options.items():  # type: ignore[attr-defined]
        if not (entry.get("tool") or entry.get("as_tool")):
            continue
        member = inspect.getattr_static(cls, name, None)
        if not isinstance(member, ScopedMethod):
            continue
        target: Callable[[], Any] | None
        if member.kind == "instance":
            target = functools.partial(_default_instance, cls)
        elif member.kind == "class":
            target = functools.partial(_identity, cls)
        else:
            target = None
        tool = member.build_tool(cls, target)
        tool.owner = cls
        tools[name] = tool
        if entry.get("register_globally", True):
            REGISTRY.register(tool)
    cls._op_tools = tools  # type: ignore[attr-defined]


def _identity(value: Any) -> Any:
    return value


_INSTANCES_LOCK = threading.Lock()
_offerers: contextvars.ContextVar[tuple[Any, ...]] = contextvars.ContextVar(
    "openprogram_offerers", default=()
)


@contextmanager
def offering(instance: Any) -> Iterator[None]:
    """Mark ``instance`` as the Agent whose call offers tools inside the block: its class's
    registered ``tool=True`` methods are offered in place of same-named registered tools
    (another class's), and its instance methods are served by it."""
    cls = instance if isinstance(instance, type) else type(instance)
    own = {
        name: tool
        for name, tool in getattr(cls, "_op_tools", {}).items()
        if tool.options.register_globally and tool.registry is not None
    }
    token = _offerers.set((*_offerers.get(), instance))
    try:
        with own_tools(own):
            yield
    finally:
        _offerers.reset(token)


def _default_instance(cls: type) -> Any:
    """The instance serving a registered ``tool=True`` method of ``cls`` wherever it is
    offered (a bare ``agent()``, another Agent's call): the innermost Agent of that class
    whose call is running, else the most recently constructed instance that still exists,
    else a new default one."""
    for obj in reversed(_offerers.get()):
        if isinstance(obj, cls):
            return obj
    for ref in reversed(cls.__dict__.get("_op_instances", ())):
        obj = ref()
        if obj is not None:
            return obj
    return cls()


def _request_context(holder: Any) -> Context | None:
    """The Context a request of this Agent (or Agent class) sends: the current Context
    when it descends from the Agent's (inside its method), else the Agent's, else the
    current one."""
    ctx = getattr(holder, "context", None)
    current = Context.current()
    if ctx is None or (current is not None and current.descends_from(ctx)):
        ctx = current
    return ctx


def enclosing_agent_request() -> tuple[str | None, Context | None, str | None] | None:
    """``(system, context, model)`` that ``self(...)`` sends from the Agent method
    enclosing the current call (the nearest one), so that its other requests
    (``decision.make``, ``route``, control-flow judgements) carry the same instructions
    and Context and go to the same model; ``None`` outside any Agent method."""
    frame = current_frame()
    while frame is not None:
        holder = frame.extras.get("op_agent")
        if holder is not None:
            from openprogram.agentic_programming.calls import _system_for

            instructions = getattr(holder, "instructions", None)
            model = getattr(holder, "model", None)
            return (
                _system_for(None, instructions),
                _request_context(holder),
                model if isinstance(model, str) else None,
            )
        frame = frame.parent
    return None


class Agent:
    """Reusable model settings; calling the instance runs :func:`agent`.

    ``Agent(model=, instructions=, context=, tools=, runtime=, effort=, **options)``
    overrides the class defaults; call arguments override both. ``options`` are
    ``toolset``, ``choices``, ``max_iterations`` and ``timeout_s``. Constructing makes
    no model request and opens no session.
    """

    model: str | None = None
    instructions: str | None = None
    context: Context | None = None
    tools: Sequence[Any] | None = None
    runtime: Runtime | None = None
    effort: str | None = None
    toolset: Any = None
    choices: Any = None
    max_iterations: int | None = None
    timeout_s: float | None = None
    method_options: ClassVar[Mapping[str, Mapping[str, Any]]] = {}
    _op_method_options: ClassVar[dict[str, dict[str, Any]]] = {}
    _op_tools: ClassVar[dict[str, Tool]] = {}
    # Weak references to the instances of each class (set per class in __new__).
    _op_instances: ClassVar[list[weakref.ref[Agent]]]
    _op_instances_kept: ClassVar[int]

    add_pre_invocation_hook = staticmethod(add_pre_invocation_hook)
    remove_pre_invocation_hook = staticmethod(remove_pre_invocation_hook)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        merged, base_tools = _merged_options(cls)
        own = vars(cls).get("method_options")
        if own is not None:
            problems = check_method_options(own, _method_signatures(cls), tool_methods=base_tools)
            if problems:
                code, message, _path = problems[0]
                raise RuleViolation(code, message, defined_in("class", cls))
        cls._op_method_options = merged
        _wrap_members(cls)
        _register_tools(cls)

    def __new__(cls, *args: Any, **kwargs: Any) -> Agent:
        obj = super().__new__(cls)
        with _INSTANCES_LOCK:  # the instances of this very class, oldest first
            refs = cls.__dict__.get("_op_instances")
            if refs is None:
                refs = cls._op_instances = []
            refs.append(weakref.ref(obj))
            if len(refs) >= 2 * cls.__dict__.get("_op_instances_kept", 8):  # drop dead refs
                refs[:] = [r for r in refs if r() is not None]
                cls._op_instances_kept = max(len(refs), 8)
        return obj

    def __init__(
        self,
        model: str | None = _UNSET,
        instructions: str | None = _UNSET,
        context: Context | None = _UNSET,
        tools: Sequence[Any] | None = _UNSET,
        runtime: Runtime | None = _UNSET,
        effort: str | None = _UNSET,
        **options: Any,
    ) -> None:
        given = {
            "model": model,
            "instructions": instructions,
            "context": context,
            "tools": tools,
            "runtime": runtime,
            "effort": effort,
        }
        for key in options:
            if key not in CALL_OPTIONS:
                raise TypeError(
                    f"{type(self).__name__}() got an unknown option {key!r}; options are "
                    f"{', '.join(SETTINGS + CALL_OPTIONS)}"
                )
        given.update(options)
        if given["context"] not in (_UNSET, None) and not isinstance(given["context"], Context):
            raise TypeError(f"context must be a Context, got {type(given['context']).__name__}")
        for key, value in given.items():
            if value is not _UNSET:
                setattr(self, key, value)

    @classmethod
    def from_spec(cls, spec: Any, **overrides: Any) -> Agent:
        """An Agent configured from a stored spec (mapping or object); no entry is saved."""
        settings: dict[str, Any] = {}
        for key in SETTINGS + CALL_OPTIONS:
            value = spec.get(key) if isinstance(spec, Mapping) else getattr(spec, key, None)
            if value is not None:
                settings[key] = value
        if "instructions" not in settings:
            alt = spec.get("system") if isinstance(spec, Mapping) else getattr(spec, "system", None)
            if alt is not None:
                settings["instructions"] = alt
        settings.update(overrides)
        return cls(**settings)

    def _call_settings(self, overrides: Mapping[str, Any]) -> dict[str, Any]:
        ctx = _request_context(self)
        settings: dict[str, Any] = {
            "model": self.model,
            "effort": self.effort,
            "tools": self.tools,
            "toolset": self.toolset,
            "choices": self.choices,
            "runtime": self.runtime,
            "instructions": self.instructions,
            "context": ctx,
            "max_iterations": 20 if self.max_iterations is None else self.max_iterations,
            "timeout_s": self.timeout_s,
        }
        for key, value in overrides.items():
            if value is not _UNSET:
                settings[key] = value
        return settings

    def __call__(
        self,
        content: str | list[dict[str, Any]],
        *,
        model: str | None = _UNSET,
        effort: str | None = _UNSET,
        tools: Sequence[Any] | None = _UNSET,
        toolset: Any = _UNSET,
        choices: Any = _UNSET,
        runtime: Runtime | None = _UNSET,
        system: str | None = None,
        max_iterations: int = _UNSET,
        timeout_s: float | None = _UNSET,
        context: Context | None = _UNSET,
    ) -> Any:
        """Run :func:`agent` with this Agent's settings (call arguments win).

        Runtime: ``runtime=``, else the Agent's, else the enclosing call's, else one
        created for this call and closed when it returns. This Agent's ``tool=True``
        methods offered in the call are served by this instance.
        """
        from openprogram.agentic_programming.calls import _run

        settings = self._call_settings(
            {
                "model": model,
                "effort": effort,
                "tools": tools,
                "toolset": toolset,
                "choices": choices,
                "runtime": runtime,
                "max_iterations": max_iterations,
                "timeout_s": timeout_s,
                "context": context,
            }
        )
        with offering(self):
            return _run(content, system=system, **settings)

    def run_turn(self, request: Any, **options: Any) -> Any:
        """Run one conversation turn (see :func:`openprogram.turns.run_turn`)."""
        from openprogram.turns import run_turn

        return run_turn(self, request, **options)

    async def arun_turn(self, request: Any, **options: Any) -> Any:
        """Async :meth:`run_turn` with cooperative cancellation."""
        from openprogram.turns import arun_turn

        return await arun_turn(self, request, **options)

    def resume_turn(self, continuation: Any, **options: Any) -> Any:
        """Resume a paused turn from its continuation."""
        from openprogram.turns import resume_turn

        return resume_turn(self, continuation, **options)

    async def aresume_turn(self, continuation: Any, **options: Any) -> Any:
        """Async :meth:`resume_turn`."""
        from openprogram.turns import aresume_turn

        return await aresume_turn(self, continuation, **options)

    async def arun(
        self,
        content: str | list[dict[str, Any]],
        *,
        model: str | None = _UNSET,
        effort: str | None = _UNSET,
        tools: Sequence[Any] | None = _UNSET,
        toolset: Any = _UNSET,
        choices: Any = _UNSET,
        runtime: Runtime | None = _UNSET,
        system: str | None = None,
        max_iterations: int = _UNSET,
        timeout_s: float | None = _UNSET,
        context: Context | None = _UNSET,
    ) -> Any:
        """Async :meth:`__call__` (same options)."""
        import asyncio

        return await asyncio.to_thread(
            self.__call__,
            content,
            model=model,
            effort=effort,
            tools=tools,
            toolset=toolset,
            choices=choices,
            runtime=runtime,
            system=system,
            max_iterations=max_iterations,
            timeout_s=timeout_s,
            context=context,
        )
