"""Durable execution: checkpointed ``step`` / ``workflow`` / ``parallel`` and run tasks.

Declare an orchestration resumable (``method_options = {"report": {"resumable": True}}``
on an ``Agent``, ``__agent_options__ = {"resumable": True}`` or ``@resumable`` on a
function), put external work into ``step("stable name", fn, *args, **kwargs)``, and run it
with ``openprogram run FILE.py:ENTRY`` or :func:`start_run`. See ``openprogram.store.runs`` for the
records and ``durable.runner`` for the task API.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from openprogram.durable.errors import (
    CancelUnavailable,
    DeterminismError,
    DurableError,
    PauseUnavailable,
    ProgramLoadError,
    RunNotFound,
    RunPaused,
    RunStateError,
    StepUsageError,
)

if TYPE_CHECKING:
    from openprogram.durable.steps import current_run_id, parallel, step, workflow

F = TypeVar("F", bound=Callable[..., Any])


def resumable(fn: F) -> F:
    """Mark a module-level function as a resumable orchestration (sets ``__agent_options__``).

    Called directly from Python outside a run, it runs durably: a new run in the
    configured store, its result returned, :class:`RunPaused` raised when it pauses
    (see :mod:`openprogram.durable.direct`).
    """
    opts = dict(getattr(fn, "__agent_options__", None) or {})
    opts["resumable"] = True

    @functools.wraps(fn)
    def durable_entry(*args: Any, **kwargs: Any) -> Any:
        from openprogram.durable.direct import call_durably, in_run

        if in_run():
            return fn(*args, **kwargs)
        return call_durably(durable_entry, fn, None, args, kwargs)

    durable_entry.__agent_options__ = opts  # type: ignore[attr-defined]
    return durable_entry  # type: ignore[return-value]


def __getattr__(name: str) -> Any:
    import importlib
    import importlib.util

    if name in ("current_run_id", "parallel", "step", "workflow"):
        # loaded on first use, then kept here: the run readers (``openprogram show``, the
        # language server's run views) import this package without running a step
        value = getattr(importlib.import_module("openprogram.durable.steps"), name)
        globals()[name] = value
        return value
    if importlib.util.find_spec(f"{__name__}.{name}") is not None:
        # ``from openprogram.durable import queries``: a submodule, which the import
        # system loads once this says it is not an attribute (without loading the runner,
        # its model runtime and its HTTP client, as the names below need)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if name in ("approve_run", "deny_run"):
        return getattr(importlib.import_module("openprogram.durable.approvals"), name)
    runner = importlib.import_module("openprogram.durable.runner")
    if name in runner.__all__:
        return getattr(runner, name)
    raise AttributeError(f"module 'openprogram.durable' has no attribute {name!r}")


__all__ = [
    "CancelUnavailable",
    "DeterminismError",
    "DurableError",
    "PauseUnavailable",
    "ProgramLoadError",
    "RunNotFound",
    "RunPaused",
    "RunStateError",
    "StepUsageError",
    "approve_run",
    "cancel_run",
    "current_run_id",
    "deny_run",
    "list_runs",
    "parallel",
    "pause_run",
    "requeue_run",
    "resumable",
    "resume_interrupted",
    "resume_run",
    "start_run",
    "step",
    "submit_run",
    "wait_run",
    "workflow",
]
