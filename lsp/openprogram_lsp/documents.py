"""Per-document state: one object per open URI, dropped as a whole when it closes.

Everything the server derives from one document lives here — the latest analysis, the
incremental base, the scheduled analysis tasks and the last outline that parsed — so
closing a document (or reopening it) cannot leave a stale piece behind in another map.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import unquote

from .analysis import AnalysisResult
from .incremental import IncrementalAnalyzer

if TYPE_CHECKING:
    from openprogram_analyzers.program import ProgramModel

    from .inlay_hints import RunHints, StepSite, StoreVersions
    from .outline import Outline
    from .raw_json import RawJSON


def document_key(uri: str) -> str:
    """The key an open document is found by, from any spelling of its URI the client
    sends: pygls's own (``Workspace`` keeps documents under ``unquote(uri)``), so
    ``file:///a%20b/%C3%B6.py`` and ``file:///a%20b/%c3%b6.py`` are one document. Only a
    key: the way back to the URI the client opened it with is the document's ``uri``
    (what diagnostics are published on)."""
    return unquote(uri)


@dataclass(eq=False)
class DocumentState:
    """What the server knows about one open document."""

    uri: str  # as the client opened it (``didOpen``): diagnostics are published on it
    result: AnalysisResult | None = None  # latest analysis (of the current version, or older)
    incremental: IncrementalAnalyzer = field(default_factory=IncrementalAnalyzer)
    changes: int = 0  # didChange count: a pass compares it to see newer edits
    task: asyncio.Task[None] | None = None  # the diagnostics loop
    full_task: asyncio.Task[None] | None = None  # the debounced whole-file pass
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    outline: Outline | None = None  # last outline that parsed (survives a syntax error)
    outline_key: tuple[int | None, int, int] | None = None  # (version, hash, model id)
    model: ProgramModel | None = None  # the analyzer's Program model (of model_digest)
    model_digest: int | None = None  # hash of the text a model was last built from
    model_task: asyncio.Task[None] | None = None  # a model being built in the worker
    worker_crash_key: tuple[int | None, int] | None = None  # text that killed the worker
    # helper modules the last whole-file analysis read or looked for (None: none yet)
    helper_files: frozenset[str] | None = None
    hint_sites: tuple[Outline, list[StepSite]] | None = None  # inlay-hint sites of an outline
    hint_runs: tuple[StoreVersions, RunHints] | None = None  # the file's runs, by store version
    hint_answer: tuple[Outline, object, RawJSON] | None = None  # last inlay-hint answer, its key

    def close(self) -> None:
        """Stop this document's work (its state is dropped by the caller)."""
        for task in (self.task, self.full_task, self.model_task):
            if task is not None and not task.done():
                task.cancel()
        self.task = self.full_task = self.model_task = None
        self.result = None
        self.incremental = IncrementalAnalyzer()
        self.hint_sites = self.hint_runs = self.hint_answer = None
