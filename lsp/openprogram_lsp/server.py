"""The OpenProgram language server: state, lifecycle and document sync.

Feature handlers live in their own modules and are registered by ``create_server``.
User code never runs in this process: analysis is static, runs are subprocesses.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path
from pygls.workspace import TextDocument

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
    Settings,
    load_pyproject,
    parse_client_settings,
)
from .diagnostics import DiagnosticsEngine
from .outline import Outline, build_outline

log = logging.getLogger(__name__)

try:
    from openprogram._version import __version__ as _VERSION
except Exception:  # pragma: no cover - engine always installed alongside
    _VERSION = "0"


class OpenProgramLanguageServer(LanguageServer):
    """pygls server with OpenProgram state."""

    def __init__(self) -> None:
        super().__init__(
            "openprogram-lsp",
            _VERSION,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
        )
        self.settings = Settings()
        self.init_settings = ClientSettings()
        self.workspace_settings = ClientSettings()
        self.diagnostics = DiagnosticsEngine(self)
        self._outlines: dict[str, tuple[int | None, str, Outline | None]] = {}
        self._settings_generation = 0

    # -- documents --------------------------------------------------------------------
    def open_uris(self) -> list[str]:
        return list(self.workspace.text_documents.keys())

    def open_document(self, uri: str) -> TextDocument | None:
        """The open document for ``uri``, or None (never reads unknown URIs from disk)."""
        return self.workspace.text_documents.get(uri)

    def outline(self, uri: str) -> Outline | None:
        """AST outline of the open document (cached per version); None if it does not parse."""
        doc = self.open_document(uri)
        if doc is None:
            return None
        text = doc.source
        cached = self._outlines.get(uri)
        if cached is not None and cached[0] == doc.version and cached[1] == text:
            return cached[2]
        outline = build_outline(text)
        self._outlines[uri] = (doc.version, text, outline)
        return outline

    def forget_document(self, uri: str) -> None:
        self._outlines.pop(uri, None)
        self.diagnostics.forget(uri)

    # -- settings ---------------------------------------------------------------------
    @property
    def root(self) -> Path | None:
        root = self.workspace.root_path
        return Path(root) if root else None

    @property
    def push_diagnostics(self) -> bool:
        """Push unless the client pulls (avoids showing every diagnostic twice)."""
        caps = self.client_capabilities
        td = caps.text_document if caps else None
        return not (td is not None and td.diagnostic is not None)

    def recompute_settings(self) -> None:
        pyproject, err = load_pyproject(self.root)
        if err:
            self.log(err, error=True)
        self.settings = Settings(
            root=self.root,
            client=self.init_settings.overlay(self.workspace_settings),
            pyproject_config=pyproject,
            pyproject_error=err,
        )

    async def refresh_workspace_settings(self, generation: int | None = None) -> None:
        """Pull the ``openprogram`` section; ignored if settings were pushed since ``generation``."""
        caps = self.client_capabilities
        ws = caps.workspace if caps else None
        if ws is None or not ws.configuration:
            return
        if generation is None:
            generation = self._settings_generation
        try:
            values = await asyncio.wait_for(
                self.workspace_configuration_async(
                    types.ConfigurationParams(
                        items=[types.ConfigurationItem(section=CONFIG_SECTION)]
                    )
                ),
                timeout=5.0,
            )
        except Exception as exc:
            self.log(f"workspace/configuration failed: {exc}", error=True)
            return
        if generation != self._settings_generation:
            return  # settings pushed meanwhile are newer
        raw = values[0] if values else None
        parsed, errors = parse_client_settings(raw)
        for e in errors:
            self.log(f"openprogram settings: {e}", error=True)
        self.set_workspace_settings(parsed)

    def set_workspace_settings(self, parsed: ClientSettings) -> None:
        self._settings_generation += 1
        self.workspace_settings = parsed

    def recorded_steps(self, uri: str) -> Any:
        """Step identities of paused runs for OP209 (None until the durable store exists)."""
        from .run_index import recorded_steps_for

        doc = self.open_document(uri)
        if doc is None or not uri.startswith("file:"):
            return None
        return recorded_steps_for(self.settings.store_dir(), doc.path)

    # -- client messages ----------------------------------------------------------------
    def log(self, message: str, *, error: bool = False) -> None:
        kind = types.MessageType.Error if error else types.MessageType.Log
        try:
            self.window_log_message(types.LogMessageParams(type=kind, message=message))
        except Exception:  # transport gone
            log.warning("%s", message)

    def show(self, message: str, *, error: bool = False) -> None:
        kind = types.MessageType.Error if error else types.MessageType.Info
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))


def _is_pyproject(uri: str) -> bool:
    return uri.rstrip("/").endswith("/pyproject.toml")


def _register_lifecycle(server: OpenProgramLanguageServer) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(ls: OpenProgramLanguageServer, params: types.InitializeParams) -> None:
        parsed, errors = parse_client_settings(params.initialization_options)
        ls.init_settings = parsed
        ls.recompute_settings()
        for e in errors:
            log.warning("initializationOptions: %s", e)

    @server.feature(types.INITIALIZED)
    async def initialized(ls: OpenProgramLanguageServer, params: types.InitializedParams) -> None:
        generation = ls._settings_generation
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
                                        types.FileSystemWatcher(glob_pattern="**/pyproject.toml")
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

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: OpenProgramLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.diagnostics.results.pop(params.text_document.uri, None)
        ls.diagnostics.schedule(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(
        ls: OpenProgramLanguageServer, params: types.DidChangeTextDocumentParams
    ) -> None:
        ls.diagnostics.schedule(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: OpenProgramLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
        if _is_pyproject(params.text_document.uri):
            _reload_config(ls)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: OpenProgramLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.forget_document(params.text_document.uri)

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def watched(ls: OpenProgramLanguageServer, params: types.DidChangeWatchedFilesParams) -> None:
        if any(_is_pyproject(c.uri) for c in params.changes):
            _reload_config(ls)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def config_changed(
        ls: OpenProgramLanguageServer, params: types.DidChangeConfigurationParams
    ) -> None:
        settings = params.settings
        if isinstance(settings, dict) and CONFIG_SECTION in settings:
            parsed, errors = parse_client_settings(settings[CONFIG_SECTION])
            for e in errors:
                ls.log(f"openprogram settings: {e}", error=True)
            ls.set_workspace_settings(parsed)
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


def _refresh_client_views(ls: OpenProgramLanguageServer) -> None:
    caps = ls.client_capabilities
    ws = caps.workspace if caps else None
    if ws is not None and ws.diagnostics is not None and ws.diagnostics.refresh_support:
        ls.workspace_diagnostic_refresh(None)


def create_server() -> OpenProgramLanguageServer:
    """Build a server with every feature registered."""
    server = OpenProgramLanguageServer()
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
