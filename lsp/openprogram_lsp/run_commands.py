"""``openprogram.run`` / ``openprogram.resume`` / ``openprogram.approve`` /
``openprogram.deny`` / ``openprogram.showRuns`` commands.

Signatures (``workspace/executeCommand`` arguments, positional):

* ``openprogram.run(uri, entry, args?)`` — ``args``: JSON object (or its text) of keyword
  arguments, default ``{}``.
* ``openprogram.resume(run_id, options?)`` — ``options``: ``{"policy"?: "keep_original" |
  "use_latest", "rerunUncertain"?: bool, "queue"?: string}``; unknown keys are an error.
  With ``queue`` the run is handed to the workers of that queue (``resume --queue``)
  instead of executing in the subprocess: the answer's status is ``queued``.
* ``openprogram.approve(run_id)`` / ``openprogram.deny(run_id)`` — a run paused awaiting
  approval of a tool call (``pause_reason`` ``awaiting_approval``): the decision is
  recorded and the run resumed by ``openprogram approve|deny`` in the subprocess (the
  approved call runs; a denial is told to the model).
* ``openprogram.showRuns(uri?, function?)`` — both optional (``null`` allowed): runs of
  the file (of one function of it), or of the whole workspace; newest first.

Runs execute ``python -m openprogram.cli run|resume|approve|deny [options] -- POSITIONAL`` in a
subprocess of the workspace interpreter (never inside the server, never through a shell;
``--`` before every positional, so no argument is read as an option). The store reaches the
child as ``$OPENPROGRAM_STORE``, never on its command line (``ps`` shows every local user a
command line, with a database URL's password). Arguments are
checked before spawning: a run id must have the exact shape the store generates
(``openprogram.contract.runs.is_run_id``), and a run's entry and keyword arguments must
match the Program's ``PROGRAM_ENTRIES`` and the entry's signature, read statically
(``entry_signature.check_run``): a rejected command never imports the Program. Stderr lines are
streamed to the client log and as ``$/progress`` reports; the final JSON object from
stdout is shown with ``window/showMessage`` and returned; code lenses are refreshed.
``showRuns`` only reads the store (the store's read API via ``run_index``), never user code.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from openprogram.contract.runs import RUN_ID_LENGTH, is_run_id
from openprogram.store.postgres import redacted_location
from openprogram.store.session_store import STORE_ENV

from .entry_signature import EntryCheckError, check_run
from .outline import Outline, build_outline
from .run_index import (
    RunInfo,
    is_run_of,
    read_stores,
    run_program,
    runs_for_file,
    store_program_paths,
)
from .workspace import innermost_folder

if TYPE_CHECKING:
    from .server import OpenProgramLanguageServer

RUN = "openprogram.run"
RESUME = "openprogram.resume"
APPROVE = "openprogram.approve"
DENY = "openprogram.deny"
SHOW_RUNS = "openprogram.showRuns"
EXIT_STATUS = {0: "completed", 1: "failed", 2: "usage error", 3: "paused"}
_ENTRY = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?\Z")
MAX_STDOUT = 16 * 1024 * 1024
POLICIES = ("keep_original", "use_latest")
RESUME_OPTIONS = ("policy", "rerunUncertain", "queue")
MAX_QUEUE_NAME = 200
MAX_SHOWN_RUNS = 20


class CommandError(Exception):
    """Bad command arguments; reported to the user as one line."""


def resolve_program(ls: OpenProgramLanguageServer, target: Any) -> Path:
    """URI or path of the Program file (a relative path: in the first folder); must exist
    inside a workspace folder."""
    if not isinstance(target, str) or not target:
        raise CommandError("first argument must be the Program's URI or path")
    root = next(iter(ls.folders()), None)
    if root is None:
        raise CommandError("no workspace folder is open: cannot run entries")
    raw = to_fs_path(target) if "://" in target or target.startswith("file:") else target
    if raw is None:
        raise CommandError(f"not a file URI: {target}")
    path = Path(raw)
    if not path.is_absolute():
        path = root / path
    try:
        real = path.resolve(strict=True)
    except (OSError, RuntimeError):
        raise CommandError(f"Program file not found: {path}") from None
    if ls.folder_of(real) is None:
        raise CommandError(f"{real} is outside every workspace folder: refusing to run it")
    if not real.is_file() or real.suffix != ".py":
        raise CommandError(f"not a Python file: {real}")
    return real


def parse_args_json(value: Any) -> dict[str, Any]:
    """The entry's keyword arguments (default ``{}``): a JSON object, or its text, which is
    read by the CLI's own ``--args`` reader (the same errors: a key given twice, nesting
    too deep, the JSON type of what is not an object)."""
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        from openprogram.durable.cli_support import BadArguments
        from openprogram.durable.cli_support import parse_args_json as read_args

        try:
            return read_args(value)
        except BadArguments as exc:
            raise CommandError(str(exc)) from None
    if not isinstance(value, dict):
        from openprogram.schema_grammar import json_type_name

        raise CommandError(
            "entry arguments must be a JSON object of keyword arguments, "
            f"got {json_type_name(value)}"
        )
    return value


def parse_resume_options(value: Any) -> tuple[str | None, bool, str | None]:
    """``(policy, rerun_uncertain, queue)`` from ``{"policy"?, "rerunUncertain"?,
    "queue"?}`` (or null)."""
    shape = (
        'options must be an object {"policy"?: "keep_original"|"use_latest", '
        '"rerunUncertain"?: bool, "queue"?: string}'
    )
    if value is None:
        return None, False, None
    if not isinstance(value, dict):
        raise CommandError(f"{shape}, got {type(value).__name__}")
    unknown = sorted(str(k) for k in value if k not in RESUME_OPTIONS)
    if unknown:
        raise CommandError(f"unknown option(s) {', '.join(unknown)}: {shape}")
    policy = value.get("policy")
    if policy is not None and policy not in POLICIES:
        raise CommandError(f"unknown policy {policy!r}: use keep_original or use_latest")
    rerun = value.get("rerunUncertain")
    if rerun is not None and not isinstance(rerun, bool):
        raise CommandError(f"rerunUncertain must be true or false, got {rerun!r}")
    queue = value.get("queue")
    if queue is not None and (
        not isinstance(queue, str)
        or not queue.strip()
        or len(queue) > MAX_QUEUE_NAME
        or not queue.isprintable()
    ):
        raise CommandError(f"queue must be a queue's name (printable text), got {queue!r}")
    return policy, bool(rerun), queue


def resume_argv(
    interpreter: str,
    run_id: str,
    policy: str | None,
    rerun_uncertain: bool,
    queue: str | None = None,
) -> list[str]:
    """Command line of ``openprogram resume`` for the workspace interpreter (``--queue=Q``
    in one word: a name that starts with ``-`` is not read as an option)."""
    if not is_run_id(run_id):
        raise CommandError(f"invalid run id: {run_id!r}")
    argv = [interpreter, "-m", "openprogram.cli", "resume", "--json"]
    if policy:
        argv += ["--policy", policy]
    if rerun_uncertain:
        argv.append("--rerun-uncertain")
    if queue is not None:
        argv.append(f"--queue={queue}")
    return [*argv, "--", run_id]


def decide_argv(interpreter: str, verb: str, run_id: str) -> list[str]:
    """Command line of ``openprogram approve|deny`` (``verb``) for the workspace
    interpreter: the decision is recorded and the run resumed in that subprocess."""
    if verb not in ("approve", "deny") or not is_run_id(run_id):
        raise CommandError(f"invalid run id: {run_id!r}")
    return [interpreter, "-m", "openprogram.cli", verb, "--json", "--", run_id]


def run_argv(interpreter: str, program: Path, entry: str, kwargs: str) -> list[str]:
    """Command line of ``openprogram run`` for the workspace interpreter."""
    if not _ENTRY.match(entry) or not program.is_absolute():
        raise CommandError(f"invalid entry {program}:{entry}")
    argv = [interpreter, "-m", "openprogram.cli", "run", "--args", kwargs, "--json"]
    return [*argv, "--", f"{program}:{entry}"]


def unsaved_message(program: Path, action: str = "Run") -> str:
    """Why ``action`` refuses a Program whose editor buffer differs from the file."""
    return f"save {program.name} first: {action} executes the file on disk"


def disk_text(program: Path) -> str:
    """The Program file's text as the interpreter reads it (its PEP 263 encoding)."""
    from openprogram_analyzers.fixes import read_source

    try:
        data = program.read_bytes()
    except OSError as exc:
        raise CommandError(f"cannot read {program}: {exc.strerror or exc}") from None
    try:
        return read_source(data)[0]
    except (UnicodeDecodeError, SyntaxError, LookupError):
        return data.decode("utf-8", errors="replace")


def open_buffers(ls: OpenProgramLanguageServer, program: Path) -> list[str]:
    """The texts of every open document of file ``program``, whatever URI it was opened
    under (a symlink to it, another spelling): [] when none is open."""
    real = os.path.realpath(program)
    return [
        doc.source
        for doc in list(ls.workspace.text_documents.values())
        if doc.uri.startswith("file:") and doc.path and os.path.realpath(doc.path) == real
    ]


def is_unsaved(ls: OpenProgramLanguageServer, program: Path) -> bool:
    """Whether ``program`` is open with text other than the file's (edited, not saved) in
    any of its editor buffers: runs execute the file, not a buffer (a BOM, which editors
    hide, is no difference)."""
    buffers = open_buffers(ls, program)
    if not buffers:
        return False
    try:
        disk = disk_text(program).lstrip("\ufeff")
    except CommandError:
        return False  # the run reports the unreadable file
    return any(buffer.lstrip("\ufeff") != disk for buffer in buffers)


async def check_entry(
    ls: OpenProgramLanguageServer, program: Path, entry: str, kwargs: dict[str, Any]
) -> str:
    """The CLI name of ``entry`` after the static check (``CommandError`` if it cannot run),
    on the saved file and its Program model (built in the analysis worker). An open
    buffer with unsaved edits is refused: the run would execute other code than shown."""
    if is_unsaved(ls, program):
        raise CommandError(unsaved_message(program))
    source = disk_text(program)
    model = await ls.diagnostics.program_model(source)
    try:
        return check_run(source, entry, kwargs, model)
    except EntryCheckError as exc:
        raise CommandError(f"{program.name}: {exc}") from None


async def executed_program(
    ls: OpenProgramLanguageServer, uri: str
) -> tuple[str, Outline, str | None] | None:
    """The text and outline of what Run executes for the open document ``uri``: its
    buffer, or while that has unsaved edits the file on disk, with why Run refuses it
    (:func:`unsaved_message`). None: not open, or it does not parse."""
    doc = ls.open_document(uri)
    if doc is None:
        return None
    if uri.startswith("file:") and doc.path and is_unsaved(ls, Path(doc.path)):
        program = Path(doc.path)
        try:
            source = disk_text(program)
        except CommandError:
            return None
        model = await ls.diagnostics.program_model(source)
        saved = build_outline(source, model=model)
        return None if saved is None else (source, saved, unsaved_message(program))
    await ls.ensure_model(uri)
    outline = ls.outline(uri)
    return None if outline is None else (doc.source, outline, None)


async def unsaved_program_of_run(
    ls: OpenProgramLanguageServer, store: Path | str, run_id: str
) -> Path | None:
    """The open, unsaved Program whose run ``run_id`` is (None: none is): resuming it
    would execute the file on disk, not the code shown."""
    for doc in list(ls.workspace.text_documents.values()):
        if not doc.uri.startswith("file:") or not doc.path:
            continue
        program = Path(doc.path)
        if not is_unsaved(ls, program):
            continue
        none: set[str] = set()
        read = functools.partial(_run_ids_of_file, store, str(program))
        if run_id in await read_stores([store], read, none):
            return program
    return None


def _run_ids_of_file(store: Path | str, program: str) -> set[str]:
    return {r.id for r in runs_for_file(store, program)}


def _optional_str(value: Any, what: str) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise CommandError(f"{what} must be a string or null, got {type(value).__name__}")
    return value


def select_runs(
    store: Path | str,
    program: str | None,
    function: str | None,
    belongs: Callable[[str], bool] | None = None,
) -> list[RunInfo]:
    """Runs of ``program`` (else of every Program for which ``belongs(path)``, all when
    it is None), of ``function`` if given; newest first."""
    if program is not None:
        runs = runs_for_file(store, program)
    else:
        seen: dict[str, RunInfo] = {}
        for path in store_program_paths(store):
            if belongs is None or belongs(path):
                for r in runs_for_file(store, path):
                    seen.setdefault(r.id, r)
        runs = sorted(seen.values(), key=lambda r: r.updated_at, reverse=True)
    if function is not None:
        runs = [r for r in runs if is_run_of(r, function)]
    return runs


def run_row(r: RunInfo) -> dict[str, Any]:
    """JSON row of ``openprogram.showRuns``."""
    return {
        "run_id": r.id,
        "function": r.function_qualname,
        "entry": r.entry,
        "status": r.status,
        "paused_step": r.paused_step,
        "pause_reason": r.pause_reason,
        "error": r.error,
        "updated_at": r.updated_at,
        "resumable": r.resumable,
    }


def _run_line(row: dict[str, Any]) -> str:
    line = f"{row['run_id']}  {row['status']}  {row['function']}"
    if row["paused_step"]:
        line += f"  at {row['paused_step']}"
    if row["error"]:
        line += f"  {str(row['error'])[:120]}"
    return line


async def _progress_begin(ls: OpenProgramLanguageServer, title: str) -> str | None:
    caps = ls.client_capabilities
    window = caps.window if caps else None
    if window is None or not window.work_done_progress:
        return None
    token = f"openprogram-{uuid.uuid4().hex}"
    try:
        await asyncio.wait_for(ls.work_done_progress.create_async(token), timeout=5.0)
    except Exception as exc:
        ls.log(f"progress unavailable: {exc}")
        return None
    ls.work_done_progress.begin(
        token, types.WorkDoneProgressBegin(title=title, cancellable=True, message="starting")
    )
    return token


def in_folder(folders: list[Path], folder: Path) -> Callable[[str], bool]:
    """Whether a run of the Program file ``path`` belongs to ``folder``: it is the
    innermost of ``folders`` (the served ones) holding it (``workspace.innermost_folder``,
    the rule of documents too). A run of a file outside every folder belongs to none."""
    return lambda path: innermost_folder(path, folders) == folder


async def folder_of_run(ls: OpenProgramLanguageServer, run_id: str) -> Path | None:
    """The workspace folder Resume, Approve and Deny run ``run_id`` in (its interpreter,
    store and working directory): the folder the run belongs to (the innermost holding
    its Program file) when that folder's store holds the run, else the first folder whose
    store does (a run of a file outside every folder, or recorded in an outer folder's
    store); the first folder when no store has it (None: no folder is open)."""
    folders = ls.folders()
    holding: list[Path] = []
    program: str | None = None
    read: dict[str, str | None] = {}
    for folder in folders:
        store = ls.settings_for(folder).store_dir()
        key = str(store)
        if key not in read:
            read[key] = await read_stores(
                [store], functools.partial(run_program, store, run_id), None
            )
        if read[key] is not None:
            holding.append(folder)
            program = program or read[key]
    own = ls.folder_of(program)
    if own is not None and own in holding:
        return own
    return holding[0] if holding else next(iter(folders), None)


async def run_cli(
    ls: OpenProgramLanguageServer,
    argv: list[str],
    title: str,
    store: Path | str,
    cwd: Path | None = None,
) -> dict[str, Any]:
    """Run the CLI subprocess (its store in ``$OPENPROGRAM_STORE``, off the command line),
    stream stderr, parse the JSON result, notify the client."""
    root = cwd or ls.root
    token = await _progress_begin(ls, title)
    ls.log(f"$ OPENPROGRAM_STORE={redacted_location(store)} {' '.join(argv)}")
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=str(root) if root else None,
            env={**os.environ, "PYTHONUNBUFFERED": "1", STORE_ENV: str(store)},
        )
    except OSError as exc:
        msg = f"{title}: cannot start {argv[0]}: {exc.strerror or exc}"
        if token:
            ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message=msg))
        ls.show(msg, error=True)
        return {"status": "error", "error": msg}
    if token:
        fut = ls.work_done_progress.tokens.get(token)
        if fut is not None:
            fut.add_done_callback(lambda f: _kill(proc) if f.cancelled() else None)

    async def pump_stderr() -> None:
        assert proc.stderr is not None
        while True:
            raw = await proc.stderr.readline()
            if not raw:
                return
            line = raw.decode("utf-8", errors="replace").rstrip()
            if not line:
                continue
            ls.log(line)
            if token:
                ls.work_done_progress.report(
                    token, types.WorkDoneProgressReport(message=line[:200])
                )

    async def read_stdout() -> bytes:
        assert proc.stdout is not None
        data = await proc.stdout.read(MAX_STDOUT)
        while await proc.stdout.read(65536):  # drain anything beyond the limit
            pass
        return data

    out, _ = await asyncio.gather(read_stdout(), pump_stderr())
    code = await proc.wait()
    result = _parse_result(out.decode("utf-8", errors="replace"), code)
    summary = _summary(title, result)
    if token:
        ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message=summary))
    ls.show(summary, error=result.get("status") not in ("completed", "paused", "queued"))
    refresh_lenses(ls)
    return result


def _kill(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        proc.kill()


def _parse_result(stdout: str, code: int) -> dict[str, Any]:
    text = stdout.strip()
    candidates = [text] + [ln for ln in reversed(text.splitlines()) if ln.strip()]
    for cand in candidates:
        try:
            obj = json.loads(cand)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            obj.setdefault("exit_code", code)
            return obj
    status = EXIT_STATUS.get(code, "failed") if code >= 0 else "killed"
    return {
        "status": status if status != "completed" else "failed",
        "error": f"exit code {code}; no JSON result on stdout"
        + (f": {text[:200]}" if text else ""),
        "exit_code": code,
    }


def _summary(title: str, result: dict[str, Any]) -> str:
    status = result.get("status", "?")
    run_id = result.get("run_id")
    head = f"{title}: {status}" + (f" (run {run_id})" if run_id else "")
    if status == "completed":
        return f"{head} → {json.dumps(result.get('result'), default=str)[:500]}"
    if status == "queued":
        return f"{head} on queue {result.get('queue')!r}: a worker of that queue resumes it"
    if status == "paused":
        step = result.get("paused_step")
        return f"{head} at step {step!r}" + (f": {result['error']}" if result.get("error") else "")
    return f"{head}: {result.get('error', '')}"[:1000]


def refresh_lenses(ls: OpenProgramLanguageServer) -> None:
    caps = ls.client_capabilities
    ws = caps.workspace if caps else None
    if ws is not None and ws.code_lens is not None and ws.code_lens.refresh_support:
        ls.workspace_code_lens_refresh(None)


def register(server: OpenProgramLanguageServer) -> None:
    @server.command(RUN)
    async def run(server_: LanguageServer, *args: Any) -> dict[str, Any]:
        """``openprogram.run(uri_or_path, entry, args_json_or_object?)``."""
        ls = cast("OpenProgramLanguageServer", server_)
        try:
            if len(args) < 2:
                raise CommandError("usage: openprogram.run(uri, entry, args?)")
            if len(args) > 3:
                raise CommandError("usage: openprogram.run(uri, entry, args?)")
            path = resolve_program(ls, args[0])
            entry = args[1]
            if not isinstance(entry, str) or not _ENTRY.match(entry):
                raise CommandError(f"invalid entry name: {entry!r}")
            kwargs = parse_args_json(args[2] if len(args) > 2 else None)
            name = await check_entry(ls, path, entry, kwargs)
            settings = ls.settings_for(path)  # the Program's folder: its store, interpreter
            store = settings.store_dir()
            argv = run_argv(settings.interpreter(), path, name, json.dumps(kwargs))
        except CommandError as exc:
            ls.show(f"openprogram.run: {exc}", error=True)
            return {"status": "error", "error": str(exc)}
        return await run_cli(ls, argv, f"Run {entry}", store, ls.folder_of(path))

    async def go_on(
        ls: OpenProgramLanguageServer,
        name: str,
        args: tuple[Any, ...],
        argv_of: Callable[[str, str, Any], list[str]],
        usage: str,
        title: str,
    ) -> dict[str, Any]:
        """Resume, approve or deny the run ``args[0]`` in the CLI subprocess of the folder
        it belongs to (:func:`folder_of_run`): ``argv_of(interpreter, run_id, options)``."""
        run_id = args[0] if args else None
        if not is_run_id(run_id):
            msg = f"invalid run id: {run_id!r} (a run id is {RUN_ID_LENGTH} lowercase hex digits)"
            ls.show(f"{name}: {msg}", error=True)
            return {"status": "error", "error": msg}
        folder = await folder_of_run(ls, run_id)
        if folder is None:
            msg = "no workspace folder is open: cannot resume runs"
            ls.show(f"{name}: {msg}", error=True)
            return {"status": "error", "error": msg}
        try:
            if len(args) > 2:
                raise CommandError(f"usage: {usage}")
            settings = ls.settings_for(folder)
            store = settings.store_dir()
            argv = argv_of(settings.interpreter(), run_id, args[1] if len(args) > 1 else None)
            unsaved = await unsaved_program_of_run(ls, store, run_id)
            if unsaved is not None:
                raise CommandError(unsaved_message(unsaved, "Resume"))
        except CommandError as exc:
            ls.show(f"{name}: {exc}", error=True)
            return {"status": "error", "error": str(exc)}
        return await run_cli(ls, argv, f"{title} {run_id}", store, folder)

    def resume_of(interpreter: str, run_id: str, options: Any) -> list[str]:
        return resume_argv(interpreter, run_id, *parse_resume_options(options))

    @server.command(RESUME)
    async def resume(server_: LanguageServer, *args: Any) -> dict[str, Any]:
        """``openprogram.resume(run_id, {"policy"?, "rerunUncertain"?, "queue"?}?)``."""
        ls = cast("OpenProgramLanguageServer", server_)
        usage = "openprogram.resume(run_id, options?)"
        return await go_on(ls, RESUME, args, resume_of, usage, "Resume")

    def decision(verb: str) -> Callable[[str, str, Any], list[str]]:
        def argv_of(interpreter: str, run_id: str, options: Any) -> list[str]:
            if options is not None:
                raise CommandError(f"usage: openprogram.{verb}(run_id)")
            return decide_argv(interpreter, verb, run_id)

        return argv_of

    @server.command(APPROVE)
    async def approve(server_: LanguageServer, *args: Any) -> dict[str, Any]:
        """``openprogram.approve(run_id)``: approve the tool call the run awaits and resume
        it (``openprogram approve``, in the workspace interpreter)."""
        ls = cast("OpenProgramLanguageServer", server_)
        usage = "openprogram.approve(run_id)"
        return await go_on(ls, APPROVE, args, decision("approve"), usage, "Approve")

    @server.command(DENY)
    async def deny(server_: LanguageServer, *args: Any) -> dict[str, Any]:
        """``openprogram.deny(run_id)``: deny the tool call the run awaits (the model is
        told) and resume it (``openprogram deny``)."""
        ls = cast("OpenProgramLanguageServer", server_)
        usage = "openprogram.deny(run_id)"
        return await go_on(ls, DENY, args, decision("deny"), usage, "Deny")

    @server.command(SHOW_RUNS)
    async def show_runs(server_: LanguageServer, *args: Any) -> list[dict[str, Any]]:
        """``openprogram.showRuns(uri?, function?)``: matching runs, newest first."""
        ls = cast("OpenProgramLanguageServer", server_)
        try:
            if len(args) > 2:
                raise CommandError("usage: openprogram.showRuns(uri?, function?)")
            target = _optional_str(args[0] if args else None, "uri")
            function = _optional_str(args[1] if len(args) > 1 else None, "function")
            program: str | None = None
            if target is not None:
                program = to_fs_path(target) if target.startswith("file:") else target
                if not program:
                    raise CommandError(f"not a file URI: {target}")
        except CommandError as exc:
            ls.show(f"openprogram.showRuns: {exc}", error=True)
            return []
        none: list[RunInfo] = []
        folders = ls.folders()
        if program is not None:  # outside every folder (or none open): no store, no runs
            program_store = ls.store_for(program)
            runs = none
            if program_store is not None:
                read = functools.partial(select_runs, program_store, program, function)
                runs = await read_stores([program_store], read, none)
        else:  # every folder's runs, each from its own store (none: no folder is open)
            seen: dict[str, RunInfo] = {}
            for folder in folders:
                store = ls.settings_for(folder).store_dir()
                belongs = in_folder(folders, folder)
                read = functools.partial(select_runs, store, None, function, belongs)
                for r in await read_stores([store], read, none):
                    seen.setdefault(r.id, r)
            runs = sorted(seen.values(), key=lambda r: r.updated_at, reverse=True)
        rows = [run_row(r) for r in runs]
        where = function or (Path(program).name if program else "this workspace")
        paused = sum(1 for r in runs if r.resumable)
        if not rows:
            ls.show(f"No runs of {where}")
            return rows
        head = f"Runs of {where}: {len(rows)}" + (f" ({paused} resumable)" if paused else "")
        lines = [_run_line(row) for row in rows[:MAX_SHOWN_RUNS]]
        if len(rows) > MAX_SHOWN_RUNS:
            lines.append(f"… and {len(rows) - MAX_SHOWN_RUNS} more")
        ls.log("\n".join([head, *lines]))
        ls.show("\n".join([head, *lines[:5]]) + ("\n…" if len(lines) > 5 else ""))
        return rows
