"""The OpenProgram language server: state, lifecycle and document sync.

Feature handlers live in their own modules and are registered by ``create_server``.
User code never runs in this process: analysis is static, runs are subprocesses.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import threading
import time
from functools import partial
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method
from pygls.uris import to_fs_path
from pygls.workspace import TextDocument

from openprogram.durable.queries import READERS
from openprogram_analyzers.program import ProgramModel

from . import (
    code_actions,
    code_lenses,
    completion,
    diagnostics,
    hover,
    inlay_hints,
    run_commands,
    run_graph,
    runs_view,
    symbols,
)
from .config import (
    CONFIG_SECTION,
    ClientSettings,
    PyprojectStat,
    Settings,
    config_dirs,
    config_file_for,
    load_pyproject,
    parse_client_settings,
    pyproject_stat,
)
from .diagnostics import DiagnosticsEngine
from .documents import DocumentState, document_key
from .outline import Edit, Outline, build_outline, moved
from .positions import from_lsp
from .raw_json import RawJSON, send_raw_response
from .run_index import GATE
from .workspace import innermost_folder, use_client_lines

log = logging.getLogger(__name__)
EXIT_GRACE_S = 5.0  # after `exit`, the process ends within this even if teardown hangs

try:
    from openprogram._version import __version__ as _VERSION
except Exception:  # pragma: no cover - engine always installed alongside
    _VERSION = "0"


class OpenProgramProtocol(LanguageServerProtocol):
    """pygls protocol answering requests after ``shutdown`` with ``InvalidRequest``
    (pygls drops them silently, leaving the client waiting forever), and releasing the
    future of every finished handler (pygls 2 keeps those of notifications and of the
    handlers its built-in features yield to, one or two per keystroke, forever)."""

    def _execute_handler(
        self,
        msg_id: Any,
        handler: Any,
        callback: Any,
        args: tuple[Any, ...] | None = None,
        kwargs: dict[str, Any] | None = None,
    ) -> None:
        super()._execute_handler(msg_id, handler, callback, args=args, kwargs=kwargs)
        future = self._request_futures.get(msg_id)
        if future is not None:
            future.add_done_callback(partial(self._release, msg_id))

    def _release(self, msg_id: Any, future: Any) -> None:
        # Cancelled ones are pygls's to drop ($/cancelRequest pops them; shutdown cancels
        # while iterating the dict). A finished future can no longer be cancelled.
        if not future.cancelled() and self._request_futures.get(msg_id) is future:
            del self._request_futures[msg_id]

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams) -> Any:
        """pygls's didChange, telling the server of each change before it is applied (it
        moves the last outline that parsed with the text: :meth:`content_changing`)."""
        server = self._server
        for change in params.content_changes:
            if isinstance(server, OpenProgramLanguageServer):
                server.content_changing(params.text_document.uri, change)
            self.workspace.update_text_document(params.text_document, change)
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

    def handle_message(self, message: Any) -> None:
        method = getattr(message, "method", "")
        msg_id = getattr(message, "id", None)
        if self._shutdown and method and method != types.EXIT and msg_id is not None:
            self._send_response(
                msg_id,
                error=types.ResponseError(
                    code=types.ErrorCodes.InvalidRequest,
                    message=f"{method}: the server is shut down (only 'exit' is accepted)",
                ),
            )
            return
        super().handle_message(message)

    def _send_response(self, msg_id: Any, result: Any = None, error: Any = None) -> None:
        if error is None and isinstance(result, RawJSON):
            send_raw_response(self, msg_id, result)
        else:
            super()._send_response(msg_id, result, error)


class OpenProgramLanguageServer(LanguageServer):
    """pygls server with OpenProgram state."""

    def __init__(self) -> None:
        super().__init__(
            "openprogram-lsp",
            _VERSION,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            protocol_cls=OpenProgramProtocol,
        )
        # the window's: of a document outside every folder (or with no folder open)
        self.settings = Settings()
        self.folder_settings: dict[Path, Settings] = {}
        self.init_settings = ClientSettings()
        self.workspace_settings = ClientSettings()
        self.folder_client_settings: dict[Path, ClientSettings] = {}  # scoped (resource) values
        self.documents: dict[str, DocumentState] = {}  # by document_key: use state_of
        self.diagnostics = DiagnosticsEngine(self)
        self._settings_generation = 0
        self._shown_config_errors: set[str] = set()
        self._shown_settings_errors: set[str] = set()
        self._init_errors: list[str] = []  # of initializationOptions: said once initialized
        # which pyproject applies to a folder (find_config's memo) and each pyproject's
        # lint configuration (or error): emptied whenever a pyproject.toml may have changed
        # (a watched-file event, or the stat of a folder's pyproject.toml, taken when the
        # memo learnt the folder, differing when a document is opened, edited or saved)
        self._config_files: dict[str, Path | None] = {}
        self._lint_configs: dict[Path | None, tuple[Any, str | None]] = {}
        self._pyproject_stats: dict[str, PyprojectStat] = {}
        self.config_checked_at = 0.0  # time.monotonic() of the last check while typing
        self._shown_store_errors: set[str] = set()  # stores (redacted) whose outage was shown
        self._store_errors: dict[str, str] = {}  # store (redacted) -> why it cannot be read
        # the client named workspace folders (at initialize or by a change): only they are
        # served, not the root it started with (a removed folder stops being served)
        self.uses_folders = False

    # -- documents --------------------------------------------------------------------
    def open_document(self, uri: str) -> TextDocument | None:
        """The open document for ``uri`` (any spelling of it: :func:`document_key`), or
        None (never reads unknown URIs from disk)."""
        return self.workspace.text_documents.get(document_key(uri))

    def state_of(self, uri: str) -> DocumentState | None:
        """The state of the open document ``uri`` if it has one (never creates it)."""
        return self.documents.get(document_key(uri))

    def document_state(self, uri: str) -> DocumentState | None:
        """The state of an open document (created on first use), None if not open."""
        key = document_key(uri)
        state = self.documents.get(key)
        if state is None and (doc := self.open_document(uri)) is not None:
            state = self.documents[key] = DocumentState(doc.uri)
        return state

    def outline(self, uri: str) -> Outline | None:
        """The analyzer's Program model (the latest built: ``ensure_model``) placed on the
        document's current ``ast`` (cached per version and model). While the text does
        not parse (mid-edit), the last outline that parsed: lenses and symbols stay."""
        doc = self.open_document(uri)
        state = self.document_state(uri)
        if doc is None or state is None:
            return None
        text = doc.source
        key = (doc.version, hash(text), id(state.model))
        if state.outline_key != key:
            state.outline_key = key
            built = build_outline(text, model=state.model)
            if built is not None:
                state.outline = built
        return state.outline

    def content_changing(self, uri: str, change: types.TextDocumentContentChangeEvent) -> None:
        """A didChange ``change`` is about to be applied to ``uri``: the last outline that
        parsed moves with it, so while the text does not parse, lenses and symbols stay
        on their lines (a whole-document change leaves nothing to place: none stay)."""
        state = self.state_of(uri)
        doc = self.open_document(uri)
        if state is None or doc is None or state.outline is None:
            return
        if not isinstance(change, types.TextDocumentContentChangePartial):
            state.outline = None
            return
        lines, codec = doc.lines, doc.position_codec
        edit = Edit(
            from_lsp(lines, codec, change.range.start),
            from_lsp(lines, codec, change.range.end),
            change.text,
        )
        state.outline = moved(state.outline, edit)

    async def ensure_model(self, uri: str) -> None:
        """Called before symbols, lenses and hints are answered. The document's first
        Program model is awaited (built in the analysis worker, never on the event loop);
        afterwards the latest one serves while the debounced whole-file analysis builds
        the next from the same parse as its findings (facts are keyed by qualified name,
        so they stay right across most edits; lenses are refreshed when a changed model
        lands). A document left out by ``exclude`` gets no such analysis: its model is
        rebuilt here, in the background."""
        doc = self.open_document(uri)
        state = self.document_state(uri)
        if doc is None or state is None or state.model_digest == hash(doc.source):
            return
        first = state.model is None
        if not first and not self.diagnostics.is_excluded(uri, doc):
            return  # the pending whole-file analysis brings it
        if state.model_task is None or state.model_task.done():
            state.model_task = asyncio.ensure_future(self._build_model(state))
        if first:
            await asyncio.wait({state.model_task})  # not cancelled with this request

    async def _build_model(self, state: DocumentState) -> None:
        doc = self.open_document(state.uri)
        if doc is None:
            return
        text = doc.source
        self.model_built(state, text, await self.diagnostics.program_model(text))

    def model_built(self, state: DocumentState, text: str, model: ProgramModel | None) -> None:
        """A Program model of ``text`` was built (None: the text is not analysed, e.g. a
        syntax error mid-edit: the last model stays)."""
        if self.state_of(state.uri) is not state:
            return  # closed or reopened meanwhile
        state.model_digest = hash(text)
        if model is None or model == state.model:
            return
        old, state.model = state.model, model
        if old is not None:
            run_commands.refresh_lenses(self)

    def opened(self, uri: str) -> None:
        """didOpen: fresh state (a reopened document starts from scratch)."""
        key = document_key(uri)
        old = self.documents.pop(key, None)
        if old is not None:
            old.close()
        self.documents[key] = DocumentState(uri)
        self.diagnostics.schedule(uri)

    def forget_document(self, uri: str) -> None:
        """didClose: stop its work and drop all its state at once."""
        state = self.documents.pop(document_key(uri), None)
        if state is not None:
            state.close()
        self.diagnostics.clear(uri if state is None else state.uri)

    # -- settings ---------------------------------------------------------------------
    @property
    def root(self) -> Path | None:
        root = self.workspace.root_path
        return Path(root) if root else None

    def served_folders(self) -> list[tuple[Path, str, str]]:
        """``(path, name, uri)`` of each served folder, its URI as the client sent it:
        the workspace folders (multi-root), else the root; the first is the default. Once
        the client has named folders, only those: the root of a folder it removed is not
        served any more. None at all when the client opened no folder (or removed the
        last one): nothing is run, and no run store is listed."""
        out: list[tuple[Path, str, str]] = []
        for folder in self.workspace.folders.values():
            path = fs_path(folder.uri)
            if path:
                out.append((Path(path), folder.name, folder.uri))
        root = self.root
        if not self.uses_folders and root is not None and root not in [p for p, _, _ in out]:
            out.insert(0, (root, root.name, self.workspace.root_uri or root.as_uri()))
        return out

    def folders(self) -> list[Path]:
        """The paths of :meth:`served_folders`."""
        return [path for path, _, _ in self.served_folders()]

    def folder_of(self, path: str | Path | None) -> Path | None:
        """The innermost workspace folder holding ``path`` (None if none does):
        :func:`innermost_folder` of the served folders."""
        return innermost_folder(path, self.folders())

    def store_for(self, uri_or_path: str | Path | None) -> Path | str | None:
        """The run store a document's runs are read from (its lenses, OP209, ``showRuns``):
        that of the folder it belongs to (:meth:`folder_of`; ``settings_for(...)
        .store_dir()``). None for a file outside every served folder, and so for every
        file while no folder is served: its runs are no one's, as the Runs view lists
        none and Run refuses (never the store in the server's working directory, the
        window settings' base)."""
        target = uri_or_path
        if isinstance(target, str) and target.startswith("file:"):
            target = fs_path(target)
        if self.folder_of(target) is None:
            return None
        return self.settings_for(target).store_dir()

    def settings_for(self, uri_or_path: str | Path | None) -> Settings:
        """Settings of the document: those of the folder holding it (store, interpreter,
        client settings; the window's client settings only, no folder's, for a document
        outside every folder) with the
        ``[tool.openprogram.lint]`` of the document's own configuration (``find_config``
        from the document, the rule of ``openprogram run`` and ``openprogram-lint``)."""
        target = uri_or_path
        if isinstance(target, str) and target.startswith("file:"):
            target = fs_path(target)
        folder = self.folder_of(target)
        settings = self.settings if folder is None else self.folder_settings.get(folder)
        if settings is None:
            settings = self.settings
        if not target or not os.path.isabs(target):  # untitled: no file, no configuration
            return settings
        pyproject, err = self._lint_config_of(target)
        if settings.pyproject_config is pyproject and settings.pyproject_error == err:
            return settings
        return dataclasses.replace(settings, pyproject_config=pyproject, pyproject_error=err)

    def _lint_config_of(self, path: str | Path) -> tuple[Any, str | None]:
        """The lint configuration (or its error) applying to ``path``; an error is shown
        to the user once (the defaults apply until it is fixed)."""
        for directory in config_dirs(path):  # the folders find_config reads (not memoised)
            if directory in self._config_files:
                break
            self._pyproject_stats[directory] = pyproject_stat(directory)
        found, err = config_file_for(path, self._config_files)
        key = None if err else found
        loaded = self._lint_configs.get(key) if err is None else (None, err)
        if loaded is None:
            loaded = self._lint_configs[key] = load_pyproject(found)
        err = loaded[1]
        if err and err not in self._shown_config_errors:
            self._shown_config_errors.add(err)
            self.log(err, error=True)
            self.show(err, error=True)
        return loaded

    def config_files_changed(self, uri: str) -> bool:
        """Whether a ``pyproject.toml`` the configuration of document ``uri`` was read from
        (or looked for) changed since: one ``stat`` per folder above it, no read. For a
        client that does not watch files (Neovim 0.7), or a pyproject edited outside it."""
        path = fs_path(uri) if uri.startswith("file:") else None
        if not path or not os.path.isabs(path):
            return False
        stats = self._pyproject_stats
        return any(d in stats and stats[d] != pyproject_stat(d) for d in config_dirs(path))

    @property
    def push_diagnostics(self) -> bool:
        """Push unless the client pulls (avoids showing every diagnostic twice)."""
        caps = self.client_capabilities
        td = caps.text_document if caps else None
        return not (td is not None and td.diagnostic is not None)

    def refresh_pull_diagnostics(self) -> None:
        """Ask a pull client to pull again (new findings it cannot know about)."""
        caps = self.client_capabilities
        ws = caps.workspace if caps else None
        if self.push_diagnostics or ws is None or ws.diagnostics is None:
            return
        if ws.diagnostics.refresh_support:
            self.workspace_diagnostic_refresh(None)

    def recompute_settings(self) -> None:
        """Settings per workspace folder (its pyproject.toml and its resource-scoped client
        settings); a broken pyproject.toml is shown to the user."""
        client = self.init_settings.overlay(self.workspace_settings)
        folders = self.folders()
        per_folder: dict[Path, Settings] = {}
        self._config_files.clear()
        self._lint_configs.clear()
        self._pyproject_stats.clear()
        for folder in folders:
            scoped = self.folder_client_settings.get(folder)
            folder_client = client if scoped is None else client.overlay(scoped)
            pyproject, err = self._lint_config_of(folder)
            per_folder[folder] = Settings(
                root=folder, client=folder_client, pyproject_config=pyproject, pyproject_error=err
            )
        self._shown_config_errors &= {s.pyproject_error for s in per_folder.values()}
        self.folder_settings = per_folder
        # no folder's resource-scoped settings reach a document outside every folder
        self.settings = Settings(client=client)
        # the run stores' readers of URLs no longer configured are closed
        READERS.keep_only([s.store_dir() for s in [self.settings, *per_folder.values()]])

    async def refresh_workspace_settings(
        self, generation: int | None = None, *, scoped_only: bool = False
    ) -> None:
        """Pull the ``openprogram`` section: once for the window and once per workspace folder
        (``scopeUri``: resource-scoped settings differ per folder). The window's answer is
        ignored if settings were pushed since ``generation`` (or when ``scoped_only``)."""
        caps = self.client_capabilities
        ws = caps.workspace if caps else None
        if ws is None or not ws.configuration:
            return
        if generation is None:
            generation = self._settings_generation
        folders = self.folders()
        items = [types.ConfigurationItem(section=CONFIG_SECTION)]
        items += [
            types.ConfigurationItem(scope_uri=folder.as_uri(), section=CONFIG_SECTION)
            for folder in folders
        ]
        try:
            values = await asyncio.wait_for(
                self.workspace_configuration_async(types.ConfigurationParams(items=items)),
                timeout=5.0,
            )
        except Exception as exc:
            self.log(f"workspace/configuration failed: {exc}", error=True)
            return
        values = list(values or [])
        values += [None] * (len(items) - len(values))
        scoped: dict[Path, ClientSettings] = {}
        for folder, raw in zip(folders, values[1:], strict=False):
            parsed, errors = parse_client_settings(raw)
            self.settings_errors(f"openprogram settings of {folder}", errors)
            scoped[folder] = parsed
        self.folder_client_settings = scoped
        if scoped_only or generation != self._settings_generation:
            return  # settings pushed meanwhile are newer
        parsed, errors = parse_client_settings(values[0])
        self.settings_errors("openprogram settings", errors)
        self.set_workspace_settings(parsed)

    def settings_errors(self, where: str, errors: list[str]) -> None:
        """Bad client settings (each ignored): logged, and shown once as an error message,
        as a broken ``[tool.openprogram.lint]`` is."""
        for e in errors:
            text = f"{where}: {e}"
            self.log(text, error=True)
            if text not in self._shown_settings_errors:
                self._shown_settings_errors.add(text)
                self.show(text, error=True)

    def set_workspace_settings(self, parsed: ClientSettings) -> None:
        self._settings_generation += 1
        self.workspace_settings = parsed

    async def recorded_steps(self, uri: str) -> Any:
        """Step identities of paused runs for OP209 (None until the durable store exists,
        or while it cannot be read)."""
        from .run_index import read_stores, recorded_steps_for

        doc = self.open_document(uri)
        if doc is None or not uri.startswith("file:"):
            return None
        store, path = self.store_for(doc.path), doc.path
        if store is None:
            return None
        return await read_stores([store], lambda: recorded_steps_for(store, path), None)

    def store_state_changed(self, url: str, error: str | None) -> None:
        """A store became readable or unreadable (``run_index.GATE``: a PostgreSQL store's
        probe, a SQLite store's failed read): say why once (its password hidden; each
        failed read is logged), and refresh what reads it (lenses, hints, the Runs view,
        OP209)."""
        from openprogram.store.postgres import redact

        shown = redact(url)
        if error is not None:
            text = f"OpenProgram cannot read the run store: {error}"
            self.log(text, error=True)
            if self._store_errors.get(shown) == error:
                return  # the same failure again (a SQLite store's read): nothing changed
            self._store_errors[shown] = error
            # one message per outage: a changed reason while it lasts is only logged
            if shown not in self._shown_store_errors:
                self._shown_store_errors.add(shown)
                self.show(text, error=True)
        else:
            self.log(f"run store {shown} is readable")
            self._shown_store_errors.discard(shown)  # a later failure is said again
            self._store_errors.pop(shown, None)
        runs_view.notify_runs_changed(self)
        self.diagnostics.schedule_all()

    # -- client messages ----------------------------------------------------------------
    def log(self, message: str, *, error: bool = False) -> None:
        kind = types.MessageType.Error if error else types.MessageType.Log
        try:
            self.window_log_message(types.LogMessageParams(type=kind, message=message))
        except Exception:  # transport gone
            log.warning("%s", message)

    def show(self, message: str, *, error: bool = False) -> None:
        kind = types.MessageType.Error if error else types.MessageType.Info
        try:
            self.window_show_message(types.ShowMessageParams(type=kind, message=message))
        except Exception:  # transport gone
            log.warning("%s", message)


def _is_pyproject(uri: str) -> bool:
    return uri.rstrip("/").endswith("/pyproject.toml")


def _register_lifecycle(server: OpenProgramLanguageServer) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(ls: OpenProgramLanguageServer, params: types.InitializeParams) -> None:
        use_client_lines(ls.workspace)
        ls.uses_folders = bool(params.workspace_folders)
        parsed, errors = parse_client_settings(params.initialization_options)
        ls.init_settings = parsed
        ls.recompute_settings()
        for e in errors:
            log.warning("initializationOptions: %s", e)
        ls._init_errors = errors  # told to the client once it is initialized

    @server.feature(types.INITIALIZED)
    async def initialized(ls: OpenProgramLanguageServer, params: types.InitializedParams) -> None:
        generation = ls._settings_generation
        ls.settings_errors("openprogram initializationOptions", ls._init_errors)
        caps = ls.client_capabilities
        ws = caps.workspace if caps else None
        watched = ws.did_change_watched_files if ws else None
        if watched is not None and watched.dynamic_registration:
            try:
                await ls.client_register_capability_async(
                    types.RegistrationParams(
                        registrations=[
                            types.Registration(
                                id="openprogram-pyproject",
                                method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                                register_options=types.DidChangeWatchedFilesRegistrationOptions(
                                    watchers=[
                                        types.FileSystemWatcher(glob_pattern="**/pyproject.toml"),
                                        # helper modules a Program's checks follow
                                        types.FileSystemWatcher(glob_pattern="**/*.py"),
                                    ]
                                ),
                            )
                        ]
                    )
                )
            except Exception as exc:
                ls.log(f"cannot register file watcher: {exc}", error=True)
        await ls.refresh_workspace_settings(generation)
        ls.recompute_settings()
        ls.diagnostics.schedule_all()

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: OpenProgramLanguageServer, params: None) -> None:
        ls.diagnostics.close()
        READERS.close()

    @server.feature(types.EXIT)
    def exit_(ls: OpenProgramLanguageServer, params: None) -> None:
        """``exit`` ends the process, whatever the event loop's teardown waits for: pygls
        exits by raising SystemExit, and asyncio then waits for every cancelled task."""
        ls.diagnostics.close()
        READERS.close()
        code = 0 if ls.protocol._shutdown else 1
        watchdog = threading.Timer(EXIT_GRACE_S, os._exit, args=(code,))
        watchdog.daemon = True  # a normal exit does not wait for it
        watchdog.start()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: OpenProgramLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.opened(params.text_document.uri)
        _check_config_files(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(
        ls: OpenProgramLanguageServer, params: types.DidChangeTextDocumentParams
    ) -> None:
        # while typing, the pyproject stats at most once a CONFIG_CHECK_S (not per key)
        now = time.monotonic()
        if now - ls.config_checked_at >= CONFIG_CHECK_S:
            ls.config_checked_at = now
            if _check_config_files(ls, params.text_document.uri):
                return
        ls.diagnostics.schedule(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: OpenProgramLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
        if _is_pyproject(params.text_document.uri):
            _reload_config(ls)
        elif not _check_config_files(ls, params.text_document.uri):
            _python_files_changed(ls, [params.text_document.uri])

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: OpenProgramLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.forget_document(params.text_document.uri)

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def watched(ls: OpenProgramLanguageServer, params: types.DidChangeWatchedFilesParams) -> None:
        if any(_is_pyproject(c.uri) for c in params.changes):
            _reload_config(ls)  # every open document is analysed again anyway
        else:
            _python_files_changed(ls, [c.uri for c in params.changes])

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    async def folders_changed(
        ls: OpenProgramLanguageServer, params: types.DidChangeWorkspaceFoldersParams
    ) -> None:
        # pygls has updated workspace.folders already: serve them at once (pyproject, store),
        # then with their own resource-scoped settings once pulled
        ls.uses_folders = True
        ls.recompute_settings()
        await ls.refresh_workspace_settings()
        _reload_config(ls)
        runs_view.notify_runs_changed(ls)  # the Runs view lists one node per folder

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def config_changed(
        ls: OpenProgramLanguageServer, params: types.DidChangeConfigurationParams
    ) -> None:
        settings = params.settings
        if isinstance(settings, dict) and CONFIG_SECTION in settings:
            parsed, errors = parse_client_settings(settings[CONFIG_SECTION])
            ls.settings_errors("openprogram settings", errors)
            ls.set_workspace_settings(parsed)
            ls.recompute_settings()  # pushed values apply at once,
            await ls.refresh_workspace_settings(scoped_only=True)  # then each folder's own
        else:
            await ls.refresh_workspace_settings()
        ls.recompute_settings()
        ls.diagnostics.schedule_all()
        _refresh_client_views(ls)


def _reload_config(ls: OpenProgramLanguageServer) -> None:
    ls.recompute_settings()
    ls.log("reloaded [tool.openprogram.lint] from pyproject.toml")
    ls.diagnostics.schedule_all()
    _refresh_client_views(ls)


#: How often an edit checks the pyproject.toml files of its document (seconds).
CONFIG_CHECK_S = 1.0


def _check_config_files(ls: OpenProgramLanguageServer, uri: str) -> bool:
    """Reload the configuration if a pyproject.toml of document ``uri`` changed (stat
    only: ``config_files_changed``); whether it did (every open document is analysed
    again then)."""
    if not ls.config_files_changed(uri):
        return False
    _reload_config(ls)
    return True


def _python_files_changed(ls: OpenProgramLanguageServer, uris: list[str]) -> None:
    """Saved or changed on disk: the open Programs that may follow these modules (helper
    modules next to or below them) are checked again."""
    paths = [p for u in uris if u.endswith(".py") and (p := fs_path(u)) is not None]
    if paths and ls.diagnostics.files_changed(paths):
        ls.refresh_pull_diagnostics()


def _refresh_client_views(ls: OpenProgramLanguageServer) -> None:
    ls.refresh_pull_diagnostics()


def create_server() -> OpenProgramLanguageServer:
    """Build a server with every feature registered."""
    server = OpenProgramLanguageServer()
    GATE.on_change = server.store_state_changed
    READERS.keep = True  # one reader per PostgreSQL store for the server's life
    _register_lifecycle(server)
    diagnostics.register(server)
    code_actions.register(server)
    hover.register(server)
    completion.register(server)
    symbols.register(server)
    code_lenses.register(server)
    run_commands.register(server)
    runs_view.register(server)  # runs view, run graph, step inlay hints (vscode)
    run_graph.register(server)
    inlay_hints.register(server)
    return server


def fs_path(uri: str) -> str | None:
    try:
        return to_fs_path(uri)
    except Exception:
        return None
