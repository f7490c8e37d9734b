"""Code lenses: ``▶ Run`` per entry, ``⟳ Resume (step "name" #n)`` per paused run
(``✓ Approve`` / ``✗ Deny`` for one awaiting approval of a tool call), ``Runs (N)`` per
function with recorded runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from .outline import FunctionInfo, Span
from .positions import to_lsp
from .run_commands import APPROVE, DENY, RESUME, RUN, SHOW_RUNS
from .run_index import RunInfo, is_run_of, read_stores, runs_for_file
from .runs_view import watcher

if TYPE_CHECKING:
    from .server import OpenProgramLanguageServer

MAX_RESUME_LENSES = 3


def _runs_by_function(runs: list[RunInfo], f: FunctionInfo) -> list[RunInfo]:
    return [r for r in runs if is_run_of(r, f.qualname)]


async def file_runs(ls: OpenProgramLanguageServer, uri: str) -> list[RunInfo]:
    """The runs of the open Program ``uri`` in its store, newest first ([]: none, no
    file, a file outside every served folder or no folder open — no store,
    ``store_for`` —, or the store cannot be read now)."""
    doc = ls.open_document(uri)
    if doc is None or not uri.startswith("file:") or not doc.path:
        return []
    store, path = ls.store_for(doc.path), doc.path
    if store is None:
        return []
    none: list[RunInfo] = []
    return await read_stores([store], lambda: runs_for_file(store, path), none)


def code_lenses(
    ls: OpenProgramLanguageServer, uri: str, runs: list[RunInfo]
) -> list[types.CodeLens]:
    """The lenses of ``uri``, its ``runs`` (:func:`file_runs`) among them."""
    doc = ls.open_document(uri)
    outline = ls.outline(uri)
    if doc is None or outline is None:
        return []
    lines, codec = doc.lines, doc.position_codec

    def at(span: Span) -> types.Range:
        p = to_lsp(lines, codec, span.line, span.col)
        return types.Range(p, to_lsp(lines, codec, span.end_line, span.end_col))

    lenses: list[types.CodeLens] = []
    # Run refuses an untitled buffer (no file) and a file outside every served folder
    runnable = uri.startswith("file:") and ls.folder_of(doc.path) is not None
    for entry in outline.entries if runnable else []:
        if not entry.defined:  # a misspelt entry (OP402): Run could only refuse it
            continue
        span = entry.target.name_span if entry.target else entry.span
        lenses.append(
            types.CodeLens(
                range=at(span),
                command=types.Command(title="▶ Run", command=RUN, arguments=[uri, entry.label]),
            )
        )
    if not runs:
        return lenses
    for f in outline.all_functions():
        mine = _runs_by_function(runs, f)
        if not mine:
            continue
        rng = at(f.name_span)
        resumable = [r for r in mine if r.resumable]
        for r in resumable[:MAX_RESUME_LENSES]:
            if r.awaiting_approval:  # a plain resume refuses it: a decision is needed
                tool = f' "{r.paused_step}"' if r.paused_step else ""
                for title, command in ((f"✓ Approve{tool}", APPROVE), ("✗ Deny", DENY)):
                    lenses.append(
                        types.CodeLens(
                            range=rng,
                            command=types.Command(title=title, command=command, arguments=[r.id]),
                        )
                    )
                continue
            if r.status == "paused" and r.paused_step:
                where = f' (step "{r.paused_step}" #{r.paused_occurrence or 0})'
            elif r.current_step:
                name, _, occ = r.current_step.rpartition("#")
                where = f' (step "{name}" #{occ}, interrupted)'
            else:
                where = ""
            lenses.append(
                types.CodeLens(
                    range=rng,
                    command=types.Command(
                        title=f"⟳ Resume{where}", command=RESUME, arguments=[r.id]
                    ),
                )
            )
            if r.status == "paused" and r.pause_reason == "uncertain" and r.paused_step:
                # explicit user choice: run the step whose effect is unknown again
                lenses.append(
                    types.CodeLens(
                        range=rng,
                        command=types.Command(
                            title=f'⟳ Re-run uncertain step "{r.paused_step}"',
                            command=RESUME,
                            arguments=[r.id, {"rerunUncertain": True}],
                        ),
                    )
                )
        lenses.append(
            types.CodeLens(
                range=rng,
                command=types.Command(
                    title=f"Runs ({len(mine)})", command=SHOW_RUNS, arguments=[uri, f.qualname]
                ),
            )
        )
    return lenses


def register(server: OpenProgramLanguageServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_CODE_LENS)
    async def lenses(
        ls: OpenProgramLanguageServer, params: types.CodeLensParams
    ) -> list[types.CodeLens]:
        uri = params.text_document.uri
        watcher(ls)  # runs started elsewhere (a terminal) refresh the lenses
        await ls.ensure_model(uri)
        return code_lenses(ls, uri, await file_runs(ls, uri))
