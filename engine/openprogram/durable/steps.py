"""``step``, ``workflow`` and ``parallel``: checkpointed calls inside a resumable run.

Inside a run (started by :mod:`openprogram.durable.runner`) each call gets an identity
when it is **called** — scope path, name, occurrence (how many earlier calls of that name
in the same scope), position (call order in the scope) and the hash of its JSON input —
and that identity is committed before the function runs. Its JSON result is committed
before anything else of the run happens: together with the next step's identity (one
transaction, one commit per step), before a ``workflow``/``parallel`` record, at the end
of its scope or when the run stops. On resume, a call whose identity matches a completed
record returns the saved result without calling the function; a mismatch pauses the run
as *incompatible*; a record that was dispatched but never completed pauses the run as
*uncertain* unless the resume asked to re-run uncertain steps. (So a process killed
after a step returned but before the next one started reports that step uncertain too:
never re-run silently, never lost.)

Outside a run these functions simply call their functions (no recording).
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import inspect
import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from hashlib import sha256
from time import perf_counter
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from openprogram.branches import in_branch, new_fork
from openprogram.contract import steps as step_rules
from openprogram.durable.errors import (
    LeaseLost,
    RunCancelled,
    RunPaused,
    RunReleased,
    StepUsageError,
)
from openprogram.history import STEP_KEY
from openprogram.scope import (
    Frame,
    call_scope,
    code_metadata,
    current_frame,
    current_writer,
    end_replay_scope,
    exit_record,
    nearest_node_id,
    note_replay,
    pop_frame,
    push_frame,
    replay_scope,
    set_output,
)
from openprogram.store.jsoncodec import dumps as _meta_dumps
from openprogram.store.jsoncodec import fast_loads, make_dumps
from openprogram.store.runs import StepCall, StepDone, StepNode

if TYPE_CHECKING:
    from openprogram.store.runs import RunStore, StepRecord

__all__ = ["current_run_id", "parallel", "parallel_thunks", "step", "workflow"]

ProgressFn = Callable[[str, str], None]

# json.dumps(..., sort_keys=True, separators=(",", ":"), ensure_ascii=False,
# allow_nan=False), a lone surrogate escaped (jsoncodec.utf8_json): the text whose sha256
# is a step's input hash (must never change).
_canonical_json = make_dumps(sort_keys=True, compact=True, ensure_ascii=False, allow_nan=False)
# json.dumps(value, ensure_ascii=False, allow_nan=False), a lone surrogate escaped: a
# saved step result.
_result_dumps = make_dumps(ensure_ascii=False, allow_nan=False)
#: The options of a step's frame (none): one read-only empty mapping for every step.
_NO_OPTIONS: Mapping[str, Any] = MappingProxyType({})
_STOP = (RunPaused, RunCancelled, LeaseLost, RunReleased, KeyboardInterrupt, SystemExit)


def _keeps_step_open(exc: BaseException) -> bool:
    """Whether a step interrupted by ``exc`` stays ``dispatched`` (uncertain on resume)
    rather than ``failed`` (re-run on resume): a pause that says the step's operation
    did not happen (e.g. awaiting a tool approval) lets the step run again."""
    return isinstance(exc, _STOP) and not getattr(exc, "reruns_step", False)


@dataclass
class Scope:
    """One level of nesting: the top level, a ``workflow`` call or a ``parallel`` branch."""

    path: str
    position: int = 0
    occurrences: dict[str, int] = field(default_factory=dict)
    # The last step of this scope whose function returned but whose "completed" record
    # is not written yet (see _run_step): written with the next record of the scope.
    pending: StepDone | None = None

    def next_identity(self, name: str) -> tuple[int, int, str]:
        pos = self.position
        self.position += 1
        occ = self.occurrences.get(name, 0)
        self.occurrences[name] = occ + 1
        key = f"{self.path}/{name}#{occ}" if self.path else f"{name}#{occ}"
        return pos, occ, key

    def describe(self) -> str:
        return scope_phrase(self.path)


def scope_phrase(path: str) -> str:
    """How a message names the scope ``path`` of a step: ``the top level`` or
    ``workflow/branch 'parallel#0/slow#0'`` (two parallel branches may each have a step ``w #0``)."""
    return f"workflow/branch '{path}'" if path else "the top level"


def uncertain_message(run_id: str, name: str, occurrence: int, path: str) -> str:
    """Why a run pauses on an uncertain step (started, its result not saved)."""
    return (
        f"step '{name}' (occurrence {occurrence}) of {scope_phrase(path)} of run {run_id} "
        "was started but its result was not saved, so it may or may not have taken effect; "
        "check its effect, then resume with --rerun-uncertain (rerun_uncertain=True) to "
        "run it again"
    )


class Executor:
    """State of one execution (first run or a resume) of a run."""

    def __init__(
        self,
        db: RunStore,
        run_id: str,
        recorded: list[StepRecord],
        *,
        token: str,
        rerun_uncertain: bool = False,
        on_progress: ProgressFn | None = None,
        stop: threading.Event | None = None,
    ) -> None:
        self.db = db
        self.run_id = run_id
        self.token = token  # the lease this execution holds (fences every dispatch)
        self.stop = stop  # set: release the run before its next step (worker shutdown)
        self.rerun_uncertain = rerun_uncertain
        self.on_progress = on_progress
        self.recorded: dict[tuple[str, int], StepRecord] = {
            (r.scope, r.position): r for r in recorded
        }
        self.scope_sizes: dict[str, int] = {}
        for r in recorded:
            self.scope_sizes[r.scope] = max(self.scope_sizes.get(r.scope, 0), r.position + 1)
        self.steps_done = sum(1 for r in recorded if r.kind == "step" and r.status == "completed")
        self.executed = 0  # steps whose function ran in this execution
        self._lock = threading.Lock()
        # a step's result is committed as soon as it returns (durability ``eager``)
        self.eager = not db.defer_results
        # the session writer last found to write through ``db`` (see _run_step)
        self.joined_writer: object = None

    # -- control -------------------------------------------------------------------
    def check_control(self, scope: Scope, name: str, occurrence: int) -> None:
        status, pause_requested, cancel_requested, token = self.db.control_state(self.run_id)
        if status == "cancelled" or cancel_requested:
            raise RunCancelled(f"run {self.run_id} was cancelled")
        if status != "running" or token != self.token:
            raise LeaseLost(f"{LeaseLost.message(self.run_id)}; stopping before step '{name}'")
        if pause_requested:
            raise RunPaused(
                "requested",
                f"run {self.run_id} paused on request before step '{name}'",
                name,
                occurrence,
            )

    def progress(self, event: str, key: str) -> None:
        if event == "done":
            with self._lock:
                self.steps_done += 1
        if self.on_progress is not None:
            self.on_progress(event, key)

    # -- identity checks -----------------------------------------------------------
    def match(
        self, scope: Scope, kind: str, name: str, pos: int, occ: int, input_hash: str
    ) -> StepRecord | None:
        """The record at this position if compatible; raises ``RunPaused`` otherwise."""
        rec = self.recorded.get((scope.path, pos))
        if rec is None:
            return None
        if rec.name != name or rec.kind != kind:
            raise RunPaused(
                "incompatible",
                f"cannot resume run {self.run_id}: at position {pos} of {scope.describe()} "
                f"the Program now calls {kind} '{name}' (occurrence {occ}) but the run "
                f"recorded {rec.kind} '{rec.name}' (occurrence {rec.occurrence}); "
                "recorded steps were reordered, renamed or removed",
                rec.name,
                rec.occurrence,
            )
        if rec.input_hash != input_hash:
            raise RunPaused(
                "incompatible",
                f"cannot resume run {self.run_id}: {kind} '{name}' (occurrence {occ}) of "
                f"{scope.describe()} is now called with a different input than recorded "
                f"(input hash {input_hash[:12]} != {rec.input_hash[:12]})",
                rec.name,
                rec.occurrence,
            )
        return rec

    def check_scope_end(self, scope: Scope) -> None:
        """Recorded calls past the end of a finished scope mean steps were removed."""
        size = self.scope_sizes.get(scope.path, 0)
        if scope.position < size:
            rec = self.recorded.get((scope.path, scope.position))
            if rec is None:  # pragma: no cover - positions are dense
                return
            raise RunPaused(
                "incompatible",
                f"cannot resume run {self.run_id}: recorded {rec.kind} '{rec.name}' "
                f"(occurrence {rec.occurrence}, position {rec.position}) of "
                f"{scope.describe()} is no longer called; recorded steps were removed",
                rec.name,
                rec.occurrence,
            )


_current: contextvars.ContextVar[tuple[Executor, Scope] | None] = contextvars.ContextVar(
    "openprogram_durable_scope", default=None
)
_run_id: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "openprogram_durable_run_id", default=None
)


def current_executor() -> Executor | None:
    """The executor of the run in effect here, or ``None`` outside runs / inside a step."""
    cur = _current.get()
    return cur[0] if cur else None


def current_run_id() -> str | None:
    """Id of the run executing this code (also inside its steps), or ``None``."""
    cur = _current.get()
    if cur is not None:
        return cur[0].run_id
    return _run_id.get()


def enter(executor: Executor | None, scope: Scope | None) -> tuple[contextvars.Token[Any], ...]:
    """Install ``(executor, scope)`` for the calling context (runner use); no call of
    this execution has replayed yet (:func:`~openprogram.scope.note_replay`)."""
    return (
        _current.set((executor, scope) if executor is not None and scope else None),
        replay_scope(),
    )


def leave(tokens: tuple[contextvars.Token[Any], ...]) -> None:
    current, replayed = tokens
    end_replay_scope(replayed)
    _current.reset(current)


# -- validation --------------------------------------------------------------------
def _check_name(kind: str, name: object) -> str:
    problem = step_rules.name_problem(kind, name)
    if problem is not None:
        raise StepUsageError(" ".join(problem))
    assert isinstance(name, str)
    return name


_CHECKED_FNS: set[object] = set()  # plain functions that passed _check_fn


def _check_fn(kind: str, name: str, fn: object) -> None:
    if fn in _CHECKED_FNS:
        return
    if not callable(fn):
        raise StepUsageError(f"{kind} '{name}': {fn!r} is not callable")
    target = getattr(fn, "__func__", fn)
    qualname = getattr(target, "__qualname__", "")
    if getattr(target, "__name__", "") == "<lambda>":
        raise StepUsageError(" ".join(step_rules.lambda_problem(kind, name)))
    if inspect.isfunction(target) and (target.__closure__ or "<locals>" in qualname):
        raise StepUsageError(" ".join(step_rules.nested_problem(kind, name, qualname)))
    if inspect.isfunction(fn) and len(_CHECKED_FNS) < 4096:
        _CHECKED_FNS.add(fn)


def _input_hash(kind: str, name: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str:
    return sha256(_input_text(kind, name, args, kwargs).encode()).hexdigest()


def _input_text(kind: str, name: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str:
    """The canonical JSON of a call's input (its sha256 is the input hash): the text of
    ``{"args": [...], "kwargs": {...}}`` with sorted keys and no spaces, built from its two
    parts (``"args"`` sorts before ``"kwargs"``) without sorting the outer object."""
    try:
        # the encoder writes a tuple as the array its list would be (no copies): only a
        # Mapping that is not a dict needs one (the C encoder takes exact dicts only)
        kw = (
            _canonical_json(kwargs if kwargs.__class__ is dict else dict(kwargs))
            if kwargs
            else "{}"
        )
        return f'{{"args":{_canonical_json(args)},"kwargs":{kw}}}'
    except (TypeError, ValueError) as exc:
        where = _first_non_json(args, kwargs)
        raise StepUsageError(
            f"{kind} '{name}': argument {where} is not JSON ({exc}); step inputs must be "
            "JSON values (str, int, float, bool, None, list, dict with str keys)"
        ) from None


def _first_non_json(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str:
    for i, a in enumerate(args):
        try:
            json.dumps(a, allow_nan=False)
        except (TypeError, ValueError):
            return f"#{i + 1} ({type(a).__name__})"
    for k, v in kwargs.items():
        try:
            json.dumps(v, allow_nan=False)
        except (TypeError, ValueError):
            return f"{k!r} ({type(v).__name__})"
    return "?"


def result_json(kind: str, name: str, value: Any) -> str:
    """The JSON text a call's result is saved as: ``json.dumps(value, ensure_ascii=False,
    allow_nan=False)`` with a lone surrogate escaped (a str from ``os.listdir`` of a name
    that is not UTF-8 is still JSON), the one rule for the results of steps, workflows, parallel blocks
    and entries. A value that is not JSON raises :class:`StepUsageError` naming the call
    (``kind`` ``'name'``) and the value's type."""
    try:
        return _result_dumps(value)
    except (TypeError, ValueError, RecursionError) as exc:
        raise _not_json_result(kind, name, value, exc) from None


def _not_json_result(kind: str, name: str, value: Any, exc: Exception) -> StepUsageError:
    """The error of a call whose result ``value`` is not JSON (``exc``: the encoder's)."""
    if isinstance(exc, RecursionError):
        reason = "it is nested too deeply to encode"
    elif "Circular reference" in str(exc):
        reason = "it contains a circular reference"
    else:
        reason = str(exc)
    return StepUsageError(
        f"{kind} '{name}' returned a {type(value).__name__}, which is not JSON ({reason}); "
        f"{kind} results must be JSON values (str, int, float, bool, None, list, dict "
        "with str keys; no NaN or Infinity): convert it first, e.g. with "
        "model.model_dump(mode='json')"
    )


# -- step ------------------------------------------------------------------------------
_GOOD_NAMES: set[str] = set()  # step names that passed _check_name


def step(name: str, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """Run ``fn(*args, **kwargs)`` as a checkpointed step named ``name``; returns its result.

    Inputs and the result must be JSON. In a resumed run a completed step returns its
    saved result without calling ``fn``.
    """
    if name.__class__ is not str or name not in _GOOD_NAMES:
        _check_name("step", name)
        if len(_GOOD_NAMES) < 4096:
            _GOOD_NAMES.add(name)
    if fn not in _CHECKED_FNS:
        _check_fn("step", name, fn)
    cur = _current.get()
    if cur is None:
        return fn(*args, **kwargs)
    ex, scope = cur
    input_json = _input_text("step", name, args, kwargs)
    input_hash = sha256(input_json.encode()).hexdigest()
    pos, occ, key = scope.next_identity(name)
    again = bool(ex.recorded) and (scope.path, pos) in ex.recorded  # recorded before
    if again:
        # Replaying a recorded step reads nothing from the store (no round trip per step on
        # a resume); cancel, pause and the lease are checked when the next step dispatches.
        rec = ex.match(scope, "step", name, pos, occ, input_hash)
        assert rec is not None
        if rec.status == "completed":
            ex.progress("skipped", key)
            note_replay(key)
            return fast_loads(rec.result) if rec.result is not None else None
        if rec.uncertain and not ex.rerun_uncertain:
            raise RunPaused(
                "uncertain", uncertain_message(ex.run_id, name, occ, scope.path), name, occ
            )
    if ex.stop is not None and ex.stop.is_set():
        raise RunReleased(f"run {ex.run_id} released before step '{name}' (worker stopping)")
    call = StepCall(key, scope.path, pos, "step", name, occ, input_hash, again)
    return _run_step(ex, scope, call, fn, args, kwargs, input_json)


def _run_step(
    ex: Executor,
    scope: Scope,
    call: StepCall,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    input_json: str,
) -> Any:
    """Dispatch, run and complete the step ``call`` (the hot path).

    When the step's DAG node goes to this run's store through a plain session writer
    (the usual case), one transaction commits, before ``fn`` runs: the previous step's
    result and node exit if deferred (``scope.pending``), this step's identity (the
    dispatch statement also checks for cancel/pause) and its running ``code`` node —
    the rows :func:`~openprogram.scope.call_scope` would write, written here directly
    (its input JSON is the canonical text the input hash was computed from). The step's
    own result and node exit are committed as soon as ``fn`` returns (durability
    ``eager``) or with the next record of its scope (``process``/``power``, see
    :func:`flush`). Otherwise every record is written on its own.
    """
    db = ex.db
    name, key, occ = call.name, call.key, call.occurrence
    parent = current_frame()
    # current_writer() searches from this frame outwards: a writer of its own is the answer
    writer = parent.writer if parent is not None and parent.writer is not None else None
    if writer is None:
        writer = current_writer()
    if writer is not ex.joined_writer:
        if not db.owns(writer) or not _plain_writer(writer):
            return _run_step_unjoined(
                ex, scope, call, fn, args, kwargs
            )  # fmt: skip
        ex.joined_writer = writer
    assert writer is not None
    run_id = ex.run_id
    spec = None
    if parent is None or not parent.hidden:
        meta = code_metadata(None, _NO_OPTIONS)  # as call_scope writes it (its branch's forks)
        spec = StepNode(
            writer.session_id,
            name,
            input_json,
            nearest_node_id(parent),
            _meta_dumps(meta) if meta else "{}",
        )
    # previous result + identity + running node: one commit
    dispatched, node = db.write_step(run_id, ex.token, scope.pending, call, spec)
    scope.pending = None  # saved either way
    while not dispatched:
        ex.check_control(scope, name, occ)  # raises: cancelled, pause asked, lease lost
        # the state changed back meanwhile
        dispatched, node = db.write_step(run_id, ex.token, None, call, spec)
    node_id = None
    frame = Frame(name, parent, None, writer, None, _NO_OPTIONS)
    if node is not None:
        node_id = frame.node_id = node[0]
        frame.start_seq = node[1]
    token = _current.set(None)  # nested step() calls inside a step run plainly
    rtoken = _run_id.set(run_id)
    ftoken = push_frame(frame)
    on_progress = ex.on_progress
    started = perf_counter()
    try:
        if on_progress is not None:
            on_progress("start", key)
        value = fn(*args, **kwargs)
        try:  # result_json, without its call on the hot path
            text = _result_dumps(value)
        except (TypeError, ValueError, RecursionError) as exc:
            raise _not_json_result("step", name, value, exc) from None
    except BaseException as exc:
        try:
            if node_id is not None:
                status, output, meta = exit_record(exc, round(perf_counter() - started, 6))
                writer.update(node_id, output=output, status=status, metadata=meta)
        finally:
            if not _keeps_step_open(exc):
                db.fail_step(run_id, key, f"{type(exc).__name__}: {exc}", token=ex.token)
        raise
    finally:
        pop_frame(ftoken)
        _run_id.reset(rtoken)
        _current.reset(token)
    # seconds to 6 decimals, as round(d, 6) gives them (without its decimal conversion)
    duration = round((perf_counter() - started) * 1e6) / 1e6
    scope.pending = StepDone(key, text, node_id, duration)
    if ex.eager:
        flush(ex, scope)  # the result is saved before the orchestration goes on
    ex.executed += 1
    with ex._lock:
        ex.steps_done += 1
    if on_progress is not None:
        on_progress("done", key)
    return fast_loads(text)  # a fresh value, as a resume returns it


def _plain_writer(writer: Any) -> bool:
    """Whether ``writer`` records code nodes exactly as ``SessionNodeWriter`` does, so
    :func:`_run_step` may write its step node's rows itself."""
    cls = type(writer)
    plain = _PLAIN_WRITERS.get(cls)
    if plain is None:
        from openprogram.store import SessionNodeWriter

        plain = bool(getattr(cls, "plain_code_nodes", False)) or (
            cls.append is SessionNodeWriter.append and cls.update is SessionNodeWriter.update
        )
        _PLAIN_WRITERS[cls] = plain
    return plain


_PLAIN_WRITERS: dict[type, bool] = {}


def _run_step_unjoined(
    ex: Executor,
    scope: Scope,
    call: StepCall,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    """:func:`_run_step` when the DAG node goes elsewhere: each record commits alone."""
    db = ex.db
    name, key, occ = call.name, call.key, call.occurrence
    flush(ex, scope)
    while not db.write_step(ex.run_id, ex.token, None, call)[0]:
        ex.check_control(scope, name, occ)  # raises: cancelled, pause asked, lease lost
    ex.progress("start", key)
    token = _current.set(None)
    rtoken = _run_id.set(ex.run_id)
    try:
        with call_scope(name, inputs={"args": list(args), "kwargs": kwargs}) as frame:
            value = fn(*args, **kwargs)
            text = result_json("step", name, value)
            set_output(frame, value)
    except BaseException as exc:
        if not _keeps_step_open(exc):
            db.fail_step(ex.run_id, key, f"{type(exc).__name__}: {exc}", token=ex.token)
        raise
    finally:
        _run_id.reset(rtoken)
        _current.reset(token)
    db.complete_step(ex.run_id, key, text, token=ex.token)
    ex.executed += 1
    ex.progress("done", key)
    return json.loads(text)


def flush(ex: Executor | None, scope: Scope | None) -> None:
    """Commit the scope's pending step result (before a workflow/parallel record, at the
    end of a scope or a run, and when a run stops)."""
    if ex is None or scope is None or scope.pending is None:
        return
    ex.db.write_step(ex.run_id, ex.token, scope.pending, None)
    scope.pending = None


# -- workflow --------------------------------------------------------------------------
def _run_scoped(
    ex: Executor, scope: Scope, kind: str, name: str, fn: Callable[..., Any], args: Any, kw: Any
) -> tuple[Any, str]:
    token = _current.set((ex, scope))
    try:
        # the call's node carries its step key: prompts pair it with its re-execution
        options = {STEP_KEY: scope.path}
        inputs = {"args": list(args), "kwargs": dict(kw)}
        with call_scope(name, inputs=inputs, options=options) as frame:
            try:
                value = fn(*args, **kw)
            finally:
                flush(ex, scope)  # the scope's last step result, before the scope's own
            ex.check_scope_end(scope)
            text = result_json(kind, name, value)
            set_output(frame, value)
    finally:
        _current.reset(token)
    return value, text


def workflow(name: str, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """Run ``fn(*args, **kwargs)`` as a nested orchestration whose steps are keyed under
    ``name``; a completed workflow returns its saved result on resume."""
    _check_name("workflow", name)
    _check_fn("workflow", name, fn)
    cur = _current.get()
    if cur is None:
        return fn(*args, **kwargs)
    ex, scope = cur
    key, rec = _open_call(ex, scope, "workflow", name, _input_hash("workflow", name, args, kwargs))
    if rec is not None and rec.status == "completed":
        note_replay(key)
        return json.loads(rec.result) if rec.result is not None else None
    try:
        _, text = _run_scoped(ex, Scope(key), "workflow", name, fn, args, kwargs)
    except BaseException as exc:
        if not isinstance(exc, _STOP):
            ex.db.fail_step(ex.run_id, key, f"{type(exc).__name__}: {exc}", token=ex.token)
        raise
    ex.db.complete_step(ex.run_id, key, text, token=ex.token)
    return json.loads(text)


# -- parallel --------------------------------------------------------------------------
Branch = tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]


def _normalise_branches(branches: Mapping[str, Any]) -> dict[str, Branch]:
    out: dict[str, Branch] = {}
    for bname, spec in branches.items():
        _check_name("parallel branch", bname)
        if callable(spec):
            fn, args, kwargs = spec, (), {}
        elif isinstance(spec, (tuple, list)) and 1 <= len(spec) <= 3:
            fn = spec[0]
            args = tuple(spec[1]) if len(spec) > 1 and spec[1] is not None else ()
            kwargs = dict(spec[2]) if len(spec) > 2 and spec[2] is not None else {}
        else:
            raise StepUsageError(
                f"parallel branch '{bname}' must be (fn, args, kwargs), got {spec!r}"
            )
        _check_fn("parallel branch", bname, fn)
        out[bname] = (fn, args, kwargs)
    return out


def _open_call(
    ex: Executor, scope: Scope, kind: str, name: str, input_hash: str, *, again: bool = False
) -> tuple[str, StepRecord | None]:
    """Record a ``workflow`` or ``parallel`` call (``kind``) named ``name`` in ``scope``:
    its step key, and its record from an earlier execution. The scope's pending step
    result is saved and cancel/pause checked first; the call is dispatched unless that
    record is completed (``again``: dispatched anyway, for a call whose branches run again
    on every execution)."""
    pos, occ, key = scope.next_identity(name)
    flush(ex, scope)
    ex.check_control(scope, name, occ)
    rec = ex.match(scope, kind, name, pos, occ, input_hash)
    if again or rec is None or rec.status != "completed":
        ex.db.dispatch_step(
            ex.run_id,
            step_key=key,
            scope=scope.path,
            position=pos,
            kind=kind,
            name=name,
            occurrence=occ,
            input_hash=input_hash,
        )
    return key, rec


def parallel(branches: Any, /, **options: Any) -> Any:
    """Run branches concurrently.

    A dict ``{"branch": (fn, args, kwargs)}`` runs durable branches (each keeps its own
    step progress; the call returns ``{branch: result}`` once **all** branches stopped).
    A list of zero-argument callables is the control-flow ``parallel`` of
    ``openprogram.agentic_programming.control_flow``.
    """
    if not isinstance(branches, Mapping):
        from openprogram.agentic_programming import control_flow

        return control_flow.parallel(branches, **options)
    if options:
        raise StepUsageError(f"parallel() got unexpected options {sorted(options)}")
    spec = _normalise_branches(branches)
    cur = _current.get()
    if cur is None:
        return _run_threads({b: (fn, a, k, None) for b, (fn, a, k) in spec.items()})
    ex, scope = cur
    phash = _input_hash("parallel", "parallel", (sorted(spec),), {})
    key, rec = _open_call(ex, scope, "parallel", "parallel", phash)
    if rec is not None and rec.status == "completed":
        note_replay(key)
        return json.loads(rec.result) if rec.result is not None else None
    pscope = Scope(key)
    done: dict[str, Any] = {}
    todo: dict[str, tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any], Any]] = {}
    for bname, (fn, args, kwargs) in spec.items():
        bhash = _input_hash("parallel branch", bname, args, kwargs)
        bpos, bocc, bkey = pscope.next_identity(bname)
        brec = ex.match(pscope, "branch", bname, bpos, bocc, bhash)
        if brec is not None and brec.status == "completed":
            done[bname] = json.loads(brec.result) if brec.result is not None else None
            continue
        ex.db.dispatch_step(
            ex.run_id,
            step_key=bkey,
            scope=pscope.path,
            position=bpos,
            kind="branch",
            name=bname,
            occurrence=bocc,
            input_hash=bhash,
        )
        todo[bname] = (fn, args, kwargs, (ex, Scope(bkey), bkey))
    try:
        done.update(_run_threads(todo, list(spec)))
        ex.check_scope_end(pscope)
        results = {b: done[b] for b in spec}
        text = result_json("parallel", "parallel", results)
    except BaseException as exc:
        if not isinstance(exc, _STOP):
            ex.db.fail_step(ex.run_id, key, f"{type(exc).__name__}: {exc}", token=ex.token)
        raise
    ex.db.complete_step(ex.run_id, key, text, token=ex.token)
    return json.loads(text)


def parallel_thunks(
    thunks: list[Callable[[], Any]],
    run_all: Callable[[list[Callable[[], Any]], list[str]], list[Any]],
) -> list[Any]:
    """The control-flow ``parallel([thunks])`` inside a run: ``run_all`` runs the thunks
    concurrently, each in a scope of its own whose step key (``<the call's key>/<i>``)
    its call node carries.

    The call is recorded as a ``parallel`` in the current scope (its input: the number of
    thunks) and branch ``i`` numbers its steps under ``<that key>/<i>``, so their identities
    do not depend on the order threads reach them. A branch commits its last step result
    when it stops, even when a sibling failed. The thunks run again on every execution (a
    thunk is code, not a JSON call): their completed steps replay.
    """
    cur = _current.get()
    assert cur is not None
    ex, scope = cur
    phash = _input_hash("parallel", "parallel", (), {"thunks": len(thunks)})
    key, _ = _open_call(ex, scope, "parallel", "parallel", phash, again=True)

    def scoped(index: int, thunk: Callable[[], Any]) -> Callable[[], Any]:
        def run() -> Any:
            bscope = Scope(f"{key}/{index}")
            token = _current.set((ex, bscope))
            try:
                try:
                    value = thunk()
                finally:
                    flush(ex, bscope)  # a finished step is saved whatever its siblings do
                ex.check_scope_end(bscope)
                return value
            finally:
                _current.reset(token)

        return run

    try:
        results = run_all(
            [scoped(i, t) for i, t in enumerate(thunks)], [f"{key}/{i}" for i in range(len(thunks))]
        )
    except BaseException as exc:
        if not isinstance(exc, _STOP):
            ex.db.fail_step(ex.run_id, key, f"{type(exc).__name__}: {exc}", token=ex.token)
        raise
    try:  # the results, when they are JSON, for the run's views (never read back)
        text = _result_dumps(results)
    except (TypeError, ValueError):
        text = "null"
    ex.db.complete_step(ex.run_id, key, text, token=ex.token)
    return results


def _run_threads(
    todo: Mapping[str, tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any], Any]],
    order: list[str] | None = None,
) -> dict[str, Any]:
    """Run each branch in its own thread (context copied); wait for all; re-raise.
    ``order``: every branch of the call, in order (default: ``todo``'s), which numbers
    them, so a branch has the same index when completed siblings replay.

    A failure wins over a pause, a pause over success; the first branch in order decides.
    """
    if not todo:
        return {}

    fork = new_fork()  # branches are ordered by their place in ``todo`` (the call's order)
    places = {b: i for i, b in enumerate(todo if order is None else order)}

    def run_branch(
        bname: str, fn: Callable[..., Any], args: tuple[Any, ...], kw: dict[str, Any], d: Any
    ) -> Any:
        if d is None:
            token = _current.set(None)
            try:
                # its own replay stream (openprogram.branches)
                with in_branch(bname, fork, places[bname]):
                    return fn(*args, **kw)
            finally:
                _current.reset(token)
        ex, bscope, bkey = d
        try:
            with in_branch(bkey, fork, places[bname]):
                _, text = _run_scoped(ex, bscope, "parallel branch", bname, fn, args, kw)
        except BaseException as exc:
            if not isinstance(exc, _STOP):
                ex.db.fail_step(ex.run_id, bkey, f"{type(exc).__name__}: {exc}", token=ex.token)
            raise
        ex.db.complete_step(ex.run_id, bkey, text, token=ex.token)
        return json.loads(text)

    results: dict[str, Any] = {}
    errors: dict[str, BaseException] = {}
    with concurrent.futures.ThreadPoolExecutor(
        max_workers=min(32, len(todo)), thread_name_prefix="openprogram-branch"
    ) as pool:
        futures = {
            b: pool.submit(contextvars.copy_context().run, run_branch, b, fn, a, k, d)
            for b, (fn, a, k, d) in todo.items()
        }
        for b, fut in futures.items():
            try:
                results[b] = fut.result()
            except BaseException as exc:
                errors[b] = exc
    if errors:
        ordered = [errors[b] for b in todo if b in errors]
        for err in ordered:
            if isinstance(err, RunCancelled):
                raise err
        for err in ordered:
            if not isinstance(err, RunPaused):
                raise err
        raise ordered[0]
    return results
