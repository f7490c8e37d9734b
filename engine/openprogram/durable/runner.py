"""Runs as tasks: start, resume, pause, cancel, list, and auto-resume of interrupted runs.

A run executes one Program entry with JSON keyword arguments. Its record and step records
live in the store (``openprogram.store.runs``); the run also records into the session DAG of the
same store (session id == run id): a ``code`` node for the entry and one per executed step.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import threading
import time
import warnings
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openprogram.contract.runs import (
    POLICIES,
    CancelOutcome,
    PauseOutcome,
    PauseReason,
    RunStatus,
    new_run_id,
    paused_at,
)
from openprogram.durable import checks, snapshot
from openprogram.durable.approvals import keep_loops, refuse_undecided, take_loops
from openprogram.durable.errors import (
    CancelUnavailable,
    DeterminismError,
    LeaseLost,
    PauseUnavailable,
    ProgramLoadError,
    RunCancelled,
    RunClaimLost,
    RunInterrupted,
    RunNotFound,
    RunPaused,
    RunReleased,
    RunStateError,
    StepUsageError,
)
from openprogram.durable.policy import (
    RESUMABLE_STATUSES,
    policy_for_resume,
    policy_for_start,
    resumes_latest_source,
)
from openprogram.durable.steps import (
    Executor,
    Scope,
    enter,
    flush,
    leave,
    result_json,
    uncertain_message,
)
from openprogram.durable.worker import DEFAULT_QUEUE, check_queue
from openprogram.entry_args import call_by_name
from openprogram.errors import (
    SAVED_SOURCE,
    ConfigError,
    StoreError,
    Terminated,
    raised_at,
    stopped_by,
)
from openprogram.history import RESUMES
from openprogram.programs.loader import EntryError, ProgramEntry, load_entry, parse_entry_ref
from openprogram.runtime import paused_loops
from openprogram.scope import (
    ENTRY_EXTRA,
    call_scope,
    runtime_scope,
    set_output,
    use_writer,
)
from openprogram.store.jsoncodec import fast_loads as _fast_loads
from openprogram.store.lease import (
    Heartbeat,
    Owner,
    is_interrupted,
    lease_seconds,
    local_pid,
    owner_alive,
)
from openprogram.store.runs import (
    RunRecord,
    RunStore,
    executing_in,
    executing_store,
    open_run_store,
    read_run_store,
)

__all__ = [
    "INTERRUPTED_MAX_AGE_S",
    "POLICIES",
    "ArgsError",
    "RunOutcome",
    "cancel_run",
    "list_runs",
    "pause_run",
    "requeue_run",
    "resume_interrupted",
    "resume_run",
    "run_model",
    "start_entry",
    "start_run",
    "submit_run",
    "wait_run",
]

INTERRUPTED_MAX_AGE_S = 2 * 3600.0
ProgressFn = Callable[[str, str], None]


class ArgsError(EntryError):
    """Arguments that are not a JSON object or do not fit the entry's signature."""


@dataclass(frozen=True)
class RunOutcome:
    """How one execution of a run ended."""

    run_id: str
    status: str
    result: Any = None
    error: str | None = None
    paused_step: str | None = None
    paused_occurrence: int | None = None
    pause_reason: str | None = None
    lease_lost: bool = False  # another process took the run over from this execution

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` object: ``{"run_id", "status", "result" | "error", "paused_step"?}``."""
        out: dict[str, Any] = {"run_id": self.run_id, "status": self.status}
        if self.lease_lost:
            out["error"] = self.error
            out["lease_lost"] = True
        elif self.status == RunStatus.COMPLETED:
            out["result"] = self.result
        else:
            out["error"] = self.error
        if self.status == RunStatus.PAUSED:
            out["paused_step"] = self.paused_step
        return out


# -- helpers ---------------------------------------------------------------------------
def _bind_args(entry: ProgramEntry, args: Any) -> dict[str, Any]:
    import inspect

    from openprogram.entry_args import by_position

    if not isinstance(args, Mapping):
        raise ArgsError(f"arguments must be a JSON object, got {type(args).__name__}")
    args = dict(args)
    try:
        json.dumps(args, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ArgsError(f"arguments must be JSON: {exc}") from None
    try:
        sig = inspect.signature(entry.target)
    except (TypeError, ValueError):  # pragma: no cover - builtins
        return args
    try:
        positional, keyword = by_position(sig, args)
        sig.bind(*positional, **keyword)
    except TypeError as exc:
        raise ArgsError(f"{entry.name}{sig}: {exc}") from None
    return args


def _check_json_args(entry: ProgramEntry, args: Mapping[str, Any] | None) -> None:
    """``ArgsError`` when the JSON arguments of ``run``/``submit`` do not fit the entry's
    parameters: unknown or missing names, or a value of the wrong type for a simple
    annotation (:mod:`openprogram.entry_args`, the check the language server makes too)."""
    from openprogram.entry_args import check_args, params_of_signature, signature_of

    found = params_of_signature(entry.target)
    if args is None:
        args = {}
    if found is None or not isinstance(args, Mapping):
        return  # no signature, or not an object: _bind_args says so
    problems = check_args(found[0], args, any_keyword=found[1])
    if problems:
        raise ArgsError(f"{signature_of(entry.name, entry.target)}: {'; '.join(problems)}")


def program_source(path: str) -> str:
    """The text of a Program's file as Python reads it (its PEP 263 coding cookie, universal
    newlines): what the pre-run check reads. ``ProgramLoadError`` (``FILE:LINE: ...``) when
    it cannot be read or Python cannot decode it."""
    from openprogram.contract.source import decode_error, read_source
    from openprogram.durable.checks import display_path

    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ProgramLoadError(f"{path}: cannot read the Program: {exc}") from None
    try:
        text, _ = read_source(data)
    except (UnicodeDecodeError, SyntaxError, LookupError) as exc:
        line, message = decode_error(data, exc)
        raise ProgramLoadError(f"{display_path(path)}:{line}: {message}") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _determinism(entry: ProgramEntry) -> list[str]:
    """Run the pre-run check; the qualnames it reached (what ``keep_original`` saves). It
    reads the file that defines the entry's function (a method inherited from a class of
    a module the Program imports is checked there)."""
    path = entry.source_path
    if path is None:
        return []
    source = program_source(path)
    try:
        return checks.check_resumable(source, path, entry.qualname)
    except ModuleNotFoundError:  # analyzer not installed: run without the static pre-check
        warnings.warn(
            "openprogram_analyzers.determinism is not available; the pre-run determinism "
            "check was skipped",
            RuntimeWarning,
            stacklevel=3,
        )
        return []


def _writer_for(db: RunStore, session_id: str, *, counting: bool) -> Any:
    from openprogram.store import SessionNodeWriter

    if not counting:
        return SessionNodeWriter(db.store, session_id)

    class CountingWriter(SessionNodeWriter):
        """Counts model calls for the progress display."""

        model_calls = 0
        plain_code_nodes = True  # code nodes are recorded as SessionNodeWriter does

        def append(self, kind: str, *a: Any, **kw: Any) -> Any:
            if kind == "llm":
                self.model_calls += 1
            return super().append(kind, *a, **kw)

    return CountingWriter(db.store, session_id)


def _execute(
    db: RunStore,
    run_id: str,
    entry: ProgramEntry,
    fn: Callable[..., Any],
    args: dict[str, Any],
    *,
    owner: Owner,
    lease_s: float,
    durable: bool,
    rerun_uncertain: bool,
    on_progress: ProgressFn | None,
    stop: threading.Event | None = None,
    calls: Callable[..., Any] | None = None,
) -> RunOutcome:
    """Execute a run this process holds the lease of (renewed by a heartbeat meanwhile).
    ``calls``: what ``fn`` calls when it only wraps the entry (a direct Python call's
    wrapper), so that an Agent-method entry continues in the run's node (default ``fn``)."""
    heartbeat = Heartbeat(lambda: db.renew_lease(run_id, owner.token, lease_s), lease_s)
    heartbeat.start()
    try:
        with db.pinned():  # one connection for the run's statements on this thread
            # the calls a killed execution of this run left "running" never return
            db.close_interrupted_nodes(run_id, owner.token)
            return _execute_leased(
                db, run_id, entry, fn, args, owner.token, durable, rerun_uncertain, on_progress,
                stop, fn if calls is None else calls,
            )  # fmt: skip
    finally:
        heartbeat.stop()


def _execute_leased(
    db: RunStore,
    run_id: str,
    entry: ProgramEntry,
    fn: Callable[..., Any],
    args: dict[str, Any],
    lease: str,
    durable: bool,
    rerun_uncertain: bool,
    on_progress: ProgressFn | None,
    stop: threading.Event | None,
    calls: Callable[..., Any],
) -> RunOutcome:
    executor = (
        Executor(
            db,
            run_id,
            db.replay_steps(run_id),
            token=lease,
            rerun_uncertain=rerun_uncertain,
            on_progress=on_progress,
            stop=stop,
        )
        if durable
        else None
    )
    root = Scope("")
    counting = on_progress is not None and hasattr(on_progress, "model_calls")
    writer = _writer_for(db, run_id, counting=counting)
    if counting:
        on_progress.model_calls = lambda: writer.model_calls  # type: ignore[union-attr]
    node_id: str | None = None
    token = enter(executor, root)
    try:
        # a session with a head already: an earlier execution of this run recorded nodes
        resuming = writer.head_id is not None
        with (
            use_writer(writer),
            executing_in(db),
            call_scope(entry.name, inputs=args) as frame,
        ):
            node_id = frame.node_id
            if resuming and node_id is not None:  # prompts fold the attempts into one
                writer.update(node_id, metadata={RESUMES: True})
            frame.extras[ENTRY_EXTRA] = calls  # an Agent-method entry records no second node
            try:
                # the run resumes at its own steps; the tool loops of the step an approval
                # paused continue where they stood (openprogram.durable.approvals)
                loops = take_loops(db, run_id) if executor is not None else None
                resumed = paused_loops.resuming(loops) if loops else nullcontext()
                with paused_loops.isolated(), resumed:
                    value = call_by_name(fn, args)
            finally:
                flush(executor, root)  # the last step's result, before the run's state
            if executor is not None:
                executor.check_scope_end(root)
            # the one rule of step results: a value that is not JSON fails the run
            value = _fast_loads(result_json("entry", entry.name, value))
            set_output(frame, value)
    except RunPaused as p:
        keep_loops(db, run_id, p)
        if node_id is not None:
            writer.update(node_id, status="paused", output={"paused": p.message})
        stored = db.finish_run(
            run_id,
            RunStatus.PAUSED,
            error=p.message,
            paused_step=p.step,
            paused_occurrence=p.occurrence,
            pause_reason=p.reason,
            token=lease,
        )
        return _outcome(db, run_id, stored, lease)
    except RunCancelled:
        stored = db.finish_run(
            run_id, RunStatus.CANCELLED, error=f"run {run_id} was cancelled", token=lease
        )
        return _outcome(db, run_id, stored, lease)
    except RunReleased:  # the worker stops: back to the queue for another worker
        if node_id is not None:
            writer.update(node_id, status="paused", output={"released": True})
        db.release_run(run_id, lease, requeue=True)
        return _outcome(db, run_id, RunStatus.QUEUED)
    except LeaseLost as lost:  # another process holds the run now: write nothing more
        outcome = _outcome(db, run_id, RunStatus.RUNNING)
        return dataclasses.replace(outcome, error=str(lost), lease_lost=True)
    except KeyboardInterrupt as stop_exc:  # Ctrl-C, or SIGTERM to the CLI (Terminated)
        stored = _record_interrupt(db, run_id, lease, stopped_by(stop_exc), executor is not None)
        outcome = _outcome(db, run_id, stored, lease)
        terminated = isinstance(stop_exc, Terminated)
        raise RunInterrupted(outcome, terminated=terminated) from None
    except SystemExit as exc:  # sys.exit() in the Program: a failed run, not a dead CLI
        error = f"the Program called sys.exit({exc.code!r})"
        stored = db.finish_run(run_id, RunStatus.FAILED, error=error, token=lease)
        return _outcome(db, run_id, stored, lease)
    except StoreError:
        if stop is not None:  # a worker: the store went away; the lease will expire
            raise
        stored = db.finish_run(
            run_id, RunStatus.FAILED, error=_error_text(sys.exc_info()[1]), token=lease
        )
        return _outcome(db, run_id, stored, lease)
    except BaseException as exc:  # Exception, or the Program's own BaseException
        # (asyncio.CancelledError, a class of its own): a failed run, never one left
        # "running" for a worker to take over and execute again after each lease
        error = _failure_text(db, run_id, exc)
        stored = db.finish_run(run_id, RunStatus.FAILED, error=error, token=lease)
        return _outcome(db, run_id, stored, lease)
    finally:
        leave(token)
    stored = db.finish_run(run_id, RunStatus.COMPLETED, result=value, token=lease)
    return _outcome(db, run_id, stored, lease)


#: Why an interrupted run of an entry that is not resumable ends failed.
NOT_RESUMABLE = "its entry is not declared resumable: run it again"


def _record_interrupt(db: RunStore, run_id: str, lease: str, how: str, resumable: bool) -> str:
    """Save a run that Ctrl-C or SIGTERM (``how``) stopped; the state stored: ``cancelled``
    when a cancel was requested (``cancel --kill`` sends SIGTERM), ``failed`` when its
    entry is not resumable (nothing could continue it), else ``paused (requested)`` with
    the step it stopped as its paused step (uncertain on resume)."""
    try:
        cancel_requested = db.control_state(run_id)[2]
    except StoreError:
        cancel_requested = False
    if cancel_requested:
        error = f"run {run_id} was cancelled"
        return db.finish_run(run_id, RunStatus.CANCELLED, error=error, token=lease)
    if not resumable:
        error = f"run {run_id} was interrupted ({how}); {NOT_RESUMABLE}"
        return db.finish_run(run_id, RunStatus.FAILED, error=error, token=lease)
    at = _step_in_flight(db, run_id)  # the step it stopped: uncertain on resume
    return db.finish_run(
        run_id,
        RunStatus.PAUSED,
        error=f"run {run_id} was interrupted ({how}){paused_at(*at)}",
        paused_step=at[0],
        paused_occurrence=at[1],
        pause_reason=PauseReason.REQUESTED,
        token=lease,
    )


def _step_in_flight(db: RunStore, run_id: str) -> tuple[str | None, int | None]:
    """``(name, occurrence)`` of the step a Ctrl-C stopped (started, no result saved), or
    ``(None, None)`` when it came between steps or the store cannot say."""
    try:
        s = db.uncertain_step(run_id)
    except StoreError:
        return None, None
    return (None, None) if s is None else (s.name, s.occurrence)


def _error_text(exc: BaseException | None) -> str:
    return f"{type(exc).__name__}: {exc}"


def _json_text(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _failure_text(db: RunStore, run_id: str, exc: BaseException) -> str:
    """A failed run's error: the exception, then where it happened — the step that raised
    it (its recorded failure is this very error) and the line of the user's code:
    ``ValueError: bad value 3 (in step 'explode', at prog.py:16 in boom)``."""
    text = _error_text(exc)
    where = []
    try:
        failed = [s for s in db.load_steps(run_id) if s.kind == "step" and s.status == "failed"]
    except StoreError:
        failed = []
    failed = [s for s in failed if s.result is not None and _json_text(s.result) == text]
    if failed:
        s = max(failed, key=lambda s: s.started_at or 0.0)  # the latest: this execution's
        where.append(
            f"in step '{s.name}'" + (f" (occurrence {s.occurrence})" if s.occurrence else "")
        )
    line = raised_at(exc)
    if line is not None:
        where.append(f"at {line}")
    text = f"{text} ({', '.join(where)})" if where else text
    name = getattr(exc, "name", None)
    if isinstance(exc, NameError) and name and line is not None and line.endswith(SAVED_SOURCE):
        # keep_original runs the saved functions against the module's globals as they are
        text += (
            f"; the saved source of this run (keep_original) reads the global "
            f"{name!r}, which its module no longer defines: resume with --policy use_latest "
            "to run the current code"
        )
    return text


def _outcome(db: RunStore, run_id: str, status: str, lease: str | None = None) -> RunOutcome:
    """How the run stands now; for the execution holding ``lease``, a run another
    process took over meanwhile is ``lease_lost`` (its state is not this execution's)."""
    run = db.get_run(run_id)
    if run is None:  # pragma: no cover - deleted concurrently
        return RunOutcome(run_id, status)
    if lease is not None and run.owner_token != lease:
        return RunOutcome(run_id, run.status, error=LeaseLost.message(run_id), lease_lost=True)
    return RunOutcome(
        run_id=run_id,
        status=run.status,
        result=run.result,
        error=run.error,
        paused_step=run.paused_step,
        paused_occurrence=run.paused_occurrence,
        pause_reason=run.pause_reason,
    )


def _unsaved(run_id: str, exc: StoreError) -> RunOutcome:
    """The outcome of a run whose records could not be written after it started."""
    return RunOutcome(
        run_id,
        "failed",
        error=f"run {run_id} stopped because the store could not be written: {exc}; "
        f"what was saved is kept: resume it with `openprogram resume {run_id}` "
        "once the store is writable",
    )


def _entry_ref(ref: str) -> str:
    """Store file entries with an absolute path so resume works from any directory."""
    kind, location, name = parse_entry_ref(ref)
    if kind == "file":
        return f"{Path(location).resolve()}:{name}"
    return ref


# -- API -------------------------------------------------------------------------------
def start_run(
    ref: str,
    args: Mapping[str, Any] | None = None,
    *,
    store: str | os.PathLike[str] | None = None,
    policy: str | None = None,
    model: str | None = None,
    durability: str | None = None,
    run_id: str | None = None,
    on_progress: ProgressFn | None = None,
) -> RunOutcome:
    """Run the entry ``ref`` (``FILE.py:ENTRY`` / ``MODULE:ENTRY``) as a new run.

    ``policy`` (``keep_original`` | ``use_latest``) defaults to the project's
    ``[tool.openprogram.execution] code_change_policy``, else ``keep_original``.
    Raises :class:`EntryError`/:class:`ArgsError` (bad entry or arguments) and
    :class:`DeterminismError` before anything is recorded; otherwise returns how the run
    ended (``completed``, ``failed``, ``paused`` or ``cancelled``).
    """
    entry = load_entry(ref)
    _check_json_args(entry, args)
    return start_entry(
        entry,
        _entry_ref(ref),
        args,
        store=store,
        policy=policy,
        model=model,
        durability=durability,
        run_id=run_id,
        on_progress=on_progress,
    )


def start_entry(
    entry: ProgramEntry,
    ref: str,
    args: Mapping[str, Any] | None = None,
    *,
    store: str | os.PathLike[str] | None = None,
    policy: str | None = None,
    model: str | None = None,
    durability: str | None = None,
    run_id: str | None = None,
    on_progress: ProgressFn | None = None,
    call: Callable[..., Any] | None = None,
) -> RunOutcome:
    """Run an already loaded ``entry`` as a new run recorded under ``ref``.

    ``call`` (default ``entry.target``) is what the run calls with the arguments: a
    wrapper of ``entry.target`` (a direct call's), whose call is recorded as the run's node.
    """
    pol = policy_for_start(policy, entry.path)
    run_with = _model_for(entry.path, model)
    bound, snap = _prepare(entry, args)
    rid = run_id or new_run_id()
    owner = Owner.this_process()
    lease_s = lease_seconds()
    with open_run_store(store, durability=durability) as db:
        db.store.create_session(rid, metadata={"run_id": rid, "entry": ref})
        db.insert_run(
            run_id=rid,
            entry=ref,
            program_path=entry.path,
            function_qualname=entry.qualname,
            args=bound,
            policy=pol.value,
            model=model,
            source_snapshot=snap,
            session_id=rid,
            owner=owner,
            lease_s=lease_s,
        )
        try:
            with runtime_scope(run_with):
                return _execute(
                    db,
                    rid,
                    entry,
                    call if call is not None else entry.target,
                    bound,
                    owner=owner,
                    lease_s=lease_s,
                    durable=entry.resumable,
                    rerun_uncertain=False,
                    on_progress=on_progress,
                    calls=None if call is None else entry.target,
                )
        except StoreError as exc:
            return _unsaved(rid, exc)


def _load_for_resume(db: RunStore, run: RunRecord) -> ProgramEntry:
    """The Program entry ``run`` executes; ``ProgramLoadError`` when it cannot be loaded
    here: ``cannot resume run ...``, or ``cannot start run ...`` when the run has recorded
    nothing yet (a submitted run a worker claimed: it never started)."""

    def cannot(reason: str) -> ProgramLoadError:
        verb = "resume" if db.load_steps(run.id) else "start"
        return ProgramLoadError(f"cannot {verb} run {run.id}: {reason}")

    kind, location, _ = parse_entry_ref(run.entry)
    if kind == "file" and not Path(location).is_file():
        raise cannot(f"its Program file {location} no longer exists")
    try:
        return load_entry(run.entry)
    except EntryError as exc:
        from openprogram.durable.direct import load_direct_entry

        direct = load_direct_entry(run.entry)  # a run started by a direct Python call
        if direct is not None:
            return direct
        raise cannot(str(exc)) from None


def run_model(run: RunRecord, explicit: str | None = None) -> str | None:
    """The model a run executes with, the one rule of ``openprogram resume`` (and every
    resume: ``--all-interrupted``, ``approve``/``deny``, a direct call's) and of a worker:
    ``explicit`` (``resume --model M``), else the model the run recorded when it was
    started or submitted (``run --model M``, ``submit --model M``, a direct call's
    ``OPENPROGRAM_MODEL``), else ``None``: the model configured where it executes
    (``OPENPROGRAM_MODEL``, then ``[tool.openprogram] model``, then an API key)."""
    return explicit or run.model


def _check_model(model: str | None) -> None:
    """A ``ConfigError`` for a malformed model string, before anything is recorded."""
    if model is not None:
        from openprogram.runtime.model_string import parse_model_string

        parse_model_string(model)


def _model_for(program_path: str | None, model: str | None) -> str | None:
    """The model a run of ``program_path`` executes with: ``model`` (the one given, or the
    one the run recorded), else the one configured for the Program's own project
    (``OPENPROGRAM_MODEL``, its ``[tool.openprogram] model``, an API key), parsed now so
    that a bad string stops the command before anything runs (ConfigError, exit 2); None
    when nothing is configured."""
    if model:
        _check_model(model)
        return model
    from openprogram.runtime.config import checked_model_setting

    return checked_model_setting(program_path or None)


def _checked_run_model(run: RunRecord, explicit: str | None = None) -> str | None:
    """:func:`_model_for` the model :func:`run_model` gives ``run``; a malformed model the
    run recorded (a run recorded before ``run --model`` was checked) is a ConfigError
    naming the run, before anything of it changes."""
    model = run_model(run, explicit)
    if model and not explicit:
        try:
            _check_model(model)
        except ConfigError as exc:
            raise ConfigError(
                f"the model run {run.id} recorded: {exc}; give another with --model"
            ) from None
    return _model_for(run.program_path, model)


def _resumable_run(db: RunStore, run_id: str, *, force_takeover: bool = False) -> RunRecord:
    run = db.get_run(run_id)
    if run is None:
        raise RunNotFound(f"no run {run_id!r} in {db.location}")
    if run.status == RunStatus.QUEUED:
        raise RunStateError(f"run {run_id} is queued; a worker of queue {run.queue!r} runs it")
    if run.status not in RESUMABLE_STATUSES:
        raise RunStateError(
            f"run {run_id} is {run.status}; only paused, failed or interrupted runs can be resumed"
        )
    if run.status == RunStatus.RUNNING and owner_alive(run):
        pid = local_pid(run.owner_proc)
        if pid is not None:  # a live process of this machine: never taken from it
            raise RunStateError(
                f"run {run_id} is running in process {pid} of this machine, which is alive; "
                f"wait for it to end, or stop it at its next step with `openprogram pause "
                f"{run_id}` (then resume) or `openprogram cancel {run_id}`; a process that "
                "hangs: end it (kill), then resume"
            )
        if not force_takeover:
            left = max(0.0, (run.lease_expires_at or 0.0) - time.time())
            raise RunStateError(
                f"run {run_id} is running in process {run.owner_pid} on {run.owner_host} (its "
                f"lease is renewed; it expires {left:.0f} s after the last heartbeat); if that "
                "process is gone, resume with --force-takeover"
            )
    refuse_undecided(db, run_id, run.pause_reason)  # awaiting approval: decide first
    return run


def _end_not_resumable(db: RunStore, run: RunRecord) -> None:
    """Record as failed a paused or interrupted run whose entry is not resumable (so
    ``resume --all-interrupted`` does not take it again); a compare-and-set on the run
    as read, as a resume claims it (a run that changed meanwhile is left as it is)."""
    if run.status not in (RunStatus.PAUSED, RunStatus.RUNNING):
        return
    owner = Owner.this_process()
    try:
        _claim(db, run, owner, lease_seconds())
    except RunClaimLost:
        return
    db.close_interrupted_nodes(run.id, owner.token)
    error = f"run {run.id} was interrupted; {NOT_RESUMABLE}"
    db.finish_run(run.id, RunStatus.FAILED, error=error, token=owner.token)


def _claim(db: RunStore, run: RunRecord, owner: Owner, lease_s: float) -> None:
    """Take the run's lease by compare-and-set on what was read (RunClaimLost if taken)."""
    if not db.claim_run(
        run.id,
        expected_status=run.status,
        expected_token=run.owner_token,
        owner=owner,
        lease_s=lease_s,
    ):
        raise RunClaimLost(f"run {run.id} was claimed by another process meanwhile")


def resume_run(
    run_id: str,
    *,
    store: str | os.PathLike[str] | None = None,
    policy: str | None = None,
    rerun_uncertain: bool = False,
    durability: str | None = None,
    on_progress: ProgressFn | None = None,
    force_takeover: bool = False,
    model: str | None = None,
) -> RunOutcome:
    """Resume a paused, failed or interrupted run.

    Completed steps return their saved results; ``policy`` overrides the run's
    code-change policy for this resume; ``rerun_uncertain`` re-runs steps that were
    started but whose result was not saved; ``force_takeover`` takes a ``running`` run
    over even though its lease has not expired (never from a live process of this
    machine); ``model`` overrides the run's model for this resume (:func:`run_model`).
    Errors raised before execution (:class:`RunNotFound`, :class:`RunStateError`,
    :class:`ProgramLoadError`, :class:`DeterminismError`, a ``ConfigError`` for a
    malformed ``model``) leave the run's records untouched.
    """
    _check_model(model)
    with open_run_store(store, durability=durability, create=False) as db:
        run = _resumable_run(db, run_id, force_takeover=force_takeover)
        latest = resumes_latest_source(run, policy)
        run_with = _checked_run_model(run, model)
        entry = _load_for_resume(db, run)
        if not entry.resumable:
            _end_not_resumable(db, run)  # nothing can continue it: it ends failed
            raise RunStateError(
                f"run {run_id}: {run.function_qualname} is not declared resumable; run it again"
            )
        fn, new_snap = _code_to_resume(entry, run, latest=latest, adopts=True)
        owner = Owner.this_process()
        lease_s = lease_seconds()
        _claim(db, run, owner, lease_s)
        try:
            with runtime_scope(run_with):
                outcome = _execute(
                    db,
                    run_id,
                    entry,
                    fn,
                    dict(run.args),
                    owner=owner,
                    lease_s=lease_s,
                    durable=True,
                    rerun_uncertain=rerun_uncertain,
                    on_progress=on_progress,
                )
        except StoreError as exc:
            return _unsaved(run_id, exc)
        _adopt(db, run_id, outcome, new_snap)
        return outcome


def _code_to_resume(
    entry: ProgramEntry, run: RunRecord, *, latest: bool, adopts: bool
) -> tuple[Callable[..., Any], dict[str, Any] | None]:
    """What a resume of ``run`` executes (``resume``, a worker's takeover; a worker's
    start of a queued run too): the run's saved source unless ``latest`` (or it saved
    none), else the entry as the file has it now, checked (the pre-run check), with the
    snapshot it adopts when ``adopts`` and the run goes on compatibly (:func:`_adopt`)."""
    if not latest and run.source_snapshot:  # (not latest: it saved one)
        restored = snapshot.restore(
            run.source_snapshot, entry.source_module, entry.instance, entry.receiver_class
        )
        return restored, None
    if not entry.resumable:
        return entry.target, None
    reached = _determinism(entry)
    snap = None
    if adopts:
        snap = snapshot.capture(
            entry.function, entry.source_module, entry.qualname, reached, entry.instance
        )
    return entry.target, snap


def _adopt(db: RunStore, run_id: str, outcome: RunOutcome, snap: dict[str, Any] | None) -> None:
    """Save ``snap`` (:func:`_code_to_resume`) as the run's source: the new code went on
    compatibly and this execution still held the run."""
    if snap is not None and not outcome.lease_lost:
        if outcome.pause_reason != PauseReason.INCOMPATIBLE:
            db.update_snapshot(run_id, snap)


#: The record of an uncertain step handed to the workers with ``rerun_uncertain``: failed,
#: with this reason, until a worker runs the step again.
RERUN_APPROVED = (
    "started but its result was not saved (uncertain); re-run approved for the workers "
    "(resume --queue --rerun-uncertain)"
)


def requeue_run(
    run_id: str,
    *,
    store: str | os.PathLike[str] | None = None,
    queue: str | None = None,
    policy: str | None = None,
    rerun_uncertain: bool = False,
    force_takeover: bool = False,
    model: str | None = None,
) -> str:
    """Hand a paused, failed or interrupted run to the workers of ``queue`` (default: the
    queue it was submitted to, else ``default``) instead of resuming it in this process;
    returns that queue. A worker resumes it with the normal rules (completed steps
    replayed). The checks are :func:`resume_run`'s; nothing of the Program is loaded here
    (the workers load it). ``policy`` becomes the run's code-change policy and ``model``,
    when given, its model; with ``rerun_uncertain`` the steps uncertain now are run again
    by the worker (each recorded ``failed`` with :data:`RERUN_APPROVED` until then). The
    run is first claimed by compare-and-set, as a resume claims it, so no other process
    executes it meanwhile."""
    _check_model(model)
    if queue is not None:
        check_queue(queue)
    with open_run_store(store, create=False) as db:
        run = _resumable_run(db, run_id, force_takeover=force_takeover)
        pol = policy_for_resume(policy, run.program_path, run.policy)
        _checked_run_model(run, model)
        target = queue or run.queue or DEFAULT_QUEUE
        owner = Owner.this_process()
        _claim(db, run, owner, lease_seconds())
        try:
            rerun = (
                [rec.step_key for rec in db.load_steps(run_id) if rec.uncertain]
                if rerun_uncertain
                else []
            )
            handed = db.requeue_run(
                run_id,
                owner.token,
                queue=target,
                policy=pol.value,
                model=model,
                rerun=rerun,
                rerun_reason=RERUN_APPROVED,
            )
        except BaseException:
            _give_back(db, run, owner.token)
            raise
        if not handed:
            raise RunClaimLost(f"run {run_id} was claimed by another process meanwhile")
    return target


def _give_back(db: RunStore, run: RunRecord, token: str) -> None:
    """Return ``run``, claimed under ``token`` for a hand-over that failed, to the state
    it was read in: paused for a person stays paused (not interrupted, which
    ``resume --all-interrupted`` would resume), failed stays failed. A store that fails
    here too leaves the claim to expire."""
    if run.status == RunStatus.RUNNING:  # interrupted: its lease expired, as it was
        db.release_run(run.id, token, requeue=False)
        return
    db.finish_run(
        run.id,
        run.status,
        error=run.error,
        paused_step=run.paused_step,
        paused_occurrence=run.paused_occurrence,
        pause_reason=run.pause_reason,
        token=token,
    )


#: The states in which a run waits for nobody: it ended, or it paused (for a person).
SETTLED = frozenset({RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.PAUSED})


def wait_run(
    run_id: str, *, store: str | os.PathLike[str] | None = None, poll_s: float = 0.2
) -> RunOutcome:
    """Wait until the run ``run_id`` (queued for workers, or executing anywhere) completes,
    fails, is cancelled or pauses, reading its state every ``poll_s`` seconds; returns
    how it stands then. Waiting changes nothing: stopping it (Ctrl-C) leaves the run to
    whoever executes it."""
    with open_run_store(store, create=False) as db:
        while True:
            run = db.get_run(run_id)
            if run is None:
                raise RunNotFound(f"no run {run_id!r} in {db.location}")
            if run.status in SETTLED:
                return _outcome(db, run_id, run.status)
            time.sleep(poll_s)


def _prepare(
    entry: ProgramEntry, args: Mapping[str, Any] | None
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Bind ``args`` and run the pre-run checks of a new run of ``entry``: the bound
    arguments and the saved source (``None`` for a non-resumable entry)."""
    bound = _bind_args(entry, args or {})
    snap: dict[str, Any] | None = None
    if entry.resumable:
        reached = _determinism(entry)
        snap = snapshot.capture(
            entry.function, entry.source_module, entry.qualname, reached, entry.instance
        )
    return bound, snap


def submit_run(
    ref: str,
    args: Mapping[str, Any] | None = None,
    *,
    store: str | os.PathLike[str] | None = None,
    queue: str = DEFAULT_QUEUE,
    policy: str | None = None,
    model: str | None = None,
) -> str:
    """Enqueue the entry ``ref`` with ``args`` on ``queue`` for workers; returns the run id.

    Raises the errors of :func:`start_run` before anything is recorded, and a
    ``ConfigError`` for a malformed ``model`` (a worker would only fail the run) or an
    empty or blank ``queue``."""
    _check_model(model)
    check_queue(queue)
    entry = load_entry(ref)
    _check_json_args(entry, args)
    pol = policy_for_start(policy, entry.path)
    _model_for(entry.path, model)
    bound, snap = _prepare(entry, args)
    rid = new_run_id()
    with open_run_store(store) as db:
        db.store.create_session(rid, metadata={"run_id": rid, "entry": ref, "queue": queue})
        db.insert_run(
            run_id=rid,
            entry=_entry_ref(ref),
            program_path=entry.path,
            function_qualname=entry.qualname,
            args=bound,
            policy=pol.value,
            model=model,
            source_snapshot=snap,
            session_id=rid,
            owner=None,
            queue=queue,
        )
    return rid


def execute_claimed(
    db: RunStore,
    run: RunRecord,
    owner: Owner,
    lease_s: float,
    *,
    stop: threading.Event | None = None,
) -> RunOutcome:
    """Execute a run ``owner`` just claimed (a worker): a queued run from its start, a run
    taken over after its lease expired with the resume rules (completed steps replayed,
    an uncertain step pauses the run; its code-change policy is ``resume``'s,
    :func:`~openprogram.durable.policy.policy_for_resume`: the project default, else the
    run's recorded one). A queued run — submitted, or handed over by ``resume --queue``,
    which recorded the policy the resume rule chose — executes with its recorded policy.
    Its model requests use :func:`run_model`: the model it was submitted with
    (``submit --model``), else the worker's own configuration.

    What the run cannot execute with fails it: its entry does not load, its code fails
    the determinism check, the model it recorded is malformed. A ``ConfigError`` of the
    configuration this process reads (the project's ``pyproject.toml``,
    ``OPENPROGRAM_MODEL``) is the operator's, not the run's: as ``openprogram resume``,
    which stops with it before changing the run, the run is given back as it was claimed
    (:func:`_release_for_config`: queued, or interrupted for a takeover) and the error is raised,
    naming the run."""
    try:
        entry = _load_for_resume(db, run)
        recorded = _checked_run_model(run) if run.model else None  # the run's own
    except (ProgramLoadError, EntryError, ConfigError) as exc:
        stored = db.finish_run(run.id, RunStatus.FAILED, error=str(exc), token=owner.token)
        return _outcome(db, run.id, stored, owner.token)
    try:
        # a takeover is a resume (the project default first); a queued run's policy was
        # chosen when it was submitted or handed over: it is the explicit one
        latest = resumes_latest_source(run, None if run.taken_over else run.policy)
        fn, new_snap = _code_to_resume(entry, run, latest=latest, adopts=run.taken_over)
        run_with = recorded if run.model else _checked_run_model(run)
    except (ProgramLoadError, DeterminismError, EntryError) as exc:
        stored = db.finish_run(run.id, RunStatus.FAILED, error=str(exc), token=owner.token)
        return _outcome(db, run.id, stored, owner.token)
    except ConfigError as exc:
        raise _release_for_config(db, run, owner, exc) from None
    with runtime_scope(run_with):  # one worker runs runs of several models at once
        outcome = _execute(
            db,
            run.id,
            entry,
            fn,
            dict(run.args),
            owner=owner,
            lease_s=lease_s,
            durable=entry.resumable,
            rerun_uncertain=False,
            on_progress=None,
            stop=stop,
        )
    _adopt(db, run.id, outcome, new_snap)
    return outcome


def _release_for_config(
    db: RunStore, run: RunRecord, owner: Owner, exc: ConfigError
) -> ConfigError:
    """Give the run ``owner`` claimed back as it was, untouched (a queued run to its
    queue, a taken-over run interrupted: its lease expired, any worker may take it over),
    and the ``ConfigError`` that stopped it, naming the run and what became of it."""
    verb = "resume" if run.taken_over else "start"
    left = "interrupted" if run.taken_over else "queued"
    db.release_run(run.id, owner.token, requeue=not run.taken_over)
    return ConfigError(
        f"cannot {verb} run {run.id}: {exc}; the run is left {left}: a worker executes it "
        "once the configuration is fixed"
    )


def pause_run(run_id: str | None, *, store: str | os.PathLike[str] | None = None) -> PauseOutcome:
    """Pause a run; returns :attr:`PauseOutcome.PAUSED` (``"paused"``: it was paused
    already, or no live process executes it), or :attr:`PauseOutcome.REQUESTED`
    (``"requested"``) when another live process executes it: that process pauses it before
    its next step (a safe point), with the reason ``requested``. Each write is a
    compare-and-set on the run as read: a run that finished or was taken over meanwhile is
    read again, never paused over what another process recorded.

    A run whose entry is not resumable cannot pause: :class:`PauseUnavailable`, also for
    ``run_id`` ``None`` (``pause_run(current_run_id())`` inside such a run, or outside
    any run)."""
    if run_id is None:
        raise PauseUnavailable.for_call(in_run=executing_store() is not None)
    with open_run_store(store, create=False) as db:
        for _ in range(_CONTROL_ATTEMPTS):
            run = db.get_run(run_id)
            if run is None:
                raise RunNotFound(f"no run {run_id!r} in {db.location}")
            if run.status == RunStatus.PAUSED:
                return PauseOutcome.PAUSED
            if run.status != RunStatus.RUNNING:
                raise RunStateError(f"run {run_id} is {run.status} and cannot be paused")
            if not run.entry_resumable:  # its process never pauses it: a request is lost
                raise PauseUnavailable.for_run(run_id)
            if owner_alive(run):
                if db.request_pause(run_id, token=run.owner_token):
                    return PauseOutcome.REQUESTED
                continue
            paused = f"run {run_id} paused on request"
            if db.set_paused(run_id, PauseReason.REQUESTED, paused, token=run.owner_token):
                return PauseOutcome.PAUSED
    raise RunClaimLost(f"run {run_id} changed state meanwhile; try again")


#: How often ``pause_run`` / ``cancel_run`` read a run again whose state changed between
#: their read and their write.
_CONTROL_ATTEMPTS = 5


def cancel_run(
    run_id: str, *, store: str | os.PathLike[str] | None = None, kill: bool = False
) -> CancelOutcome:
    """Cancel a run; returns :attr:`CancelOutcome.CANCELLED` (``"cancelled"``), or
    :attr:`CancelOutcome.REQUESTED` (``"requested"``) when another live process executes
    it: that process stops at its next step (a safe point) and records the cancel itself.
    ``kill`` ends such a process of this machine (SIGTERM, then SIGKILL after a grace
    period) and records the cancel — for an entry stuck outside any step; a worker that
    also executes other runs is refused (``RunStateError``). A live run whose entry is not
    resumable has no safe point: without ``kill`` it is refused
    (:class:`CancelUnavailable`), as a request would never be acknowledged. Each write is
    a compare-and-set on the run as read, as in :func:`pause_run`."""
    with open_run_store(store, create=False) as db:
        for _ in range(_CONTROL_ATTEMPTS):
            run = db.get_run(run_id)
            if run is None:
                raise RunNotFound(f"no run {run_id!r} in {db.location}")
            if run.status in (RunStatus.COMPLETED, RunStatus.CANCELLED):
                raise RunStateError(f"run {run_id} is already {run.status}")
            message = f"run {run_id} was cancelled"
            if run.status == RunStatus.RUNNING and owner_alive(run):
                if not kill and not run.entry_resumable:  # a request would be lost
                    raise CancelUnavailable.for_run(run_id)
                if not db.request_cancel(run_id, token=run.owner_token):
                    continue
                if not kill:
                    return CancelOutcome.REQUESTED
                killed = _kill_owner(db, run)
                if killed is None:
                    return CancelOutcome.CANCELLED
                run, message = killed
            if db.cancel_run(
                run_id, expected_status=run.status, expected_token=run.owner_token, error=message
            ):
                return CancelOutcome.CANCELLED
    raise RunClaimLost(f"run {run_id} changed state meanwhile; try again")


def _kill_owner(db: RunStore, run: RunRecord) -> tuple[RunRecord, str] | None:
    """End the local process executing ``run`` (``cancel --kill``); the run as read after,
    with the cancel's message, or ``None`` when that process recorded the cancel itself."""
    run_id = run.id
    pid = local_pid(run.owner_proc)
    if pid is None:
        raise RunStateError(
            f"run {run_id} executes in process {run.owner_pid} on {run.owner_host}, "
            "not a process of this machine; its cancel was requested (it stops at "
            "its next step)"
        )
    others = [
        r.id
        for r in db.list_runs(RunStatus.RUNNING)
        if r.owner_proc == run.owner_proc and r.id != run_id and owner_alive(r)
    ]
    if others:  # a worker executing other runs: killing it would interrupt them
        raise RunStateError(
            f"run {run_id} executes in process {pid}, which also executes run(s) "
            f"{', '.join(others)}: --kill would end them too; its cancel was "
            "requested (it stops at its next step); SIGTERM to that worker ends it "
            "once each run finished its current step, giving them back to the queue"
        )
    _end_process(pid, run.owner_proc)
    after = db.get_run(run_id)
    if after is None or after.status == RunStatus.CANCELLED:
        return None
    return after, f"run {run_id} was cancelled (its process {pid} was killed)"


KILL_GRACE_S = 3.0


def _end_process(pid: int, owner_proc: str | None) -> None:
    """SIGTERM ``pid``; SIGKILL it if it still runs after :data:`KILL_GRACE_S`."""
    import signal

    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + KILL_GRACE_S
        while time.monotonic() < deadline:
            if local_pid(owner_proc) is None:
                return
            time.sleep(0.05)


def list_runs(
    *, store: str | os.PathLike[str] | None = None, status: str | None = None
) -> list[RunRecord]:
    """Run records, oldest first (optionally only those with ``status``)."""
    runs = read_run_store(store)
    if runs is None:
        return []
    with runs:
        return runs.list_runs(status)


def _has_runs(store: str | os.PathLike[str] | None) -> bool:
    runs = read_run_store(store)
    if runs is None:
        return False
    runs.close()
    return True


def resume_interrupted(
    *,
    store: str | os.PathLike[str] | None = None,
    max_age_s: float = INTERRUPTED_MAX_AGE_S,
    on_progress: ProgressFn | None = None,
    model: str | None = None,
) -> list[RunOutcome]:
    """Resume runs left ``running`` by a process that died, if interrupted within
    ``max_age_s`` (two hours). Paused, cancelled, uncertain and awaiting-approval runs
    are never resumed: a run whose last step was started without a saved result is
    marked paused (uncertain) instead; older interrupted runs are marked paused. Runs of
    a queue are left to its workers, which take them over with the same rules
    (``resume RUN_ID`` resumes one here). ``model`` overrides each resumed run's own
    (:func:`run_model`)."""
    _check_model(model)
    outcomes: list[RunOutcome] = []
    if not _has_runs(store):
        return outcomes
    with open_run_store(store, create=False) as db:
        candidates = [
            r for r in db.list_runs(RunStatus.RUNNING) if r.queue is None and is_interrupted(r)
        ]
        now = time.time()
        todo: list[str] = []
        for run in candidates:
            s = db.uncertain_step(run.id)
            if s is not None:
                msg = uncertain_message(run.id, s.name, s.occurrence, s.scope)
                db.set_paused(
                    run.id,
                    PauseReason.UNCERTAIN,
                    msg,
                    step=s.name,
                    occurrence=s.occurrence,
                    token=run.owner_token,
                )
                outcomes.append(_outcome(db, run.id, RunStatus.PAUSED))
            elif now - db.last_activity(run.id) > max_age_s:
                db.set_paused(
                    run.id,
                    PauseReason.INTERRUPTED,
                    f"run {run.id} was interrupted more than {max_age_s / 3600:g} h ago; "
                    "resume it explicitly",
                    token=run.owner_token,
                )
                outcomes.append(_outcome(db, run.id, RunStatus.PAUSED))
            else:
                todo.append(run.id)
    for rid in todo:
        try:
            outcomes.append(resume_run(rid, store=store, on_progress=on_progress, model=model))
        except RunClaimLost:  # another process resumed it meanwhile
            continue
        except (RunStateError, ProgramLoadError, DeterminismError, StepUsageError) as exc:
            outcomes.append(RunOutcome(rid, RunStatus.FAILED, error=str(exc)))
    return outcomes
