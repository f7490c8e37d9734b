"""Completion of ``method_options`` keys and enum values (from ``openprogram.options``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from .options_context import OptionsContext, class_methods, context_at, option_table
from .positions import from_lsp, to_lsp

if TYPE_CHECKING:
    from .server import OpenProgramLanguageServer

TRIGGERS = ['"', "'"]


def _item(
    label: str,
    kind: types.CompletionItemKind,
    new_text: str,
    rng: types.Range,
    detail: str | None = None,
    doc: str | None = None,
    sort: int = 0,
) -> types.CompletionItem:
    return types.CompletionItem(
        label=label,
        kind=kind,
        detail=detail,
        documentation=types.MarkupContent(kind=types.MarkupKind.Markdown, value=doc)
        if doc
        else None,
        text_edit=types.TextEdit(range=rng, new_text=new_text),
        filter_text=label,
        sort_text=f"{sort:03d}{label}",
    )


def candidates(
    ctx: OptionsContext, lines: Sequence[str], line: int
) -> list[tuple[str, str, str | None, str | None, types.CompletionItemKind]]:
    """(label, kind-of-value 'key'|'value', detail, doc, item kind) for the context."""
    table = option_table()
    out: list[tuple[str, str, str | None, str | None, types.CompletionItemKind]] = []
    if table is None or any(p is None for p in ctx.path):
        return out
    path = ctx.path
    prop = types.CompletionItemKind.Property
    enum = types.CompletionItemKind.EnumMember
    if ctx.position == "key":
        if len(path) == 0:
            for name in class_methods(lines, line):
                if not name.startswith("__"):
                    out.append((name, "key", "method", None, types.CompletionItemKind.Method))
        elif len(path) == 1:
            for key, spec in table.OPTIONS.items():
                detail = spec.type_label + (" (tool only)" if spec.tool_only else "")
                out.append((key, "key", detail, spec.doc, prop))
        elif len(path) == 2 and path[1] == "render_range":
            for key in table.RENDER_RANGE_KEYS:
                out.append((key, "key", "int" if key == "subcalls" else "int | None", None, prop))
        elif len(path) == 3 and path[1] == "input":
            for key, kind in table.INPUT_FIELDS.items():
                out.append((key, "key", kind, None, prop))
    elif ctx.position == "value" and len(path) == 1 and ctx.value_key:
        spec = table.OPTIONS.get(ctx.value_key)
        if spec is not None and spec.allowed is not None:
            for v in spec.allowed:
                out.append((str(v), "value", f"{ctx.value_key} value", spec.doc, enum))
        elif spec is not None and spec.kind == "bool" and not ctx.in_string:
            for v in ("True", "False"):
                out.append((v, "literal", "bool", spec.doc, types.CompletionItemKind.Keyword))
    return out


def complete(lines: Sequence[str], line: int, col: int, codec: Any) -> list[types.CompletionItem]:
    ctx = context_at(lines, line, col)
    if ctx is None:
        return []
    start_col = col - len(ctx.prefix)
    rng = types.Range(to_lsp(lines, codec, line, start_col), to_lsp(lines, codec, line, col))
    items = []
    for n, (label, what, detail, doc, kind) in enumerate(candidates(ctx, lines, line)):
        if ctx.in_string or what == "literal":
            new_text = label
        elif what == "key":
            new_text = f'"{label}": '
        else:
            new_text = f'"{label}"'
        items.append(_item(label, kind, new_text, rng, detail, doc, n))
    return items


def register(server: OpenProgramLanguageServer) -> None:
    @server.feature(
        types.TEXT_DOCUMENT_COMPLETION,
        types.CompletionOptions(trigger_characters=TRIGGERS),
    )
    def completion(
        ls: OpenProgramLanguageServer, params: types.CompletionParams
    ) -> types.CompletionList | None:
        doc = ls.open_document(params.text_document.uri)
        if doc is None:
            return None
        lines = doc.lines
        line, col = from_lsp(lines, doc.position_codec, params.position)
        items = complete(lines, line, col, doc.position_codec)
        return types.CompletionList(is_incomplete=False, items=items)
