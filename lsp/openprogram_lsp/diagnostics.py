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
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.workspace import TextDocument

from .analysis import AnalysisResult, analyze
from .documents import DocumentState, document_key
from .full_worker import FullAnalysisWorker, WorkerCrashed
from .incremental import IncrementalAnalyzer
from .positions import finding_range, split_lines

if TYPE_CHECKING:
    from openprogram_analyzers.program import ProgramModel

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
                    if document_key(r_uri) == document_key(result.uri)
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
    """Owns analysis scheduling; the results live in each document's ``DocumentState``.

    Per document one loop runs at a time: an incremental pass right after a change
    (leading edge; changes arriving meanwhile are coalesced into the next pass), then,
    once the document has been quiet for the debounce delay, a full analysis that
    refreshes cross-statement findings and becomes the new incremental base. Pull clients
    are asked to pull again (``workspace/diagnostic/refresh``) after each full analysis.
    """

    def __init__(self, server: OpenProgramLanguageServer) -> None:
        self.server = server
        self.fast_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="op-fast")
        self.full_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="op-full")
        self.worker: FullAnalysisWorker | None = FullAnalysisWorker()
        self.closed = False
        # counts configuration changes: an analysis begun under older settings is not
        # remembered (its findings would pass for the new settings' ones)
        self.generation = 0

    def close(self) -> None:
        """Server shutdown: stop the worker process and the analysis threads; no
        analysis starts afterwards."""
        self.closed = True
        if self.worker is not None:
            self.worker.stop()
        self.fast_pool.shutdown(wait=False, cancel_futures=True)
        self.full_pool.shutdown(wait=False, cancel_futures=True)

    # -- scheduling ------------------------------------------------------------------
    def schedule(self, uri: str) -> None:
        """Request analysis of the current version of ``uri``."""
        state = self.server.document_state(uri)
        if state is None or self.closed:
            return
        state.changes += 1
        state.wake.set()
        if state.task is not None and not state.task.done():
            return  # the running loop picks up the newest version
        state.task = asyncio.ensure_future(self._loop(state))

    def schedule_all(self) -> None:
        """Configuration changed: forget results and bases, re-analyse open documents."""
        self.generation += 1
        for state in list(self.server.documents.values()):
            state.result = None
            state.incremental = IncrementalAnalyzer()
            state.worker_crash_key = None
            self.schedule(state.uri)

    def files_changed(self, paths: Sequence[str]) -> bool:
        """Python files changed on disk: forget the results of the open documents whose
        checks read them (helper modules, read from disk, or looked for and missing) and
        analyse those again; before a document's first whole-file analysis, any file next
        to or below it counts. Whether any was."""
        changed = [os.path.abspath(p) for p in paths]
        again = False
        for state in list(self.server.documents.values()):
            doc = self.server.open_document(state.uri)
            if doc is None or not state.uri.startswith("file:") or not doc.path:
                continue
            own = os.path.abspath(doc.path)
            folder = os.path.dirname(own) + os.sep
            known = state.helper_files
            if any(
                p in known if known is not None else p != own and p.startswith(folder)
                for p in changed
            ):
                state.result = None
                state.incremental = IncrementalAnalyzer()  # its chunks hold helper findings
                state.worker_crash_key = None
                self.schedule(state.uri)
                again = True
        return again

    def clear(self, uri: str) -> None:
        """Document closed: clear its diagnostics in the client."""
        self.server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
        )

    async def _loop(self, state: DocumentState) -> None:
        uri = state.uri
        try:
            while not self.closed:
                seen = state.changes
                doc = self.server.open_document(uri)
                if doc is None or self.server.state_of(uri) is not state:
                    return
                result = await self.analyse(uri, doc)
                self._publish_if_current(result)
                if state.changes != seen:
                    continue  # coalesced changes: analyse the newest version now
                if result.complete:
                    return
                # wait for a quiet moment, waking up at once on a new change
                delay = self.server.settings_for(uri).debounce_s
                state.wake.clear()
                if state.changes == seen:
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(state.wake.wait(), delay)
                if state.changes != seen:
                    continue
                if state.full_task is None or state.full_task.done():
                    # not awaited: new edits get their incremental pass meanwhile
                    state.full_task = asyncio.ensure_future(self._full(state))
                return
        except asyncio.CancelledError:
            raise
        except Exception:
            if not self.closed:  # after shutdown the pools refuse work: expected
                log.exception("diagnostics loop failed for %s", uri)

    async def _full(self, state: DocumentState) -> None:
        """Whole-file analysis of the current version; publishes if still current."""
        uri = state.uri
        try:
            doc = self.server.open_document(uri)
            if doc is None:
                return
            full = await self.analyse(uri, doc, full=True)
            if self._publish_if_current(full):
                self.server.refresh_pull_diagnostics()
            current = self.server.open_document(uri)
            if current is not None and current.version != full.version:
                self.schedule(uri)  # edits arrived meanwhile: their full pass is due
        except asyncio.CancelledError:
            raise
        except Exception:
            if not self.closed:
                log.exception("full analysis failed for %s", uri)

    def _publish_if_current(self, result: AnalysisResult) -> bool:
        current = self.server.open_document(result.uri)
        if current is not None and current.version == result.version:
            self.publish(result, current)
            return True
        return False

    async def analyse(self, uri: str, doc: TextDocument, *, full: bool = False) -> AnalysisResult:
        """Analyse the document's current text off the event loop (cached per version).

        ``full=False`` runs the incremental pass; ``full=True`` the whole-file analysis,
        whose findings become the incremental base. The whole-file analysis runs in the
        worker process; text that crashed the worker is never analysed in this process.
        """
        state = self.server.document_state(uri) or DocumentState(uri)
        # the version is read together with the text: a change landing during an await
        # below must not make this text's findings pass for the new version's
        text, version = doc.source, doc.version
        cached = state.result
        if (
            cached is not None
            and cached.version == version
            and cached.text == text
            and (cached.complete or not full)
        ):
            return cached
        generation = self.generation
        settings = self.server.settings_for(uri)
        path = document_path(uri, doc)
        config = settings.lint_config()
        if config is not None and uri.startswith("file:") and config.is_excluded(path):
            return self._keep(state, AnalysisResult(uri, version, text, ()))  # `exclude`d
        full = full or len(text) < settings.incremental_min_chars
        recorded = await self.server.recorded_steps(uri)
        inc = state.incremental
        key = (version, hash(text))
        result: AnalysisResult | None = None
        if full and self.worker is not None:
            if state.worker_crash_key == key:
                result = self._crashed(state, version, text, "analysis worker crashed")
            else:
                try:
                    found, model, deps = await self.worker.analyze(text, path, config, recorded)
                    result = AnalysisResult(uri, version, text, found, model=model, depends_on=deps)
                except WorkerCrashed as exc:
                    # never retried here: what killed the worker would kill the server
                    state.worker_crash_key = key
                    self.server.log(f"analysis worker crashed on {uri}: {exc}", error=True)
                    result = self._crashed(state, version, text, str(exc))
                except OSError as exc:
                    self.server.log(f"analysis worker: {exc}; analysing in-process", error=True)
                except Exception as exc:
                    result = AnalysisResult(uri, version, text, (), internal_error=str(exc))
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
        if generation != self.generation:
            return result  # the settings changed meanwhile: schedule_all analyses it again
        if result.internal_error:
            self.server.log(f"analyzer error on {uri}: {result.internal_error}", error=True)
        elif full and state.incremental is inc:
            inc.set_base(result.text, result.findings)
        if result.depends_on is not None and self.server.state_of(uri) is state:
            state.helper_files = frozenset(result.depends_on)
        if result.model is not None:
            self.server.model_built(state, text, result.model)
        return self._keep(state, result)

    async def findings_of(self, text: str, path: str, config: Any) -> tuple[Any, ...]:
        """Whole-file findings of ``text`` (not tied to a document version), computed
        in the worker; ``()`` if it crashes on the text."""
        if self.worker is not None:
            try:
                return (await self.worker.analyze(text, path, config, None))[0]
            except WorkerCrashed:
                return ()
            except OSError:
                pass  # no worker: in-process (the nesting guard still applies)
        loop = asyncio.get_running_loop()
        result = await loop.run_in_executor(
            self.full_pool, analyze, "", None, text, path, config, None, None
        )
        return result.findings

    async def program_model(self, text: str) -> ProgramModel | None:
        """The analyzer's Program model of ``text`` (None: it is not analysed), built in
        the worker (in a thread when there is no worker; the nesting guard still applies)."""
        if self.worker is not None:
            try:
                return (await self.worker.analyze(text, "<model>", None, None, only_model=True))[1]
            except (WorkerCrashed, RuntimeError):
                return None  # died on this text, or the analyzer failed on it
            except OSError:
                pass
        from openprogram_analyzers.program import program_model_of

        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.full_pool, program_model_of, text)

    def is_excluded(self, uri: str, doc: TextDocument) -> bool:
        """The document is left out by ``exclude`` (never analysed)."""
        config = self.server.settings_for(uri).lint_config()
        return (
            config is not None
            and uri.startswith("file:")
            and config.is_excluded(document_path(uri, doc))
        )

    def _crashed(
        self, state: DocumentState, version: int | None, text: str, why: str
    ) -> AnalysisResult:
        """Result of a version the worker died on: the fast pass's findings are kept."""
        kept = state.result.findings if state.result and state.result.version == version else ()
        msg = f"{why}; cross-statement checks skipped for this version"
        return AnalysisResult(state.uri, version, text, kept, internal_error=msg)

    def _keep(self, state: DocumentState, result: AnalysisResult) -> AnalysisResult:
        """Remember ``result`` if it is for the current version (a full one wins)."""
        current = self.server.open_document(state.uri)
        if current is not None and current.version == result.version:
            prev = state.result
            if prev is None or prev.version != result.version or not prev.complete:
                state.result = result
        return result

    def diagnostics_for(self, result: AnalysisResult, doc: TextDocument) -> list[types.Diagnostic]:
        lines = split_lines(result.text)
        docs_url = self.server.settings_for(result.uri).rule_docs_url
        return to_diagnostics(result, lines, doc, docs_url)

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
