"""Inlay hints: the latest run's state of each step, at the end of its line.

On every ``step("name", ...)`` / ``workflow("name", ...)`` call and every branch key of a
``parallel({...})`` literal: ``✓ 12 ms → {"i": 3}``, ``‖ paused here``, ``✗ ValueError …``,
``? uncertain``, ``… running`` (each row's state ``run_views.step_state``, as the Runs
view's). The run is the newest of the latest runs of the enclosing function and of the
functions running it as a ``workflow`` body, its rows matched by scope (``scopes_of``):
never another function's step of the same name. Read from the store's read-only query API; the client is asked to refresh
the hints when runs change (``runs_view.RunsWatcher``).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from openprogram.durable import queries
from openprogram.durable.queries import RunRow, StepRow
from openprogram.store.run_views import StepContext, error_text, step_state

from .outline import FunctionInfo, Outline, StepCall
from .raw_json import RawJSON
from .run_index import is_run_of, read_stores
from .runs_view import readable_stores, short_json, step_context, watcher

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
    "cancelled": "⊘",
    "uncertain": "?",
    "running": "…",
    "result": "→",
    "times": "×",
}


def format_ms(ms: float) -> str:
    if ms >= 1000:
        return f"{ms / 1000:.2f} s"
    return f"{ms:.0f} ms" if ms >= 10 else f"{ms:.1f} ms"


def hint_text(name: str, context: StepContext, rows: list[StepRow]) -> str | None:
    """The hint for step ``name`` given its rows in one run, their states by
    ``run_views.step_state`` (as the Runs view shows them); None: nothing recorded."""
    states = [step_state(r.status, r.name, r.occurrence, r.result, context) for r in rows]
    failed = [r for r, state in zip(rows, states, strict=True) if state == "failed"]
    if failed:
        first = error_text(failed[-1].result).strip().splitlines()
        return f"{GLYPHS['failed']} " + short_json(first[0] if first else "error", RESULT_CHARS)
    if "paused" in states or (not rows and context.paused_at is not None):
        return f"{GLYPHS['paused']} paused here"
    for state in ("cancelled", "uncertain", "running"):
        if state in states:
            return f"{GLYPHS[state]} {state}"
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


MAX_NESTING = 8  # workflow bodies followed up from a function to the runs' entries
_ANY_OCCURRENCE = r"#\d+"


def scopes_of(f: FunctionInfo, outline: Outline) -> list[tuple[str, str]]:
    """Where the steps ``f`` calls are recorded: ``(qualname of the run's function,
    pattern of the scope)`` — ``(f, "")`` for runs of ``f`` itself, and for each
    ``workflow("W", f, ...)`` call in a function ``g``, the scopes of ``g`` followed by
    ``W#n`` (``step_key`` model: a workflow's steps are keyed under its key). A workflow
    whose body is not a plain name (``f``, ``self.f``) or whose name is not literal is not
    followed: its steps get no hint."""
    found: list[tuple[str, str]] = []
    todo: list[tuple[FunctionInfo, str, int]] = [(f, "", 0)]
    while todo:
        fn, suffix, depth = todo.pop()
        found.append((fn.qualname, suffix))
        if depth >= MAX_NESTING:
            continue
        for g in outline.all_functions():
            for call in g.steps:
                if call.kind == "workflow" and call.name and _is_body(call.body, fn, g):
                    inner = re.escape(call.name) + _ANY_OCCURRENCE
                    todo.append((g, inner + ("/" + suffix if suffix else ""), depth + 1))
    return found


def _is_body(body: str | None, fn: FunctionInfo, caller: FunctionInfo) -> bool:
    if body is None:
        return False
    if fn.class_name is None:
        return body == fn.name
    return body == "self." + fn.name and caller.class_name == fn.class_name


class RunHints:
    """The file's runs (newest first) and the hint text of each step site, computed once
    per store version: repeated requests (scrolling, edits) reuse them."""

    def __init__(self, runs: list[tuple[str, RunRow]]) -> None:
        self.runs = runs  # (db path, run), newest first
        self._rows: dict[str, list[StepRow]] = {}
        self._hints: dict[tuple[Scopes, str, bool], tuple[RunRow, str] | None] = {}

    def steps(self, db: str, run: RunRow) -> list[StepRow]:
        got = self._rows.get(run.id)
        if got is None:
            got = self._rows[run.id] = queries.run_steps(db, run.id)
        return got

    def latest(self, qualname: str) -> tuple[str, RunRow] | None:
        return next(((db, r) for db, r in self.runs if is_run_of(r, qualname)), None)

    def for_step(
        self, scopes: Scopes, name: str, branch: bool
    ) -> tuple[RunRow, StepContext, list[StepRow]] | None:
        """The rows of step (or ``branch``) ``name`` in the newest of the latest runs of the
        functions whose runs record it (``scopes``, :func:`scopes_of`), matched by scope."""
        latest = []
        for qualname, pattern in scopes:
            found = self.latest(qualname)
            if found is not None:
                latest.append((found, pattern))
        latest.sort(key=lambda item: item[0][1].created_at, reverse=True)
        for (db, run), pattern in latest:
            where = pattern + ("/" if pattern else "") + "parallel" + _ANY_OCCURRENCE
            scope = re.compile(where if branch else pattern)
            kinds = ("branch",) if branch else ("step", "workflow")
            rows = [
                r
                for r in self.steps(db, run)
                if r.name == name and r.kind in kinds and scope.fullmatch(r.scope)
            ]
            context = step_context(run)
            paused_here = not pattern and not branch and run.paused_step == name
            if rows or (paused_here and context.paused_at is not None):
                return run, context, rows
        return None

    def hint(self, scopes: Scopes, name: str, branch: bool) -> tuple[RunRow, str] | None:
        """``(run, hint text)`` of step (``branch``) ``name`` called in a function whose
        steps are recorded in ``scopes``, None if nothing to show."""
        key = (scopes, name, branch)
        if key not in self._hints:
            found = self.for_step(scopes, name, branch)
            text = None if found is None else hint_text(name, found[1], found[2])
            self._hints[key] = None if found is None or text is None else (found[0], text)
        return self._hints[key]


Scopes = tuple[tuple[str, str], ...]  # scopes_of: where a function's steps are recorded
# (enclosing function's scopes, step or branch name, is a branch key, 0-based line)
StepSite = tuple[Scopes, str, bool, int]


def step_sites(source: str, lines: Sequence[str], outline: Outline) -> list[StepSite]:
    """Every line that gets a hint: named step/workflow calls and ``parallel`` branch keys."""
    sites: list[StepSite] = []
    for f in outline.all_functions():
        parallels: list[tuple[int, int]] = []
        scopes: Scopes | None = None
        for call in f.steps:
            if scopes is None:
                scopes = tuple(scopes_of(f, outline))
            if call.kind == "parallel":
                parallels.append(_call_start(lines, call))
            elif call.name is not None:
                sites.append((scopes, call.name, False, call.span.line))
        if scopes is not None:
            sites += [(scopes, k, True, line) for k, line in _branch_keys(source, parallels)]
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
    for scopes, name, branch, line in sites if runs.runs else ():
        if not first <= line <= last or line in seen or line >= len(lines):
            continue
        found = runs.hint(scopes, name, branch)
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
