"""``@agentic_function``: a module-level function with an Agent method's call scope.

The upstream decorator most existing code is written with::

    @agentic_function
    def summarize(text: str) -> str: ...

    @agentic_function(expose="io", render_range={"callers": 0, "subcalls": -1})
    def classify(text: str) -> str: ...

The options are the keys of the one ``method_options`` table
(:data:`openprogram.options.OPTIONS`) and are checked by the same function, so a bad
option raises the same ``OP1xx`` ``ValueError`` an ``Agent`` subclass raises (and the
analyzer reports the same finding). Each call opens the same call scope an ``Agent``
method opens (``code`` node, docstring, ``expose``/``render_range``/``system``, runtime
binding and injection, recursion limit, pre-invocation hooks); ``tool=True`` registers it
as a tool; ``resumable=True`` makes it a resumable orchestration whose direct calls run
durably (see :mod:`openprogram.durable.direct`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar, overload

from openprogram.agents import ScopedMethod
from openprogram.errors import RuleViolation, defined_in
from openprogram.options import check_method_entry
from openprogram.programs.registry import REGISTRY, Tool

__all__ = ["agentic_function"]

F = TypeVar("F", bound=Callable[..., Any])


class _FunctionScope(ScopedMethod):
    """A :class:`ScopedMethod` for a plain function: options given by the decorator."""

    def __init__(self, func: Callable[..., Any], options: dict[str, Any]) -> None:
        # The "owner" is a namespace named after the module, so the call's safe-point
        # label reads ``module.function``; it carries no runtime and no context.
        owner = type(func.__module__.rsplit(".", 1)[-1], (), {"runtime": None, "context": None})
        super().__init__(func, "static", owner)
        self._options = options

    def options_for(self, cls: type) -> dict[str, Any]:
        return dict(self._options)


def _checked(fn: Callable[..., Any], options: dict[str, Any]) -> dict[str, Any]:
    if not inspect.isfunction(fn):
        raise TypeError(
            f"@agentic_function decorates a function, got {type(fn).__name__} "
            "(inside an Agent subclass use method_options instead)"
        )
    problems = check_method_entry(fn.__name__, options, inspect.signature(fn))
    if problems:
        code, message, _path = problems[0]
        raise RuleViolation(code, message, defined_in("function", fn))
    return options


def _wrap(fn: Callable[..., Any], options: dict[str, Any]) -> Callable[..., Any]:
    scoped = _FunctionScope(fn, _checked(fn, options))
    owner = scoped.owner
    resumable = bool(options.get("resumable"))

    def call(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if resumable:
            from openprogram.durable.direct import call_durably, in_run

            if not in_run():
                return call_durably(wrapper, fn, None, args, kwargs)
        return scoped.invoke(owner, None, args, kwargs)

    wrapper: Callable[..., Any]
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            return await scoped.invoke(owner, None, args, kwargs)

        wrapper = async_wrapper
    else:

        @functools.wraps(fn)
        def sync_wrapper(*args: Any, **kwargs: Any) -> Any:
            return call(args, kwargs)

        wrapper = sync_wrapper
    attrs: dict[str, Any] = {
        "__agent_options__": dict(options),
        "method_options": dict(options),
        "as_tool": lambda: scoped.build_tool(owner, None),
        "execute": lambda **kw: scoped.build_tool(owner, None).execute(**kw),
    }
    if options.get("tool") or options.get("as_tool"):
        tool: Tool = scoped.build_tool(owner, None)
        attrs["spec"] = tool.spec
        if options.get("register_globally", True):
            REGISTRY.register(tool)
    for name, value in attrs.items():
        setattr(wrapper, name, value)
    return wrapper


@overload
def agentic_function(fn: F, /) -> F: ...


@overload
def agentic_function(fn: None = None, /, **options: Any) -> Callable[[F], F]: ...


def agentic_function(fn: Callable[..., Any] | None = None, /, **options: Any) -> Any:
    """Give ``fn`` an Agent method's call scope; ``options`` are ``method_options`` keys.

    Usable bare (``@agentic_function``) or with options
    (``@agentic_function(expose="io", tool=True)``). Invalid options raise ``ValueError``
    with the same ``OP1xx`` code and message as in ``method_options``.
    """
    if fn is None:
        return lambda f: _wrap(f, dict(options))
    if options:  # pragma: no cover - only reachable with a positional function
        raise TypeError("agentic_function(fn) takes no options; use @agentic_function(...)")
    return _wrap(fn, {})
