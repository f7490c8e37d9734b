"""Document symbols: ``PROGRAM_ENTRIES`` entries, Agent classes and methods, steps."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from .outline import FunctionInfo, Outline, Span
from .positions import to_lsp

if TYPE_CHECKING:
    from .server import OpenProgramLanguageServer


def lsp_range(lines: Sequence[str], codec: PositionCodec, s: Span) -> types.Range:
    return types.Range(
        to_lsp(lines, codec, s.line, s.col), to_lsp(lines, codec, s.end_line, s.end_col)
    )


def _function_symbol(
    lines: Sequence[str], codec: PositionCodec, f: FunctionInfo, kind: types.SymbolKind
) -> types.DocumentSymbol:
    children = []
    for st in f.steps:
        rng = lsp_range(lines, codec, st.span)
        label = f'{st.kind} "{st.name}"' if st.name is not None else f"{st.kind} <dynamic name>"
        children.append(
            types.DocumentSymbol(
                name=label,
                kind=types.SymbolKind.Event,
                range=rng,
                selection_range=rng,
                detail="step",
            )
        )
    return types.DocumentSymbol(
        name=f.name,
        kind=kind,
        range=lsp_range(lines, codec, f.span),
        selection_range=lsp_range(lines, codec, f.name_span),
        detail="resumable" if f.resumable else None,
        children=children or None,
    )


def document_symbols(
    outline: Outline, lines: Sequence[str], codec: PositionCodec
) -> list[types.DocumentSymbol]:
    out: list[types.DocumentSymbol] = []
    if outline.entries_span is not None:
        rng = lsp_range(lines, codec, outline.entries_span)
        entries = [
            types.DocumentSymbol(
                name=e.label,
                kind=types.SymbolKind.Function,
                range=lsp_range(lines, codec, e.span),
                selection_range=lsp_range(lines, codec, e.span),
                detail="entry",
            )
            for e in outline.entries
        ]
        out.append(
            types.DocumentSymbol(
                name="PROGRAM_ENTRIES",
                kind=types.SymbolKind.Array,
                range=rng,
                selection_range=types.Range(rng.start, rng.start),
                children=entries or None,
            )
        )
    items: list[tuple[int, types.DocumentSymbol]] = []
    for c in outline.classes:
        methods = [_function_symbol(lines, codec, m, types.SymbolKind.Method) for m in c.methods]
        items.append(
            (
                c.span.line,
                types.DocumentSymbol(
                    name=c.name,
                    kind=types.SymbolKind.Class,
                    range=lsp_range(lines, codec, c.span),
                    selection_range=lsp_range(lines, codec, c.name_span),
                    detail="Agent" if c.is_agent else None,
                    children=methods or None,
                ),
            )
        )
    for f in outline.functions:
        items.append((f.span.line, _function_symbol(lines, codec, f, types.SymbolKind.Function)))
    items.sort(key=lambda t: t[0])
    out.extend(sym for _, sym in items)
    return out


def register(server: OpenProgramLanguageServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    async def symbols(
        ls: OpenProgramLanguageServer, params: types.DocumentSymbolParams
    ) -> list[types.DocumentSymbol]:
        await ls.ensure_model(params.text_document.uri)
        doc = ls.open_document(params.text_document.uri)
        if doc is None:
            return []
        outline = ls.outline(params.text_document.uri)
        if outline is None:
            return []
        return document_symbols(outline, doc.lines, doc.position_codec)
