"""Hover: ``method_options`` keys/values (from ``openprogram.options``) and rule codes in
suppression comments (from the analyzer's ``RULES``)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from .options_context import context_at, option_table
from .positions import from_lsp, line_text, to_lsp

if TYPE_CHECKING:
    from .server import OpenProgramLanguageServer

_CODE = re.compile(r"\bOP\d{3}\b")
_SUPPRESSION = re.compile(r"#\s*(noqa\b|openprogram\s*:)", re.IGNORECASE)
_STRING = re.compile(r"(?P<q>['\"])(?P<body>(?:\\.|(?!(?P=q)).)*)(?P=q)")
_WORD = re.compile(r"[A-Za-z0-9_.\-]+")


def rule_markdown(code: str) -> str | None:
    try:
        from openprogram_analyzers import RULES
    except Exception:
        return None
    rule = RULES.get(code)
    if rule is None:
        return None
    name = getattr(rule, "name", "")
    summary = getattr(rule, "summary", "")
    explain = getattr(rule, "explain", None) or ""
    if callable(explain):
        explain = explain()
    explain = str(explain)
    first, _, rest = explain.partition("\n")
    if first.startswith(code):  # "OPxxx (name): summary" repeats the header
        explain = rest.strip()
    severity = getattr(rule, "severity", "")
    parts = [f"**{code}** `{name}`: {summary}" if name else f"**{code}**: {summary}"]
    if severity:
        parts.append(f"Default severity: {severity}")
    if explain:
        parts.append(explain)
    return "\n\n".join(parts)


def option_markdown(key: str, value: Any = None) -> str | None:
    table = option_table()
    if table is None:
        return None
    spec = table.OPTIONS.get(key)
    if spec is None:
        return None
    lines = [f"**`{key}`**: `{spec.type_label}` (default `{spec.default!r}`)"]
    if spec.tool_only:
        lines.append('_Tool-only: requires `"tool": True`._')
    lines.append(spec.doc)
    if value is not None:
        if spec.allowed is not None:
            ok = value in spec.allowed
            lines.append(
                f"Value `{value!r}`" + ("" if ok else " is **not** one of the allowed values")
            )
    return "\n\n".join(lines)


def sub_key_markdown(path: tuple[str | None, ...], key: str) -> str | None:
    table = option_table()
    if table is None or len(path) < 2:
        return None
    if path[1] == "render_range" and len(path) == 2:
        doc = table.RENDER_RANGE_DOCS.get(key)
        return f"`{key}`: {doc}" if doc else None
    if path[1] == "input" and len(path) == 3:
        kind = table.INPUT_FIELDS.get(key)
        if kind is None:
            return None
        return f"**input field `{key}`**: `{kind}` — UI/schema metadata for parameter `{path[2]}`."
    return None


def hover_at(lines: Sequence[str], line: int, col: int) -> tuple[str, int, int] | None:
    """Markdown and the (start, end) columns of the hovered token on ``line``."""
    text = line_text(lines, line)
    # rule codes in suppression comments
    comment = _SUPPRESSION.search(text)
    if comment and col >= comment.start():
        for m in _CODE.finditer(text, comment.start()):
            if m.start() <= col <= m.end():
                md = rule_markdown(m.group(0))
                return (md, m.start(), m.end()) if md else None
    # string token under the cursor
    for m in _STRING.finditer(text):
        if m.start() <= col < m.end():
            ctx = context_at(lines, line, m.start("body"))
            if ctx is None:
                return None
            md = _options_hover(ctx.path, ctx.position, ctx.value_key, m.group("body"))
            return (md, m.start(), m.end()) if md else None
    # bare value under the cursor (True, 3, None...)
    for m in _WORD.finditer(text):
        if m.start() <= col <= m.end():
            ctx = context_at(lines, line, m.start())
            if ctx is None or ctx.position != "value" or not ctx.value_key:
                return None
            md = _options_hover(ctx.path, "value", ctx.value_key, None)
            return (md, m.start(), m.end()) if md else None
    return None


def _options_hover(
    path: tuple[str | None, ...], position: str, value_key: str | None, token: str | None
) -> str | None:
    if len(path) == 1:
        if position == "key" and token:
            return option_markdown(token)
        if position == "value" and value_key:
            return option_markdown(value_key, token)
        return None
    if len(path) >= 2 and position == "key" and token and all(p is not None for p in path):
        return sub_key_markdown(path, token)
    return None


def register(server: OpenProgramLanguageServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: OpenProgramLanguageServer, params: types.HoverParams) -> types.Hover | None:
        doc = ls.open_document(params.text_document.uri)
        if doc is None:
            return None
        lines = doc.lines
        line, col = from_lsp(lines, doc.position_codec, params.position)
        found = hover_at(lines, line, col)
        if found is None:
            return None
        md, start, end = found
        codec = doc.position_codec
        return types.Hover(
            contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=md),
            range=types.Range(to_lsp(lines, codec, line, start), to_lsp(lines, codec, line, end)),
        )
