"""Helpers of the pytest-lsp harness: a real client over stdio talking to ``python -m openprogram_lsp``."""

from __future__ import annotations

import asyncio
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types
from pytest_lsp import LanguageClient
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

SERVER_CMD = [sys.executable, "-m", "openprogram_lsp"]
WAIT_S = 20.0


def capabilities(*, pull: bool = False) -> types.ClientCapabilities:
    return types.ClientCapabilities(
        window=types.WindowClientCapabilities(work_done_progress=True),
        workspace=types.WorkspaceClientCapabilities(
            configuration=True,
            apply_edit=True,
            workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=True),
            code_lens=types.CodeLensWorkspaceClientCapabilities(refresh_support=True),
            diagnostics=types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
            if pull
            else None,
            did_change_watched_files=types.DidChangeWatchedFilesClientCapabilities(
                dynamic_registration=True
            ),
        ),
        text_document=types.TextDocumentClientCapabilities(
            synchronization=types.TextDocumentSyncClientCapabilities(did_save=True),
            hover=types.HoverClientCapabilities(content_format=[types.MarkupKind.Markdown]),
            completion=types.CompletionClientCapabilities(
                completion_item=types.ClientCompletionItemOptions(
                    documentation_format=[types.MarkupKind.Markdown]
                )
            ),
            document_symbol=types.DocumentSymbolClientCapabilities(
                hierarchical_document_symbol_support=True
            ),
            publish_diagnostics=types.PublishDiagnosticsClientCapabilities(
                related_information=True, version_support=True, code_description_support=True
            ),
            diagnostic=types.DiagnosticClientCapabilities() if pull else None,
        ),
    )


class Recorder:
    """Extra client state: versioned diagnostics, applied edits, lens refreshes."""

    def __init__(self) -> None:
        self.published: list[types.PublishDiagnosticsParams] = []
        self.lens_refreshes = 0
        self.diagnostic_refreshes = 0
        self.registrations: list[types.Registration] = []
        self.docs: dict[str, tuple[int, str]] = {}  # uri -> (version, text) client side


def make_client() -> LanguageClient:
    client = LanguageClient()
    features = {
        k: v
        for k, v in DEFAULT_CLIENT_FEATURES.items()
        if k not in (types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, types.WORKSPACE_DIAGNOSTIC_REFRESH)
    }
    register_lsp_features(client, features)
    rec = Recorder()
    client.rec = rec  # type: ignore[attr-defined]

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def publish(ls: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
        ls.diagnostics[params.uri] = params.diagnostics
        rec.published.append(params)

    @client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def lens_refresh(ls: LanguageClient, params: None) -> None:
        rec.lens_refreshes += 1

    @client.feature(types.WORKSPACE_DIAGNOSTIC_REFRESH)
    def diagnostic_refresh(ls: LanguageClient, params: None) -> None:
        rec.diagnostic_refreshes += 1

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register_cap(ls: LanguageClient, params: types.RegistrationParams) -> None:
        rec.registrations.extend(params.registrations)

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(
        ls: LanguageClient, params: types.ApplyWorkspaceEditParams
    ) -> types.ApplyWorkspaceEditResult:
        for change in params.edit.document_changes or []:
            assert isinstance(change, types.TextDocumentEdit)
            uri = change.text_document.uri
            version, text = rec.docs[uri]
            if change.text_document.version not in (None, version):
                return types.ApplyWorkspaceEditResult(applied=False, failure_reason="stale")
            new_text = apply_edits(text, list(change.edits))
            edit_doc(ls, uri, new_text)
        return types.ApplyWorkspaceEditResult(applied=True)

    return client


def rec_of(client: LanguageClient) -> Recorder:
    return client.rec  # type: ignore[attr-defined]


def offset(text: str, pos: types.Position) -> int:
    # an LSP client's lines: str.splitlines would also break at a form feed
    lines = re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+", text)
    if pos.line >= len(lines):
        return len(text)
    return sum(len(s) for s in lines[: pos.line]) + min(
        pos.character, len(lines[pos.line].rstrip("\r\n"))
    )


def apply_edits(text: str, edits: list[Any]) -> str:
    for e in sorted(
        edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True
    ):
        a, b = offset(text, e.range.start), offset(text, e.range.end)
        text = text[:a] + e.new_text + text[b:]
    return text


def open_doc(client: LanguageClient, uri: str, text: str, version: int = 1) -> None:
    rec_of(client).docs[uri] = (version, text)
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="python", version=version, text=text
            )
        )
    )


def change_range(
    client: LanguageClient, uri: str, start: tuple[int, int], end: tuple[int, int], new: str
) -> int:
    """Incremental didChange; keeps the client's copy in sync. Returns the new version."""
    version, text = rec_of(client).docs[uri]
    rng = types.Range(types.Position(*start), types.Position(*end))
    text = apply_edits(text, [types.TextEdit(range=rng, new_text=new)])
    version += 1
    rec_of(client).docs[uri] = (version, text)
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangePartial(range=rng, text=new)],
        )
    )
    return version


def edit_doc(client: LanguageClient, uri: str, new_text: str) -> int:
    """Replace the whole text through one incremental change."""
    _, text = rec_of(client).docs[uri]
    lines = text.splitlines(keepends=True)
    end = (len(lines), 0)
    return change_range(client, uri, (0, 0), end, new_text)


async def wait_for(pred: Callable[[], Any], what: str, timeout: float = WAIT_S) -> Any:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = pred()
        if value:
            return value
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


async def diags_for(client: LanguageClient, uri: str, version: int) -> list[types.Diagnostic]:
    def found() -> Any:
        for p in reversed(rec_of(client).published):
            if p.uri == uri and p.version == version:
                return [p]
        return None

    hit = await wait_for(found, f"diagnostics of {uri} v{version}")
    return list(hit[0].diagnostics)


def init_params(
    root: Path,
    *,
    init_options: Any = None,
    pull: bool = False,
    folders: list[str] | None = None,
) -> types.InitializeParams:
    """``folders``: names of subdirectories of ``root`` opened as a multi-root workspace."""
    roots = [root / name for name in folders] if folders else [root]
    for r in roots:
        r.mkdir(parents=True, exist_ok=True)
    return types.InitializeParams(
        capabilities=capabilities(pull=pull),
        root_uri=roots[0].as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=r.as_uri(), name=r.name) for r in roots],
        initialization_options=init_options,
    )


async def execute(client: LanguageClient, command: str, *arguments: Any) -> Any:
    """``workspace/executeCommand`` returning the (JSON) result."""
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=command, arguments=list(arguments))
    )


class RunsSeen:
    """What a client counted of the server's run notifications."""

    def __init__(self) -> None:
        self.hint_refreshes = 0
        self.runs_changed = 0


def make_runs_client() -> LanguageClient:
    """:func:`make_client` that also counts inlay-hint refreshes and ``openprogram/runsChanged``
    notifications (read them with :func:`runs_seen`)."""
    client = make_client()
    seen = RunsSeen()
    client.runs_seen = seen  # type: ignore[attr-defined]

    @client.feature(types.WORKSPACE_INLAY_HINT_REFRESH)
    def hint_refresh(ls: LanguageClient, params: None) -> None:
        seen.hint_refreshes += 1

    @client.feature("openprogram/runsChanged")
    def runs_changed(ls: LanguageClient, params: Any) -> None:
        seen.runs_changed += 1

    return client


def runs_capabilities() -> types.ClientCapabilities:
    """:func:`capabilities` of a client that refreshes inlay hints when the server asks."""
    caps = capabilities()
    assert caps.workspace is not None
    caps.workspace.inlay_hint = types.InlayHintWorkspaceClientCapabilities(refresh_support=True)
    return caps


def runs_seen(client: LanguageClient) -> RunsSeen:
    return client.runs_seen  # type: ignore[attr-defined]


def as_dict(value: Any) -> Any:
    """pygls hands custom results over as namedtuples: back to plain JSON values."""
    if hasattr(value, "_asdict"):
        return {k: as_dict(v) for k, v in value._asdict().items()}
    if isinstance(value, list):
        return [as_dict(v) for v in value]
    return value


async def start(
    folders: list[Path],
    *,
    env: dict[str, str] | None = None,
    options: Any = None,
    scoped: dict[Path, dict[str, Any]] | None = None,
    cwd: Path | None = None,
) -> LanguageClient:
    """A real server over stdio with a :func:`make_runs_client` client, initialized on the
    workspace ``folders`` (``env`` added to this process's environment; ``options``: the
    initialization options; ``scoped``: each folder's ``openprogram`` settings, as VS Code
    answers them per ``scopeUri``; ``cwd``: the server's working directory). End it with
    :func:`stop`."""
    client = make_runs_client()
    for folder, settings in (scoped or {}).items():
        client.set_configuration({"openprogram": settings}, scope_uri=folder.as_uri())
    await client.start_io(*SERVER_CMD, env={**os.environ, **(env or {})}, cwd=cwd)
    caps = runs_capabilities()
    await client.initialize_session(
        types.InitializeParams(
            capabilities=caps,
            root_uri=folders[0].as_uri(),
            initialization_options=options,
            workspace_folders=[types.WorkspaceFolder(uri=f.as_uri(), name=f.name) for f in folders],
        )
    )
    return client


async def stop(client: LanguageClient) -> None:
    await client.shutdown_session()
    await client.stop()


async def request(client: LanguageClient, method: str, params: dict[str, Any]) -> Any:
    """A custom request (``openprogram/runs``, ...) and its result as plain JSON values."""
    return as_dict(await client.protocol.send_request_async(method, params))
