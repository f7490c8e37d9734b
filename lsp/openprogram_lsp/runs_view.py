"""Runs of the workspace for the editor's Runs view: custom requests and change notices.

Requests (JSON params and results, camelCase keys):

* ``openprogram/runs`` ``{folder?}`` →
  ``{"folders": [{"name", "uri", "store", "runs": [run...], "olderRuns"}]}`` — the runs of
  each workspace folder (of its Programs, from its store), newest first: every unfinished
  run and the :data:`RUNS_SHOWN` newest finished ones; ``olderRuns`` counts the folder's
  finished runs left out;
* ``openprogram/runSteps`` ``{runId, folder?}`` → ``{"run": run, "steps": [step...]}``;
* ``openprogram/cancelRun`` ``{runId, kill?}`` → ``{"status", "cancel"}`` or ``{"error"}``
  (``durable.cancel_run``): ``cancel`` is ``"cancelled"`` (``status`` ``cancelled``) or
  ``"requested"`` (``status`` ``running``: another process executes the run and records
  the cancel at its next step), the words of ``openprogram cancel --json``; answered
  within ``READ_BOUND_S`` as the reads are (a store that does not answer: an error
  naming it). A live run whose entry is not resumable has no safe point to stop at: the
  answer is then ``{"error", "canKill": true}`` (``CancelUnavailable``), and the client
  may ask again with ``kill: true`` (a boolean; anything else is an error), which is
  ``openprogram cancel --kill``: the local process executing the run is ended (SIGTERM,
  then SIGKILL) and the cancel recorded, or ``{"error"}`` when that cannot be done (a
  process of another machine, a worker that executes other runs too);
* ``openprogram/pauseRun`` ``{runId}`` → ``{"status", "pause"}`` or ``{"error"}``
  (``durable.pause_run``), the same way: ``pause`` is ``"paused"`` (``status``
  ``paused``) or ``"requested"`` (``status`` ``running``: the process executing the run
  pauses it before its next step), the words of ``openprogram pause --json``;
* ``openprogram/entrySignature`` ``{uri, entry}`` → ``{"entry", "params", "template"}``;
* ``openprogram/checkEntryArgs`` ``{uri, entry, args}`` (``args``: the JSON text of the keyword
  arguments, as ``--args`` takes it) → ``{"problems": [line...]}``: what the Run check would
  refuse in them, in its words (``[]`` when they fit or cannot be checked statically), read
  from the open document like the signature. Both describe what Run executes: while the
  document has unsaved edits, the file on disk — the signature then carries
  ``"unsaved": "save F first: Run executes the file on disk"``, the one problem.

The store is read through the engine's read-only query API (``openprogram.durable.queries``):
no user code is imported, a missing store yields nothing, one that cannot be read its
folder's ``error``. While a client is interested (it asked for runs, hints or code
lenses), a watcher compares the stores' fingerprints every ``POLL_S`` (a SQLite store's
two file stats, even one that failed: it is read again once it changed) and sends
``openprogram/runsChanged`` plus ``workspace/inlayHint/refresh`` and
``workspace/codeLens/refresh`` when it changed, so views and hints stay live during a run.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from openprogram.contract.runs import RunStatus, entry_name
from openprogram.durable import queries
from openprogram.durable.errors import CancelUnavailable
from openprogram.durable.queries import RunRow
from openprogram.errors import OpenProgramError
from openprogram.store.postgres import redacted_location
from openprogram.store.run_views import StepContext

from .documents import document_key
from .entry_signature import entry_args_problems, entry_signature
from .raw_json import RawJSON
from .run_commands import executed_program, in_folder
from .run_index import DB_NAME, GATE, READ_BOUND_S, RunInfo, message, read_stores

if TYPE_CHECKING:
    from .server import OpenProgramLanguageServer

T = TypeVar("T")
#: What ``openprogram/cancelRun`` and ``openprogram/pauseRun`` ask of a run.
Verb = Literal["cancel", "pause"]
RUNS = "openprogram/runs"
RUN_STEPS = "openprogram/runSteps"
CANCEL_RUN = "openprogram/cancelRun"
PAUSE_RUN = "openprogram/pauseRun"
ENTRY_SIGNATURE = "openprogram/entrySignature"
CHECK_ENTRY_ARGS = "openprogram/checkEntryArgs"
RUNS_CHANGED = "openprogram/runsChanged"
POLL_S = 0.5
SHORT = 80
RUNS_SHOWN = 200
"""How many finished runs (the newest) `openprogram/runs` lists per folder; unfinished
runs are all listed, and `olderRuns` says how many finished ones were left out."""


@dataclass(frozen=True)
class FolderStore:
    name: str
    uri: str
    store: Path | str  # a store directory or a postgresql:// URL (``Settings.store_dir``)
    path: Path  # the folder (its runs: those of its Programs)

    @property
    def db(self) -> Path | str:
        """What ``queries`` reads: the SQLite database file, or the URL itself."""
        return self.store if isinstance(self.store, str) else self.store / DB_NAME

    @property
    def shown(self) -> str:
        """The store as the user may see it (a URL's password replaced by ``***``)."""
        return redacted_location(self.store)


def param(params: Any, key: str, default: Any = None) -> Any:
    """A field of custom-request params (pygls hands them over as namedtuples)."""
    if params is None:
        return default
    if isinstance(params, dict):
        return params.get(key, default)
    return getattr(params, key, default)


def folder_stores(ls: OpenProgramLanguageServer) -> list[FolderStore]:
    """One store per served workspace folder (``served_folders``: none while no folder is
    open, as Run refuses then): the ``store`` setting resolved against each folder."""
    return [
        FolderStore(name, uri, ls.settings_for(path).store_dir(), path)  # its own settings
        for path, name, uri in ls.served_folders()
    ]


def readable_stores(ls: OpenProgramLanguageServer) -> list[FolderStore]:
    """The folder stores that can be read now (``run_index.GATE``)."""
    return [fs for fs in folder_stores(ls) if GATE.readable(fs.store)]


async def probed_stores(ls: OpenProgramLanguageServer) -> list[FolderStore]:
    """The folder stores, once each PostgreSQL one was probed (``GATE.first_probes``, at
    most ``READ_BOUND_S``): a request never answers "no such run" or "no runs" only
    because the server had not connected to the store yet."""
    stores = folder_stores(ls)
    await GATE.first_probes(fs.store for fs in stores)
    return stores


def short_json(text: str | None, limit: int = SHORT) -> str:
    """One line of at most ``limit`` characters of a JSON text (or plain text)."""
    if text is None:
        return ""
    if len(text) <= limit and "\n" not in text and "\t" not in text and "\r" not in text:
        return text
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


def run_json(run: RunRow, stopped: tuple[str, int] | None = None) -> dict[str, Any]:
    """A run as the Runs view lists it. ``status`` is ``interrupted`` for a ``running`` run
    whose process is gone (resumable); ``cancelRequested`` / ``pauseRequested``: a
    ``running`` run's cancel / pause waits for the process executing it (its next step).
    ``pausedStep`` / ``pausedOccurrence``: ``stopped`` (``queries.stopped_at``: where a
    paused or interrupted run stopped, as ``openprogram runs`` says; none for any other
    run, a run cancelled while paused too)."""
    info = RunInfo(
        id=run.id,
        function_qualname=run.function_qualname,
        entry=run.entry,
        status=run.status,
        paused_step=run.paused_step,
        paused_occurrence=run.paused_occurrence,
        error=run.error,
        updated_at=run.updated_at,
        owner_pid=run.owner_pid,
        owner_host=run.owner_host,
        pause_reason=run.pause_reason,
        interrupted=run.interrupted,
    )
    status = "interrupted" if run.interrupted else run.status
    return {
        "id": run.id,
        "entry": entry_name(run.entry),
        "function": run.function_qualname,
        "programPath": run.program_path,
        "status": status,
        "resumable": info.resumable and not info.awaiting_approval,
        "awaitingApproval": info.awaiting_approval,  # Approve / Deny, not Resume
        "cancelRequested": run.cancel_requested and status == RunStatus.RUNNING,
        "pauseRequested": run.pause_requested and status == RunStatus.RUNNING,
        "queue": run.queue,
        "pausedStep": stopped[0] if stopped else None,
        "pausedOccurrence": stopped[1] if stopped else None,
        "pauseReason": run.pause_reason,
        "error": run.error,
        "result": short_json(run.result_json),
        "createdAt": run.created_at,
        "updatedAt": run.updated_at,
    }


def find_run_in(stores: list[FolderStore], run_id: str) -> tuple[FolderStore, RunRow] | None:
    for fs in stores:
        run = queries.get_run(fs.db, run_id)
        if run is not None:
            return fs, run
    return None


class RunAction:
    """One ``openprogram/cancelRun`` or ``openprogram/pauseRun`` (``verb``), done in a
    thread that :func:`action_payload` may give up on: where it is (the store it finds the
    run in or acts on it in), and whether it was given up on — then it writes nothing more
    (a run found after that is not cancelled or paused)."""

    def __init__(
        self,
        stores: list[FolderStore],
        unread: list[str],
        run_id: str,
        verb: Verb,
        kill: bool = False,
    ) -> None:
        self.stores = stores
        self.unread = unread  # why the stores the gate keeps from reads cannot be read
        self.run_id = run_id
        self.verb = verb
        self.kill = kill  # a cancel that ends the run's local process (``cancel --kill``)
        self.at: FolderStore | None = None
        self.acting = False
        self.given_up = False
        self._lock = threading.Lock()

    def act(self, run_id: str, store: Path | str) -> dict[str, Any]:
        """The answer: ``{"status", verb}`` from the outcome of ``cancel_run`` (``--kill``
        only when asked: otherwise a run another process executes is only requested to
        cancel) or of ``pause_run`` — the words of ``openprogram cancel/pause --json``."""
        from openprogram.durable import cancel_run, pause_run

        if self.verb == "cancel":
            outcome = cancel_run(run_id, store=store, kill=self.kill)
        else:
            outcome = pause_run(run_id, store=store)
        return {"status": str(outcome.status), self.verb: str(outcome)}

    def __call__(self) -> dict[str, Any]:
        """The answer of :meth:`act`, or ``{"error"}``."""
        errors = list(self.unread)
        for fs in self.stores:
            self.at = fs
            try:
                run = queries.get_run(fs.db, self.run_id, strict=True)
            except OpenProgramError as exc:  # the run may be there: say why it was not read
                errors.append(message(fs.store, exc))
                continue
            if run is None:
                continue
            with self._lock:
                if self.given_up:
                    return {}
                self.acting = True
            try:
                return self.act(run.id, fs.store)
            except CancelUnavailable as exc:  # no safe point: only a kill ends the run
                return {"error": str(exc), "canKill": True}
            except Exception as exc:  # RunStateError: already finished; StoreError
                return {"error": str(exc)}
        missing = f"no run {self.run_id!r} in the workspace stores"
        return {
            "error": f"{missing} that could be read ({'; '.join(errors)})" if errors else missing
        }

    def give_up(self) -> str:
        """Stop the action (nothing more is written) and say why: which store did not
        answer, and whether the run's cancel or pause may still be recorded."""
        with self._lock:
            self.given_up = True
            acting = self.acting
        where = self.at.shown if self.at is not None else ", ".join(f.shown for f in self.stores)
        said = f"store {where}: no answer within {READ_BOUND_S:g} s"
        if acting:
            return (
                f"{said}; the {self.verb} of run {self.run_id} is not confirmed (it may still "
                "be recorded once the store answers)"
            )
        done = "cancelled" if self.verb == "cancel" else "paused"
        return f"{said}; run {self.run_id} was not {done}"


async def action_payload(
    ls: OpenProgramLanguageServer, run_id: object, verb: Verb, kill: object = False
) -> dict[str, Any]:
    """``openprogram/cancelRun`` (``verb`` ``cancel``) or ``openprogram/pauseRun``
    (``pause``) in the workspace stores (:class:`RunAction`), off the event loop and
    awaited at most ``READ_BOUND_S`` as every read of the server
    (``run_index.read_stores``): a store that does not answer (a frozen database) is an
    error naming it, its password hidden. Stores the gate keeps from reads are not asked;
    when no other has the run, the error says why they were not read. A ``runId`` that is
    not a string names no run; ``kill`` (a cancel's) must be a boolean."""
    if not isinstance(run_id, str) or not run_id:
        return {"error": f"no run {run_id!r} in the workspace stores"}
    if not isinstance(kill, bool):
        return {
            "error": f"{CANCEL_RUN}: kill must be true or false, not {json.dumps(kill, default=str)}"
        }
    stores = await probed_stores(ls)
    readable = [fs for fs in stores if GATE.readable(fs.store)]
    unread = [e for e in (GATE.error(fs.store) for fs in stores if fs not in readable) if e]
    action = RunAction(readable, unread, run_id, verb, kill)
    given_up: dict[str, Any] = {}
    answer = await read_stores([fs.db for fs in readable], action, given_up)
    return answer or {"error": action.give_up()}


async def read_run(
    ls: OpenProgramLanguageServer,
    run_id: str,
    fn: Callable[[FolderStore, RunRow], T],
    empty: T,
) -> T:
    """``fn(store, run)`` of the run ``run_id`` in the readable workspace stores, the reads
    done through ``run_index.read_stores`` (off the event loop); ``empty`` when no store
    has the run, or the stores do not answer."""
    stores = [fs for fs in await probed_stores(ls) if GATE.readable(fs.store)]

    def read() -> T:
        found = find_run_in(stores, run_id)
        return empty if found is None else fn(*found)

    return await read_stores([fs.db for fs in stores], read, empty)


def _names(folder: str, fs: FolderStore) -> bool:
    """Whether the ``folder`` param of a request (a name, or any spelling of the URI)
    names ``fs``."""
    return folder == fs.name or document_key(folder) == document_key(fs.uri)


async def runs_payload(ls: OpenProgramLanguageServer, folder: str | None = None) -> dict[str, Any]:
    stores = [fs for fs in await probed_stores(ls) if not folder or _names(folder, fs)]
    folders = ls.folders()
    rows = (folder_runs(fs, in_folder(folders, fs.path)) for fs in stores)
    return {"folders": list(await asyncio.gather(*rows))}


async def folder_runs(fs: FolderStore, belongs: Callable[[str], bool]) -> dict[str, Any]:
    """One folder of ``openprogram/runs``: the runs of its store that belong to it
    (``belongs(program_file)``: ``run_commands.in_folder``, the rule of ``showRuns``; a
    store several folders share lists each run under its own folder), and ``error``
    (the store's message, ``run_index.GATE``) while it cannot be read."""
    listed: tuple[list[dict[str, Any]], int] = ([], 0)
    if GATE.readable(fs.store):
        listed = await read_stores([fs.db], lambda: listed_runs(fs, belongs), listed)
    runs, older = listed
    row = {"name": fs.name, "uri": fs.uri, "store": fs.shown, "runs": runs, "olderRuns": older}
    error = GATE.error(fs.store)
    return row if error is None else {**row, "error": error}


def listed_runs(
    fs: FolderStore, belongs: Callable[[str], bool]
) -> tuple[list[dict[str, Any]], int]:
    """The runs of ``fs`` whose Program file ``belongs`` to the folder, for the view (every
    unfinished one and the :data:`RUNS_SHOWN` newest finished ones, ``queries.newest_runs``),
    and how many older finished runs of the folder were left out; none when its store
    cannot be read, which is told to ``run_index.GATE`` (the folder's ``error`` then says
    why)."""
    strict = not isinstance(fs.store, str)
    try:
        mine, older = queries.newest_runs(fs.db, RUNS_SHOWN, strict=strict, belongs=belongs)
    except OpenProgramError as exc:
        GATE.failed(fs.store, exc)
        return [], 0
    GATE.read_ok(fs.store)
    stops = queries.stopped_at(fs.db, mine)  # one read for every interrupted run
    return [run_json(r, stops.get(r.id)) for r in mine], older


NO_STEPS: dict[str, Any] = {"run": None, "steps": []}


async def steps_payload(ls: OpenProgramLanguageServer, run_id: str) -> dict[str, Any] | RawJSON:
    """``{"run", "steps"}``: each step's ``state`` is ``completed`` | ``failed`` |
    ``running`` | ``paused`` | ``uncertain`` (see ``queries.step_view_objects``)."""
    return await read_run(ls, run_id, run_steps_json, NO_STEPS)


def step_context(run: RunRow) -> StepContext:
    """What the shown state of ``run``'s steps depends on (the Runs view and the hints)."""
    return StepContext.of_run(
        run.status, run.pause_reason, run.paused_step, run.paused_occurrence,
        live=not run.interrupted,
    )  # fmt: skip


def run_steps_json(fs: FolderStore, run: RunRow) -> RawJSON:
    rj = run_json(run, queries.stopped_at(fs.db, [run]).get(run.id))
    steps = queries.step_view_objects(
        fs.db, run.id, step_context(run), now=time.time(), shorten=short_json
    )
    return RawJSON(f'{{"run":{json.dumps(rj)},"steps":[{",".join(steps)}]}}')


class RunsWatcher:
    """Polls the stores' fingerprints; tells the client when runs changed."""

    def __init__(self, ls: OpenProgramLanguageServer) -> None:
        self.ls = ls
        self.task: asyncio.Task[None] | None = None
        self.seen: dict[Path | str, tuple[int, int, int, int]] = {}

    def ensure_started(self) -> None:
        if self.task is not None and not self.task.done():
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self.task = loop.create_task(self.run())

    async def run(self) -> None:
        self.seen = await self.versions()
        while True:
            await asyncio.sleep(POLL_S)
            try:
                self.check(await self.versions())
            except Exception as exc:  # a watcher must never take the server down
                self.ls.log(f"runs watcher: {exc}", error=True)

    async def versions(self) -> dict[Path | str, tuple[int, int, int, int]]:
        """The stores' fingerprints: a SQLite store's files' stats, a readable PostgreSQL
        store's change marker (a round trip: ``read_stores``; none while it does not
        answer)."""
        every = folder_stores(self.ls)
        files = [fs.db for fs in every if not isinstance(fs.store, str)]
        urls = [fs.db for fs in every if isinstance(fs.store, str) and GATE.readable(fs.store)]
        versions = _versions(files)  # two stats each: a SQLite store that failed is
        if urls:  # watched too, and read again once it changed
            none: dict[Path | str, tuple[int, int, int, int]] = {}
            versions.update(await read_stores(urls, lambda: _versions(urls), none))
        return versions

    def check(self, versions: dict[Path | str, tuple[int, int, int, int]]) -> bool:
        changed = False
        for db, version in versions.items():
            if self.seen.get(db) != version:
                self.seen[db] = version
                changed = True
        if changed:
            notify_runs_changed(self.ls)
        return changed


def _versions(stores: list[Path | str]) -> dict[Path | str, tuple[int, int, int, int]]:
    return {db: queries.store_version(db) for db in stores}


def notify_runs_changed(ls: OpenProgramLanguageServer) -> None:
    """Tell the client that runs changed: custom notice, inlay hints, code lenses."""
    ls.protocol.notify(RUNS_CHANGED, {})
    caps = ls.client_capabilities
    ws = caps.workspace if caps else None
    if ws is None:
        return
    if ws.inlay_hint is not None and ws.inlay_hint.refresh_support:
        ls.workspace_inlay_hint_refresh(None)
    if ws.code_lens is not None and ws.code_lens.refresh_support:
        ls.workspace_code_lens_refresh(None)


_watchers: dict[int, RunsWatcher] = {}


def watcher(ls: OpenProgramLanguageServer) -> RunsWatcher:
    w = _watchers.get(id(ls))
    if w is None:
        w = _watchers[id(ls)] = RunsWatcher(ls)
    w.ensure_started()
    return w


def register(server: OpenProgramLanguageServer) -> None:
    @server.feature(RUNS)
    async def runs(ls: OpenProgramLanguageServer, params: Any) -> dict[str, Any]:
        watcher(ls)
        return await runs_payload(ls, param(params, "folder"))

    @server.feature(RUN_STEPS)
    async def run_steps(ls: OpenProgramLanguageServer, params: Any) -> dict[str, Any] | RawJSON:
        watcher(ls)
        run_id = param(params, "runId")
        if not isinstance(run_id, str) or not run_id:
            raise ValueError("openprogram/runSteps needs {runId: string}")
        return await steps_payload(ls, run_id)

    @server.feature(CANCEL_RUN)
    async def cancel(ls: OpenProgramLanguageServer, params: Any) -> dict[str, Any]:
        kill = param(params, "kill")
        return await action_payload(
            ls, param(params, "runId"), "cancel", False if kill is None else kill
        )

    @server.feature(PAUSE_RUN)
    async def pause(ls: OpenProgramLanguageServer, params: Any) -> dict[str, Any]:
        return await action_payload(ls, param(params, "runId"), "pause")

    @server.feature(ENTRY_SIGNATURE)
    async def signature(ls: OpenProgramLanguageServer, params: Any) -> dict[str, Any] | None:
        uri, entry = param(params, "uri"), param(params, "entry")
        if not isinstance(uri, str) or not isinstance(entry, str):
            raise ValueError("openprogram/entrySignature needs {uri: string, entry: string}")
        program = await executed_program(ls, uri)  # the file on disk while unsaved
        if program is None:
            return None
        source, outline, unsaved = program
        found = entry_signature(source, outline, entry)
        return {**found, "unsaved": unsaved} if found is not None and unsaved else found

    @server.feature(CHECK_ENTRY_ARGS)
    async def check_entry_args(ls: OpenProgramLanguageServer, params: Any) -> dict[str, Any]:
        uri, entry, text = param(params, "uri"), param(params, "entry"), param(params, "args")
        if not isinstance(uri, str) or not isinstance(entry, str) or not isinstance(text, str):
            raise ValueError(
                "openprogram/checkEntryArgs needs {uri: string, entry: string, args: string}"
            )
        # the JSON text as `--args` takes it: pygls turns an object in params into namedtuples,
        # which lose keys that are not Python names and nested objects
        args = json.loads(text) if text.strip() else {}
        if not isinstance(args, dict):
            raise ValueError("openprogram/checkEntryArgs: args must be a JSON object")
        program = await executed_program(ls, uri)
        if program is None:
            return {"problems": []}
        source, outline, unsaved = program
        if unsaved:
            return {"problems": [unsaved]}  # Run refuses whatever the arguments
        return {"problems": entry_args_problems(source, outline, entry, args)}
