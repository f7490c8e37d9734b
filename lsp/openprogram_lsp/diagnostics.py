"""Diagnostics: push (``publishDiagnostics`` with versions) and pull (``textDocument/diagnostic``).

Scheduling: the first change after an idle period is analysed at once (leading edge);
changes that arrive while an analysis runs are coalesced and analysed after the document
has been quiet for the debounce delay. Analysis runs in a worker thread, off the event
loop. A result whose document version is no longer current is discarded.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.workspace import TextDocument

from .analysis import AnalysisResult, analyze
from .full_worker import FullAnalysisWorker, WorkerCrashed
from .incremental import IncrementalAnalyzer
from .positions import finding_range

if TYPE_CHECKING:
    from .server import OpenProgramLanguageServer

log = logging.getLogger(__name__)

SOURCE = "openprogram"
_SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "info": types.DiagnosticSeverity.Information,
    "information": types.DiagnosticSeverity.Information,
    "hint": types.DiagnosticSeverity.Hint,
}


def document_path(uri: str, doc: TextDocument | None) -> str:
    """Filesystem path for ``file:`` URIs, else the URI itself (``untitled:...``)."""
    if doc is not None and doc.path and uri.startswith("file:"):
        return doc.path
    return uri


def rule_href(template: str, code: str) -> str | None:
    try:
        return template.format(code=code, anchor=code.lower(), code_lower=code.lower())
    except (KeyError, IndexError, ValueError):
        return None


def to_diagnostics(
    result: AnalysisResult, lines: Sequence[str], doc: TextDocument, docs_url: str
) -> list[types.Diagnostic]:
    """Convert analyzer findings (1-based, code points) into LSP diagnostics."""
    codec = doc.position_codec
    out: list[types.Diagnostic] = []
    if result.internal_error:
        out.append(
            types.Diagnostic(
                range=types.Range(types.Position(0, 0), types.Position(0, 0)),
                message=f"openprogram analyzer internal error: {result.internal_error}",
                severity=types.DiagnosticSeverity.Information,
                source=SOURCE,
            )
        )
    for index, f in enumerate(result.findings):
        try:
            rng = finding_range(lines, codec, f.line, f.column, f.end_line, f.end_column)
            related = []
            for r in getattr(f, "related", ()) or ():
                r_uri = result.uri
                if r.path and r.path != f.path:
                    from pygls.uris import from_fs_path

                    r_uri = from_fs_path(r.path) or result.uri
                r_rng = (
                    finding_range(lines, codec, r.line, r.column, r.end_line, r.end_column)
                    if r_uri == result.uri
                    else types.Range(
                        types.Position(max(r.line - 1, 0), max(r.column - 1, 0)),
                        types.Position(max(r.end_line - 1, 0), max(r.end_column - 1, 0)),
                    )
                )
                related.append(
                    types.DiagnosticRelatedInformation(
                        location=types.Location(uri=r_uri, range=r_rng), message=r.message
                    )
                )
            href = rule_href(docs_url, f.code)
            out.append(
                types.Diagnostic(
                    range=rng,
                    message=f.message,
                    severity=_SEVERITY.get(str(f.severity), types.DiagnosticSeverity.Warning),
                    code=f.code,
                    code_description=types.CodeDescription(href=href) if href else None,
                    source=SOURCE,
                    related_information=related or None,
                    data={"index": index, "version": result.version},
                )
            )
        except Exception as exc:  # a malformed finding must not drop the others
            log.error("cannot convert finding %r: %s", f, exc)
    return out


class DiagnosticsEngine:
    """Owns analysis scheduling; keeps the latest result per document.

    Per document one loop runs at a time: an incremental pass right after a change
    (leading edge; changes arriving meanwhile are coalesced into the next pass), then,
    once the document has been quiet for the debounce delay, a full analysis that
    refreshes cross-statement findings and becomes the new incremental base.
    """

    def __init__(self, server: OpenProgramLanguageServer) -> None:
        self.server = server
        self.fast_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="op-fast")
        self.full_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="op-full")
        self.results: dict[str, AnalysisResult] = {}
        self.incremental: dict[str, IncrementalAnalyzer] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._full_tasks: dict[str, asyncio.Task[None]] = {}
        self._wake: dict[str, asyncio.Event] = {}
        self.worker: FullAnalysisWorker | None = FullAnalysisWorker()
        self._changes: dict[str, int] = {}
        self._last_change: dict[str, float] = {}

    # -- scheduling ------------------------------------------------------------------
    def schedule(self, uri: str) -> None:
        """Request analysis of the current version of ``uri``."""
        self._changes[uri] = self._changes.get(uri, 0) + 1
        self._last_change[uri] = time.monotonic()
        wake = self._wake.get(uri)
        if wake is not None:
            wake.set()
        task = self._tasks.get(uri)
        if task is not None and not task.done():
            return  # the running loop picks up the newest version
        self._tasks[uri] = asyncio.ensure_future(self._loop(uri))

    def schedule_all(self) -> None:
        """Configuration changed: forget results and bases, re-analyse open documents."""
        for uri in list(self.server.open_uris()):
            self.results.pop(uri, None)
            self.incremental.pop(uri, None)
            self.schedule(uri)

    def forget(self, uri: str) -> None:
        """Document closed: stop work, drop results, clear its diagnostics."""
        for tasks in (self._tasks, self._full_tasks):
            task = tasks.pop(uri, None)
            if task is not None:
                task.cancel()
        self.results.pop(uri, None)
        self.incremental.pop(uri, None)
        self._changes.pop(uri, None)
        self._last_change.pop(uri, None)
        self._wake.pop(uri, None)
        self.server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
        )

    async def _loop(self, uri: str) -> None:
        try:
            while True:
                seen = self._changes.get(uri, 0)
                doc = self.server.open_document(uri)
                if doc is None:
                    return
                result = await self.analyse(uri, doc)
                self._publish_if_current(uri, result)
                if self._changes.get(uri, 0) != seen:
                    continue  # coalesced changes: analyse the newest version now
                if result.complete:
                    return
                # wait for a quiet moment, waking up at once on a new change
                delay = self.server.settings.debounce_s
                wake = self._wake.setdefault(uri, asyncio.Event())
                wake.clear()
                if self._changes.get(uri, 0) == seen:
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(wake.wait(), delay)
                if self._changes.get(uri, 0) != seen:
                    continue
                full = self._full_tasks.get(uri)
                if full is None or full.done():
                    # not awaited: new edits get their incremental pass meanwhile
                    self._full_tasks[uri] = asyncio.ensure_future(self._full(uri))
                return
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("diagnostics loop failed for %s", uri)

    async def _full(self, uri: str) -> None:
        """Whole-file analysis of the current version; publishes if still current."""
        try:
            doc = self.server.open_document(uri)
            if doc is None:
                return
            full = await self.analyse(uri, doc, full=True)
            self._publish_if_current(uri, full)
            current = self.server.open_document(uri)
            if current is not None and current.version != full.version:
                self.schedule(uri)  # edits arrived meanwhile: their full pass is due
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("full analysis failed for %s", uri)

    def _publish_if_current(self, uri: str, result: AnalysisResult) -> None:
        current = self.server.open_document(uri)
        if current is not None and current.version == result.version:
            self.publish(result, current)

    async def analyse(self, uri: str, doc: TextDocument, *, full: bool = False) -> AnalysisResult:
        """Analyse the document's current text off the event loop (cached per version).

        ``full=False`` runs the incremental pass; ``full=True`` the whole-file analysis,
        whose findings become the incremental base.
        """
        cached = self.results.get(uri)
        if (
            cached is not None
            and cached.version == doc.version
            and cached.text == doc.source
            and (cached.complete or not full)
        ):
            return cached
        # the version read together with the text: a change landing during an await
        # below must not make this text's findings pass for the new version's
        text, version = doc.source, doc.version
        settings = self.server.settings
        full = full or len(text) < settings.incremental_min_chars
        recorded = self.server.recorded_steps(uri)
        inc = self.incremental.setdefault(uri, IncrementalAnalyzer())
        path = document_path(uri, doc)
        config = settings.lint_config()
        result: AnalysisResult | None = None
        if full and self.worker is not None:
            try:
                found = await self.worker.analyze(text, path, config, recorded)
                result = AnalysisResult(uri, version, text, found)
            except WorkerCrashed as exc:
                # never retried in this process: whatever killed the worker would kill
                # the server; the worker restarts for the next request
                self.server.log(f"analysis worker crashed on {uri}: {exc}", error=True)
                kept = cached.findings if cached is not None and cached.version == version else ()
                msg = f"{exc}; cross-statement checks skipped for this version"
                result = AnalysisResult(uri, version, text, kept, internal_error=msg)
            except Exception as exc:
                self.server.log(f"analysis worker: {exc}; analysing in-process", error=True)
        if result is None:
            loop = asyncio.get_running_loop()
            result = await loop.run_in_executor(
                self.full_pool if full else self.fast_pool,
                analyze,
                uri,
                version,
                text,
                path,
                config,
                recorded,
                None if full else inc,
            )
        if result.internal_error:
            self.server.log(f"analyzer error on {uri}: {result.internal_error}", error=True)
        elif full and self.incremental.get(uri) is inc:
            inc.set_base(result.text, result.findings)
        current = self.server.open_document(uri)
        if current is not None and current.version == result.version:
            prev = self.results.get(uri)
            if prev is None or prev.version != result.version or not prev.complete:
                self.results[uri] = result
        return result

    def diagnostics_for(self, result: AnalysisResult, doc: TextDocument) -> list[types.Diagnostic]:
        lines = result.text.splitlines(keepends=True)
        return to_diagnostics(result, lines, doc, self.server.settings.rule_docs_url)

    def publish(self, result: AnalysisResult, doc: TextDocument) -> None:
        if not self.server.push_diagnostics:
            return
        diags = self.diagnostics_for(result, doc)
        self.server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=result.uri, diagnostics=diags, version=doc.version)
        )


def result_id(result: AnalysisResult) -> str:
    digest = hashlib.blake2s(result.text.encode("utf-8", "surrogatepass"), digest_size=8)
    return f"{result.version}-{digest.hexdigest()}-{len(result.findings)}"


def register(server: OpenProgramLanguageServer) -> None:
    @server.feature(
        types.TEXT_DOCUMENT_DIAGNOSTIC,
        types.DiagnosticOptions(
            identifier=SOURCE, inter_file_dependencies=False, workspace_diagnostics=False
        ),
    )
    async def pull_diagnostics(
        ls: OpenProgramLanguageServer, params: types.DocumentDiagnosticParams
    ) -> types.DocumentDiagnosticReport:
        uri = params.text_document.uri
        doc = ls.open_document(uri)
        if doc is None:
            return types.RelatedFullDocumentDiagnosticReport(items=[])
        result = await ls.diagnostics.analyse(uri, doc)
        rid = result_id(result)
        if params.previous_result_id == rid:
            return types.RelatedUnchangedDocumentDiagnosticReport(result_id=rid)
        items = ls.diagnostics.diagnostics_for(result, doc)
        return types.RelatedFullDocumentDiagnosticReport(items=items, result_id=rid)


__all__: list[Any] = ["DiagnosticsEngine", "register", "to_diagnostics"]
