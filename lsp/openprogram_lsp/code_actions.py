"""Quick fixes from the analyzer's ``Finding.fix`` and "suppress OPxxx on this line".

Each action carries its ``edit`` (applied by the client). The command
``openprogram.applyFix(uri, code, line, kind)`` applies the same edit from the server side
through ``workspace/applyEdit`` (kind ``"fix"`` or ``"suppress"``; ``line`` 0-based).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.workspace import TextDocument

from .analysis import AnalysisResult
from .diagnostics import SOURCE
from .positions import finding_range

if TYPE_CHECKING:
    from .server import OpenProgramLanguageServer

APPLY_FIX = "openprogram.applyFix"


def workspace_edit(
    fix: Any, uri: str, lines: Sequence[str], doc: TextDocument, version: int | None
) -> types.WorkspaceEdit:
    codec = doc.position_codec
    edits = [
        types.TextEdit(
            range=finding_range(lines, codec, e.line, e.column, e.end_line, e.end_column),
            new_text=e.new_text,
        )
        for e in fix.edits
    ]
    return types.WorkspaceEdit(
        document_changes=[
            types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(
                    uri=uri, version=version
                ),
                edits=edits,
            )
        ]
    )


def suppression(source: str, finding: Any) -> Any:
    try:
        from openprogram_analyzers import suppression_fix

        return suppression_fix(source, finding)
    except Exception:
        return None


def actions_for(
    result: AnalysisResult,
    doc: TextDocument,
    line_range: tuple[int, int],
    only_codes: set[str] | None,
    diags: dict[tuple[str, int], types.Diagnostic],
) -> list[types.CodeAction]:
    lines = result.text.splitlines(keepends=True)
    out: list[types.CodeAction] = []
    fixes: list[types.CodeAction] = []
    for f in result.findings:
        if not (line_range[0] <= f.line - 1 <= line_range[1]):
            continue
        if only_codes is not None and f.code not in only_codes:
            continue
        diag = diags.get((f.code, f.line - 1))
        sup = suppression(result.text, f)
        if f.fix is not None and f.fix.edits and (sup is None or f.fix.edits != sup.edits):
            fixes.append(
                types.CodeAction(
                    title=f"{f.fix.description} ({f.code})",
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[diag] if diag else None,
                    is_preferred=bool(f.fix.safe),
                    edit=workspace_edit(f.fix, result.uri, lines, doc, result.version),
                )
            )
        if sup is not None and sup.edits:
            out.append(
                types.CodeAction(
                    title=f"Suppress {f.code} on this line",
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[diag] if diag else None,
                    edit=workspace_edit(sup, result.uri, lines, doc, result.version),
                )
            )
    return fixes + out


def register(server: OpenProgramLanguageServer) -> None:
    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]),
    )
    async def code_actions(
        ls: OpenProgramLanguageServer, params: types.CodeActionParams
    ) -> list[types.CodeAction]:
        uri = params.text_document.uri
        doc = ls.open_document(uri)
        if doc is None:
            return []
        result = await ls.diagnostics.analyse(uri, doc)
        if ls.open_document(uri) is not doc or doc.version != result.version:
            return []  # document changed meanwhile: the client will ask again
        diags = {
            (str(d.code), d.range.start.line): d
            for d in params.context.diagnostics
            if d.source == SOURCE and d.code
        }
        only = {c for c, _ in diags} if diags else None
        rng = (params.range.start.line, params.range.end.line)
        return actions_for(result, doc, rng, only, diags)

    @server.command(APPLY_FIX)
    async def apply_fix(server_: LanguageServer, *args: Any) -> dict[str, Any]:
        ls = cast("OpenProgramLanguageServer", server_)
        if len(args) < 3 or not isinstance(args[0], str) or not isinstance(args[1], str):
            return {
                "applied": False,
                "error": "usage: openprogram.applyFix(uri, code, line[, 'fix'|'suppress'])",
            }
        uri, code, line = args[0], args[1], args[2]
        kind = args[3] if len(args) > 3 else "fix"
        if not isinstance(line, int) or isinstance(line, bool) or kind not in ("fix", "suppress"):
            return {"applied": False, "error": "line must be an int and kind 'fix' or 'suppress'"}
        doc = ls.open_document(uri)
        if doc is None:
            return {"applied": False, "error": f"document not open: {uri}"}
        result = await ls.diagnostics.analyse(uri, doc)
        finding = next((f for f in result.findings if f.code == code and f.line - 1 == line), None)
        if finding is None:
            return {"applied": False, "error": f"no {code} finding on line {line + 1}"}
        fix = finding.fix if kind == "fix" else suppression(result.text, finding)
        if fix is None or not fix.edits:
            return {"applied": False, "error": f"{code} has no {kind} edit"}
        lines = result.text.splitlines(keepends=True)
        edit = workspace_edit(fix, uri, lines, doc, result.version)
        response = await ls.workspace_apply_edit_async(
            types.ApplyWorkspaceEditParams(edit=edit, label=fix.description)
        )
        return {"applied": bool(response and response.applied)}
