"""Inlay hints: the latest run's state of each step, at the end of its line.

On every ``step("name", ...)`` / ``workflow("name", ...)`` call and every branch key of a
``parallel({...})`` literal: ``✓ 12 ms → {"i": 3}``, ``⏸ paused here``, ``✗ ValueError …``,
``? uncertain``, ``… running``. The run is the newest run of the enclosing function, else
the newest run of the file that has a step of that name (helpers reached through
``workflow``). Read from the store's read-only query API; the client is asked to refresh
the hints when runs change (``runs_view.RunsWatcher``).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lsprotocol import types

from openprogram.durable import queries
from openprogram.durable.queries import RunRow, StepRow

from .outline import FunctionInfo, Outline, StepCall
from .run_index import RunInfo
from .runs_view import EncodedList, folder_stores, pass_through, short_json, watcher

if TYPE_CHECKING:
    from .server import OpenProgramLanguageServer

RESULT_CHARS = 40
MAX_RUNS = 50


def format_ms(ms: float) -> str:
    if ms >= 1000:
        return f"{ms / 1000:.2f} s"
    return f"{ms:.0f} ms" if ms >= 10 else f"{ms:.1f} ms"


def _live(run: RunRow) -> bool:
    info = RunInfo(
        run.id, run.function_qualname, run.entry, run.status, None, None, None, 0.0,
        owner_pid=run.owner_pid, owner_host=run.owner_host, owner_alive=run.owner_alive,
    )  # fmt: skip
    return run.status == "running" and not info.orphaned


def hint_text(name: str, run: RunRow, rows: list[StepRow]) -> str | None:
    """The hint for step ``name`` given its rows in ``run`` (None: nothing recorded)."""
    failed = [r for r in rows if r.status == "failed"]
    if failed:
        first = (failed[-1].result or "error").strip().splitlines()
        return "✗ " + short_json(first[0] if first else "error", RESULT_CHARS)
    pending = [r for r in rows if r.status not in ("completed", "failed")]
    if run.status == "paused" and run.paused_step == name:
        uncertain = run.pause_reason == "uncertain" and pending
        return "? uncertain" if uncertain else "⏸ paused here"
    if pending:
        return "… running" if _live(run) else "? uncertain"
    if not rows:
        return None
    last = rows[-1]
    text = "✓"
    if last.finished_at is not None:
        text += " " + format_ms(max(0.0, last.finished_at - last.started_at) * 1000)
    if last.result is not None:
        text += " → " + short_json(last.result, RESULT_CHARS)
    if len(rows) > 1:
        text += f" (×{len(rows)})"
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


class _Runs:
    """The file's runs and their steps, loaded on demand for one request."""

    def __init__(self, runs: list[tuple[str, RunRow]]) -> None:
        self.runs = runs  # (db path, run), newest first
        self._steps: dict[str, dict[str, list[StepRow]]] = {}
        self._own: dict[str, list[tuple[str, RunRow]]] = {}

    def steps(self, db: str, run: RunRow) -> dict[str, list[StepRow]]:
        got = self._steps.get(run.id)
        if got is None:
            got = {}
            for row in queries.run_steps(db, run.id):
                got.setdefault(row.name, []).append(row)
            self._steps[run.id] = got
        return got

    def for_step(self, f: FunctionInfo, name: str) -> tuple[RunRow, list[StepRow]] | None:
        own = self._own.get(f.qualname)
        if own is None:
            own = self._own[f.qualname] = [
                (db, r) for db, r in self.runs if r.function_qualname in (f.qualname, f.name)
            ][:1]
        for db, run in own or self.runs:
            rows = self.steps(db, run).get(name)
            if rows or (run.status == "paused" and run.paused_step == name):
                return run, rows or []
        return None


def inlay_hints(
    ls: OpenProgramLanguageServer, uri: str, rng: types.Range | None = None
) -> EncodedList:
    """``textDocument/inlayHint`` results as JSON dicts (the ``InlayHint`` wire form)."""
    doc = ls.open_document(uri)
    outline: Outline | None = ls.outline(uri)
    if doc is None or outline is None or not uri.startswith("file:") or not doc.path:
        return EncodedList()
    functions = [f for f in outline.all_functions() if f.steps]
    if not functions:
        return EncodedList()
    runs: list[tuple[str, RunRow]] = []
    for fs in folder_stores(ls):
        runs += [(str(fs.db), r) for r in queries.list_runs(fs.db, doc.path, limit=MAX_RUNS)]
    if not runs:
        return EncodedList()
    runs.sort(key=lambda item: item[1].created_at, reverse=True)
    data = _Runs(runs)
    lines = doc.lines
    first = rng.start.line if rng else 0
    last = rng.end.line if rng else len(lines)
    sites: list[tuple[FunctionInfo, str, int]] = []
    for f in functions:
        parallels: list[tuple[int, int]] = []
        for call in f.steps:
            if call.kind == "parallel":
                parallels.append(_call_start(lines, call))
            elif call.name is not None:
                sites.append((f, call.name, call.span.line))
        sites += [(f, name, line) for name, line in _branch_keys(doc.source, parallels)]
    hints = EncodedList()
    seen: set[int] = set()
    for f, name, line in sites:
        if not first <= line <= last or line in seen or line >= len(lines):
            continue
        found = data.for_step(f, name)
        if found is None:
            continue
        text = hint_text(name, *found)
        if text is None:
            continue
        seen.add(line)
        text_line = lines[line].rstrip("\r\n")
        col = len(text_line) if text_line.isascii() else len(text_line.encode("utf-16-le")) // 2
        # Plain JSON (InlayHint's wire form): thousands of hints skip the protocol converter.
        hints.append(
            {
                "position": {"line": line, "character": col},
                "label": text,
                "paddingLeft": True,
                "tooltip": f'step "{name}" in run {found[0].id} ({found[0].status})',
            }
        )
    return hints


def _call_start(lines: Sequence[str], call: StepCall) -> tuple[int, int]:
    """``(line, byte column)`` of a call as ``ast`` reports it (outline spans are characters)."""
    text = lines[call.span.line] if call.span.line < len(lines) else ""
    return call.span.line, len(text[: call.span.col].encode("utf-8"))


def register(server: OpenProgramLanguageServer) -> None:
    pass_through(server)

    @server.feature(types.TEXT_DOCUMENT_INLAY_HINT, types.InlayHintOptions(resolve_provider=False))
    async def hints(
        ls: OpenProgramLanguageServer, params: types.InlayHintParams
    ) -> list[types.InlayHint]:
        watcher(ls)
        await ls.ensure_model(params.text_document.uri)
        return inlay_hints(ls, params.text_document.uri, params.range)
