"""Direct calls of resumable functions run durably (as DBOS runs a workflow function).

Calling a resumable orchestration — an ``Agent`` method with ``{"resumable": True}``, a
``@resumable`` function or an ``@agentic_function(resumable=True)`` — from ordinary
Python, outside any run, starts a run in the configured store (``OPENPROGRAM_STORE`` or
the default root) exactly as ``openprogram run`` would: the call returns the run's
result, raises :class:`RunPaused` (with ``run_id`` and ``step``) when the run pauses,
and re-raises the orchestration's own exception when it fails. Inside a run (or a step)
the call is an ordinary nested call. Resume such a run with ``openprogram resume RUN_ID``:
a function is found again by its module-level name, a method by ``Class.method`` on a
new default-constructed instance of its class — unless ``PROGRAM_ENTRIES`` lists that
method of that very instance (``smart = Smart(scale=7).report``): the run is recorded
under the listed name, as ``openprogram run FILE:smart`` records it, and resumes on it.
"""

from __future__ import annotations

import contextvars
import inspect
import json
import os
import sys
import types
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from hashlib import sha256
from pathlib import Path
from typing import Any

from openprogram.contract.runs import RunStatus
from openprogram.durable.errors import (
    DurableError,
    LeaseLost,
    RunCancelled,
    RunPaused,
    RunReleased,
    RunStateError,
    StepUsageError,
)
from openprogram.durable.steps import current_run_id, result_json
from openprogram.entry_args import call_by_name
from openprogram.programs.loader import (
    EntryError,
    ProgramEntry,
    entry_for,
    is_program_module,
    load_program,
    parse_entry_ref,
    scan_entries,
)

__all__ = [
    "adopted_runs",
    "adopting_runs",
    "call_durably",
    "call_identity",
    "in_run",
    "load_direct_entry",
]

# call identity -> run id: runs a resumed turn hands back to the same tool call
_adopted: contextvars.ContextVar[Mapping[str, str] | None] = contextvars.ContextVar(
    "openprogram_adopted_runs", default=None
)

_INJECTED = ("runtime", "exec_runtime", "review_runtime")


def in_run() -> bool:
    """Whether the caller runs inside a durable run (or one of its steps)."""
    return current_run_id() is not None


def _listed_entry(module: types.ModuleType, target: Any, instance: Any) -> ProgramEntry | None:
    """The entry ``PROGRAM_ENTRIES`` of ``module`` lists for a direct call of ``target``
    (bound to ``instance``, for a method): the listed object itself, or the same method
    of the same instance — a listed bound method (``smart = Smart().report``) is bound
    anew by each access, ``smart(...)`` included. Its run is recorded under that entry's
    name, as ``openprogram run FILE:smart`` records it, so a resume finds that instance
    again (not a new default-constructed one)."""
    func = getattr(target, "__func__", None)
    for entry in _listed(module).values():
        if entry.target is target:
            return entry
        if (
            instance is not None
            and entry.instance is instance
            and func is not None
            and getattr(entry.target, "__func__", None) is func
        ):
            return entry
    return None


def _entry_ref(module: types.ModuleType, name: str) -> str:
    """The ``FILE.py:NAME`` (a Program file) or ``MODULE:NAME`` a direct call records."""
    if module.__name__ == "__main__" or is_program_module(module.__name__):
        path = getattr(module, "__file__", None)
        if not path:
            raise StepUsageError(
                f"{name} cannot run durably: its module has no source file "
                "(define it in a .py file)"
            )
        return f"{Path(path).resolve()}:{name}"
    return f"{module.__name__}:{name}"


def _listed(module: types.ModuleType) -> dict[str, ProgramEntry]:
    try:
        return scan_entries(module)[0]  # another entry's problem is not this call's
    except EntryError:
        return {}


def _keyword_arguments(
    fn: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> dict[str, Any]:
    sig = inspect.signature(fn)
    call_args = (instance, *args) if instance is not None else args
    try:
        ba = sig.bind(*call_args, **kwargs)
    except TypeError as exc:
        raise TypeError(f"{fn.__qualname__}(): {exc}") from None
    out: dict[str, Any] = {}
    for i, (name, value) in enumerate(ba.arguments.items()):
        param = sig.parameters[name]
        if (i == 0 and instance is not None) or name in _INJECTED:
            continue
        if param.kind is inspect.Parameter.VAR_POSITIONAL:
            if value:
                raise StepUsageError(
                    f"{fn.__qualname__} cannot run durably with extra positional arguments "
                    f"(*{name}); a run's arguments are keyword arguments"
                )
        elif param.kind is inspect.Parameter.VAR_KEYWORD:
            out.update(value)
        else:  # positional-only ones too: a run records its arguments by name
            out[name] = value
    return out


def call_identity(qualname: str, arguments: Mapping[str, Any]) -> str:
    """``qualname:hash`` of a direct durable call (its function and JSON arguments)."""
    text = json.dumps(dict(arguments), sort_keys=True, separators=(",", ":"), default=repr)
    return f"{qualname}:{sha256(text.encode()).hexdigest()[:24]}"


@contextmanager
def adopting_runs(runs: Mapping[str, str] | None) -> Iterator[None]:
    """Inside the block a direct call with one of these identities continues its recorded
    run (resuming it, or returning its saved result) instead of starting a new one."""
    token = _adopted.set(dict(runs or {}))
    try:
        yield
    finally:
        _adopted.reset(token)


def adopted_runs() -> dict[str, str]:
    """The identities -> run ids adopted in this context (see :func:`adopting_runs`)."""
    return dict(_adopted.get() or {})


def _continue_adopted(run_id: str) -> Any:
    """The outcome of an adopted run: its saved result, or it resumed now."""
    from openprogram.durable.runner import RunOutcome, resume_run
    from openprogram.store.runs import open_run_store

    with open_run_store(None, create=False) as db:
        run = db.get_run(run_id)
    if run is not None and run.status == RunStatus.COMPLETED:
        return RunOutcome(run_id, run.status, result=run.result)
    return resume_run(run_id)


def call_durably(
    public: Callable[..., Any],
    fn: Callable[..., Any],
    instance: Any,
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
    *,
    owner: type | None = None,
) -> Any:
    """Run ``public(*args, **kwargs)`` (``fn`` is the undecorated function, ``instance``
    its receiver or None, ``owner`` the class it was called on, which a resume
    instantiates: a subclass that inherits the method, not the class defining it) as a
    new durable run; its result, or :class:`RunPaused`."""
    from openprogram.durable.runner import start_entry

    module = sys.modules.get(fn.__module__ if owner is None else owner.__module__)
    qualname = fn.__qualname__ if owner is None else f"{owner.__qualname__}.{fn.__name__}"
    if module is None or "<locals>" in qualname:
        raise StepUsageError(
            f"{qualname} cannot run durably: a resumable function must be defined at module "
            "level (or as a method of a module-level Agent class)"
        )
    arguments = _keyword_arguments(fn, instance, args, kwargs)
    listed = _listed_entry(module, public, instance)
    entry = listed or entry_for(qualname, public, module)
    ref = _entry_ref(module, entry.name)
    failure: list[BaseException] = []
    returned: list[Any] = []  # the function's own value (the run saves its JSON text)

    def call(**kw: Any) -> Any:
        try:
            value = call_by_name(public, kw)
        except (RunPaused, RunCancelled, RunReleased, LeaseLost, KeyboardInterrupt, SystemExit):
            raise  # the run's own ending (or an exit): not the orchestration failing
        except BaseException as exc:  # an Exception, or its own (asyncio.CancelledError)
            failure.append(exc)
            raise
        try:  # the rule of every run's result: not JSON, the run fails with this error
            result_json("entry", entry.name, value)
        except StepUsageError as exc:
            failure.append(exc)
            raise
        returned[:] = [value]
        return value

    identity = call_identity(qualname, arguments)
    adopted = (_adopted.get() or {}).get(identity)
    if adopted is not None:
        outcome = _continue_adopted(adopted)
    else:
        outcome = start_entry(
            entry, ref, arguments, model=os.environ.get("OPENPROGRAM_MODEL") or None, call=call
        )
    if outcome.status == RunStatus.COMPLETED:
        # what the function returned, unchanged (a tuple stays a tuple); an adopted run
        # completed earlier returns its saved result
        return returned[0] if returned else outcome.result
    if outcome.status == RunStatus.PAUSED:
        paused = RunPaused(
            outcome.pause_reason or "requested",
            outcome.error or "paused",
            outcome.paused_step,
            outcome.paused_occurrence,
            run_id=outcome.run_id,
        )
        paused.call_identity = identity  # a turn that pauses on it saves this
        raise paused
    if failure:
        add_note = getattr(failure[0], "add_note", None)  # Python >= 3.11
        if add_note is not None:
            add_note(f"(durable run {outcome.run_id} failed; see: openprogram runs)")
        raise failure[0]
    if outcome.status == RunStatus.CANCELLED:
        raise RunStateError(f"run {outcome.run_id} was cancelled")
    raise DurableError(f"run {outcome.run_id} {outcome.status}: {outcome.error}")


def load_direct_entry(ref: str) -> ProgramEntry | None:
    """The entry of a run started by a direct call (``None`` if ``ref`` names none)."""
    kind, location, qualname = parse_entry_ref(ref)
    try:
        module = load_program(kind, location)
    except EntryError:
        return None
    owner_name, _, method = qualname.rpartition(".")
    if owner_name:
        cls = getattr(module, owner_name, None)
        if not isinstance(cls, type):
            return None
        try:
            target = getattr(cls(), method)
        except Exception as exc:
            raise EntryError(
                f"cannot resume {qualname}: {owner_name}() could not be constructed "
                f"without arguments ({exc})"
            ) from None
    else:
        target = getattr(module, qualname, None)
    if target is None or not callable(target):
        return None
    entry = entry_for(qualname, target, module)
    return entry if entry.resumable else None
