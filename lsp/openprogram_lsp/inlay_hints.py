"""Inlay hints: the latest run's state of each step, at the end of its line.

On every ``step("name", ...)`` / ``workflow("name", ...)`` call and every branch key of a
``parallel({...})`` literal: ``✓ 12 ms → {"i": 3}``, ``‖ paused here``, ``✗ ValueError …``,
``? uncertain``, ``… running``. The run is the newest run of the enclosing function, else
the newest run of the file that has a step of that name (helpers reached through
``workflow``). Read from the store's read-only query API; the client is asked to refresh
the hints when runs change (``runs_view.RunsWatcher``).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from openprogram.durable import queries
from openprogram.durable.queries import RunRow, StepRow

from .outline import FunctionInfo, Outline, StepCall
from .raw_json import RawJSON
from .run_index import is_run_of, read_stores
from .runs_view import readable_stores, short_json, watcher

if TYPE_CHECKING:
    from .documents import DocumentState
    from .server import OpenProgramLanguageServer

RESULT_CHARS = 40
MAX_RUNS = 50
# Every character a hint can start with or join with. Each is in the fonts editors fall back
# to everywhere (DejaVu Sans Mono on Linux, Consolas, Menlo): "⏸" (U+23F8) is not, and showed
# as an empty box in VS Code on Linux, so a paused step is "‖" (U+2016 DOUBLE VERTICAL LINE).
GLYPHS = {
    "completed": "✓",
    "failed": "✗",
    "paused": "‖",
    "uncertain": "?",
    "running": "…",
    "result": "→",
    "times": "×",
}


def format_ms(ms: float) -> str:
    if ms >= 1000:
        return f"{ms / 1000:.2f} s"
    return f"{ms:.0f} ms" if ms >= 10 else f"{ms:.1f} ms"


def _live(run: RunRow) -> bool:
    """A ``running`` run that a live process executes (its steps still run)."""
    return run.owner_alive


def hint_text(name: str, run: RunRow, rows: list[StepRow]) -> str | None:
    """The hint for step ``name`` given its rows in ``run`` (None: nothing recorded)."""
    failed = [r for r in rows if r.status == "failed"]
    if failed:
        first = (failed[-1].result or "error").strip().splitlines()
        return f"{GLYPHS['failed']} " + short_json(first[0] if first else "error", RESULT_CHARS)
    pending = [r for r in rows if r.status not in ("completed", "failed")]
    if run.status == "paused" and run.paused_step == name:
        uncertain = run.pause_reason == "uncertain" and pending
        return (
            f"{GLYPHS['uncertain']} uncertain" if uncertain else f"{GLYPHS['paused']} paused here"
        )
    if pending:
        return f"{GLYPHS['running']} running" if _live(run) else f"{GLYPHS['uncertain']} uncertain"
    if not rows:
        return None
    last = rows[-1]
    text = GLYPHS["completed"]
    if last.finished_at is not None:
        text += " " + format_ms(max(0.0, last.finished_at - last.started_at) * 1000)
    if last.result is not None:
        text += f" {GLYPHS['result']} " + short_json(last.result, RESULT_CHARS)
    if len(rows) > 1:
        text += f" ({GLYPHS['times']}{len(rows)})"
    return text


def _branch_keys(source: str, calls: list[tuple[int, int]]) -> list[tuple[str, int]]:
    """``(branch name, 0-based line)`` of the string keys of ``parallel({...})`` literals."""
    if not calls:
        return []
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return []
    wanted = set(calls)
    out = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and (node.lineno - 1, node.col_offset) in wanted
            and node.args
            and isinstance(node.args[0], ast.Dict)
        ):
            for key in node.args[0].keys:
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    out.append((key.value, key.lineno - 1))
    return out


class RunHints:
    """The file's runs (newest first) and the hint text of each step name, computed once per
    store version: repeated requests (scrolling, edits) reuse them."""

    def __init__(self, runs: list[tuple[str, RunRow]]) -> None:
        self.runs = runs  # (db path, run), newest first
        self._names: dict[str, dict[str, list[StepRow]]] = {}
        self._own: dict[str, list[tuple[str, RunRow]]] = {}
        self._hints: dict[tuple[str, str], tuple[RunRow, str] | None] = {}

    def steps(self, db: str, run: RunRow) -> dict[str, list[StepRow]]:
        got = self._names.get(run.id)
        if got is None:
            got = {}
            for row in queries.run_steps(db, run.id):
                got.setdefault(row.name, []).append(row)
            self._names[run.id] = got
        return got

    def for_step(self, f: FunctionInfo, name: str) -> tuple[RunRow, list[StepRow]] | None:
        own = self._own.get(f.qualname)
        if own is None:
            own = self._own[f.qualname] = [
                (db, r) for db, r in self.runs if is_run_of(r, f.qualname)
            ][:1]
        for db, run in own or self.runs:
            rows = self.steps(db, run).get(name)
            if rows or (run.status == "paused" and run.paused_step == name):
                return run, rows or []
        return None

    def hint(self, f: FunctionInfo, name: str) -> tuple[RunRow, str] | None:
        """``(run, hint text)`` of step ``name`` called in ``f``, None if nothing to show."""
        key = (f.qualname, name)
        if key not in self._hints:
            found = self.for_step(f, name)
            text = None if found is None else hint_text(name, *found)
            self._hints[key] = None if found is None or text is None else (found[0], text)
        return self._hints[key]


StepSite = tuple[FunctionInfo, str, int]  # (enclosing function, step name, 0-based line)


def step_sites(source: str, lines: Sequence[str], outline: Outline) -> list[StepSite]:
    """Every line that gets a hint: named step/workflow calls and ``parallel`` branch keys."""
    sites: list[StepSite] = []
    for f in outline.all_functions():
        parallels: list[tuple[int, int]] = []
        for call in f.steps:
            if call.kind == "parallel":
                parallels.append(_call_start(lines, call))
            elif call.name is not None:
                sites.append((f, call.name, call.span.line))
        sites += [(f, name, line) for name, line in _branch_keys(source, parallels)]
    return sites


StoreVersions = tuple[tuple[Path | str, tuple[int, int, int, int]], ...]
NO_HINTS = RawJSON("[]")


def _file_runs(state: DocumentState, versions: StoreVersions, path: str) -> RunHints:
    """The runs of the Program at ``path`` in the workspace stores, cached per store version
    while none is ``running`` (its owner can die without the store changing)."""
    if state.hint_runs is not None and state.hint_runs[0] == versions:
        return state.hint_runs[1]
    runs: list[tuple[str, RunRow]] = []
    for db, _ in versions:
        runs += [(str(db), r) for r in queries.list_runs(db, path, limit=MAX_RUNS)]
    runs.sort(key=lambda item: item[1].created_at, reverse=True)
    hints = RunHints(runs)
    running = any(run.status == "running" for _, run in runs)
    state.hint_runs = None if running else (versions, hints)
    return hints


async def inlay_hints(
    ls: OpenProgramLanguageServer, uri: str, rng: types.Range | None = None
) -> RawJSON:
    """``textDocument/inlayHint`` result as JSON text (``InlayHint[]``). The answer is kept for
    the next request of the same outline, range and store versions (editors ask again often).
    The stores are read through ``run_index.read_stores`` (no hints while they cannot be)."""
    doc = ls.open_document(uri)
    outline: Outline | None = ls.outline(uri)
    state = ls.document_state(uri)
    if doc is None or outline is None or state is None:
        return NO_HINTS
    if not uri.startswith("file:") or not doc.path:
        return NO_HINTS
    lines, version, path = doc.lines, doc.version, doc.path
    first = rng.start.line if rng else 0
    last = rng.end.line if rng else len(lines)
    if state.hint_sites is None or state.hint_sites[0] is not outline:
        state.hint_sites = (outline, step_sites(doc.source, lines, outline))
    sites = state.hint_sites[1]
    stores = [fs.db for fs in readable_stores(ls)]

    def read() -> RawJSON:
        versions: StoreVersions = tuple((db, queries.store_version(db)) for db in stores)
        key = (version, versions, first, last)
        cached = state.hint_answer
        if cached is not None and cached[0] is outline and cached[1] == key:
            return cached[2]
        runs = _file_runs(state, versions, path) if sites else RunHints([])
        answer = _answer(lines, sites, runs, first, last)
        state.hint_answer = (outline, key, answer) if state.hint_runs is not None else None
        return answer

    return await read_stores(stores, read, NO_HINTS)


def _answer(
    lines: Sequence[str], sites: list[StepSite], runs: RunHints, first: int, last: int
) -> RawJSON:
    hints: list[dict[str, Any]] = []
    seen: set[int] = set()
    for f, name, line in sites if runs.runs else ():
        if not first <= line <= last or line in seen or line >= len(lines):
            continue
        found = runs.hint(f, name)
        if found is None:
            continue
        run, text = found
        seen.add(line)
        text_line = lines[line].rstrip("\r\n")
        col = len(text_line) if text_line.isascii() else len(text_line.encode("utf-16-le")) // 2
        hints.append(
            {
                "position": {"line": line, "character": col},
                "label": text,
                "paddingLeft": True,
                "tooltip": f'step "{name}" in run {run.id} ({run.status})',
            }
        )
    return RawJSON(json.dumps(hints))


def _call_start(lines: Sequence[str], call: StepCall) -> tuple[int, int]:
    """``(line, byte column)`` of a call as ``ast`` reports it (outline spans are characters)."""
    text = lines[call.span.line] if call.span.line < len(lines) else ""
    return call.span.line, len(text[: call.span.col].encode("utf-8"))


def register(server: OpenProgramLanguageServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_INLAY_HINT, types.InlayHintOptions(resolve_provider=False))
    async def hints(ls: OpenProgramLanguageServer, params: types.InlayHintParams) -> RawJSON:
        watcher(ls)
        await ls.ensure_model(params.text_document.uri)
        return await inlay_hints(ls, params.text_document.uri, params.range)
