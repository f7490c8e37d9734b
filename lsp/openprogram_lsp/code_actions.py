"""Quick fixes from the analyzer's ``Finding.fix`` and "suppress OPxxx on this line".

Each action carries its ``edit`` (applied by the client). ``source.fixAll.openprogram``
(asked for explicitly, e.g. by ``editor.codeActionsOnSave``) applies every safe fix,
re-analysing until nothing changes, as one edit of the document. The command
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
from .positions import finding_range, split_lines

if TYPE_CHECKING:
    from .server import OpenProgramLanguageServer

APPLY_FIX = "openprogram.applyFix"
FIX_ALL = "source.fixAll.openprogram"
MAX_FIX_PASSES = 5


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


UNUSED_SUPPRESSION = "OP900"
"""An unused suppression is not suppressed: its fix (removing the code) is the action."""


def suppression(source: Any, finding: Any) -> Any:
    """The "suppress on this line" edit, or None. A helper module's finding shown at the
    call reaching it has none: only a comment in the helper suppresses it (as at run time).
    ``source``: the text, or one ``SourceText`` for many findings of a file."""
    if finding.code == UNUSED_SUPPRESSION:
        return None
    if any(r.path != finding.path for r in finding.related):
        return None
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
    from openprogram_analyzers.fixes import fix_refusal
    from openprogram_analyzers.suppressions import SourceText

    def sound(fix: Any) -> bool:  # the file still parses after it (as --fix checks)
        return fix_refusal(result.text, fix) is None

    lines = split_lines(result.text)
    source = SourceText(result.text)  # tokenized once for every finding's suppression
    out: list[types.CodeAction] = []
    fixes: list[types.CodeAction] = []
    offered: dict[tuple[str, tuple[Any, ...]], types.CodeAction] = {}  # one per code, line
    for f in result.findings:
        if not (line_range[0] <= f.line - 1 <= line_range[1]):
            continue
        if only_codes is not None and f.code not in only_codes:
            continue
        diag = diags.get((f.code, f.line - 1))
        sup = suppression(source, f)
        if sup is not None and sup.edits and not sound(sup):
            sup = None
        if (
            f.fix is not None
            and f.fix.edits
            and (sup is None or f.fix.edits != sup.edits)
            and sound(f.fix)
        ):
            fixes.append(
                types.CodeAction(
                    title=f"{f.fix.description} ({f.code})",
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[diag] if diag else None,
                    is_preferred=bool(f.fix.safe),
                    edit=workspace_edit(f.fix, result.uri, lines, doc, result.version),
                )
            )
        if sup is None or not sup.edits:
            continue
        key = (f.code, tuple(sup.edits))
        same = offered.get(key)
        if same is not None:  # another finding of the code there: one action for all
            if diag is not None and diag not in (same.diagnostics or []):
                same.diagnostics = [*(same.diagnostics or []), diag]
            continue
        action = types.CodeAction(
            title=f"Suppress {f.code} on this line",
            kind=types.CodeActionKind.QuickFix,
            diagnostics=[diag] if diag else None,
            edit=workspace_edit(sup, result.uri, lines, doc, result.version),
        )
        offered[key] = action
        out.append(action)
    return fixes + out


def _wants(only: Sequence[str] | None, kind: str) -> bool:
    """Whether a client's ``context.only`` asks for actions of ``kind`` (prefix match)."""
    if only is None:
        return kind != FIX_ALL  # source actions only when asked for (fix-on-save)
    return any(kind == k or kind.startswith(k + ".") for k in only)


async def fix_all_text(ls: OpenProgramLanguageServer, uri: str, doc: TextDocument) -> str | None:
    """The document with every safe fix applied, re-analysed until nothing changes
    (bounded); None when there is nothing to fix. Analysis runs in the worker; each pass
    is the analyzer's own (``--fix``'s): a fix after which the file would not parse is
    left out and logged."""
    from openprogram_analyzers.fixes import Rejected, apply_safe_fixes

    from .diagnostics import document_path

    text = original = doc.source
    settings = ls.settings_for(uri)
    path = document_path(uri, doc)
    rejected: list[Rejected] = []
    for _ in range(MAX_FIX_PASSES):
        findings = await ls.diagnostics.findings_of(text, path, settings.lint_config())
        rejected = []  # those of the last pass: the fixes still refused
        fixed, count = apply_safe_fixes(text, findings, rejected=rejected)
        if not count or fixed == text:
            break
        text = fixed
    for f, reason in rejected:
        ls.log(f"{uri}:{f.line}: {f.code} fix not applied: the file would not parse: {reason}")
    return None if text == original else text


def _whole_document_edit(uri: str, doc: TextDocument, new_text: str) -> types.WorkspaceEdit:
    lines = doc.lines
    end = types.Position(line=len(lines), character=0)
    return types.WorkspaceEdit(
        document_changes=[
            types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(
                    uri=uri, version=doc.version
                ),
                edits=[types.TextEdit(types.Range(types.Position(0, 0), end), new_text)],
            )
        ]
    )


def register(server: OpenProgramLanguageServer) -> None:
    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL],
            resolve_provider=False,
        ),
    )
    async def code_actions(
        ls: OpenProgramLanguageServer, params: types.CodeActionParams
    ) -> list[types.CodeAction]:
        uri = params.text_document.uri
        doc = ls.open_document(uri)
        if doc is None:
            return []
        only = [str(k) for k in params.context.only] if params.context.only else None
        out: list[types.CodeAction] = []
        if _wants(only, FIX_ALL):
            version = doc.version
            fixed = await fix_all_text(ls, uri, doc)
            if ls.open_document(uri) is not doc or doc.version != version:
                return []  # document changed meanwhile: the client will ask again
            if fixed is not None:
                out.append(
                    types.CodeAction(
                        title="OpenProgram: fix all safely fixable findings",
                        kind=FIX_ALL,
                        edit=_whole_document_edit(uri, doc, fixed),
                    )
                )
        if not _wants(only, types.CodeActionKind.QuickFix):
            return out
        result = await ls.diagnostics.analyse(uri, doc)
        if ls.open_document(uri) is not doc or doc.version != result.version:
            return []  # document changed meanwhile: the client will ask again
        diags = {
            (str(d.code), d.range.start.line): d
            for d in params.context.diagnostics
            if d.source == SOURCE and d.code
        }
        codes = {c for c, _ in diags} if diags else None
        rng = (params.range.start.line, params.range.end.line)
        return actions_for(result, doc, rng, codes, diags) + out

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
        from openprogram_analyzers.fixes import fix_refusal

        refusal = fix_refusal(result.text, fix)
        if refusal is not None:
            return {"applied": False, "error": f"the file would not parse after it: {refusal}"}
        lines = split_lines(result.text)
        edit = workspace_edit(fix, uri, lines, doc, result.version)
        response = await ls.workspace_apply_edit_async(
            types.ApplyWorkspaceEditParams(edit=edit, label=fix.description)
        )
        return {"applied": bool(response and response.applied)}
