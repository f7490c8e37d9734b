"""Hover, completion, document symbols over a real LSP connection."""

from __future__ import annotations

from pathlib import Path

from lsp_harness import change_range, open_doc
from lsp_programs import AGENT_PROGRAM
from lsprotocol import types
from pytest_lsp import LanguageClient


def _pos(text: str, needle: str, delta: int = 0) -> types.Position:
    idx = text.index(needle) + delta
    line = text.count("\n", 0, idx)
    col = idx - (text.rfind("\n", 0, idx) + 1)
    return types.Position(line=line, character=col)


async def test_hover_option_key_and_value(client: LanguageClient, workspace: Path) -> None:
    uri = (workspace / "prog.py").as_uri()
    open_doc(client, uri, AGENT_PROGRAM)
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=_pos(AGENT_PROGRAM, '"expose"', 2),
        )
    )
    assert hover is not None
    assert isinstance(hover.contents, types.MarkupContent)
    assert "`expose`" in hover.contents.value and "DAG" in hover.contents.value
    assert hover.range is not None and hover.range.start == _pos(AGENT_PROGRAM, '"expose"')

    value = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=_pos(AGENT_PROGRAM, '"io"', 1),
        )
    )
    assert value is not None and isinstance(value.contents, types.MarkupContent)
    assert "`expose`" in value.contents.value and "'io'" in value.contents.value

    nothing = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=_pos(AGENT_PROGRAM, "def fetch", 5),
        )
    )
    assert nothing is None


async def test_completion_keys_and_enum_values(client: LanguageClient, workspace: Path) -> None:
    uri = (workspace / "prog.py").as_uri()
    open_doc(client, uri, AGENT_PROGRAM)
    # type a new key, half-typed: "helper": {"system": "be brief", "ex
    at = _pos(AGENT_PROGRAM, '"be brief"', len('"be brief"'))
    change_range(client, uri, (at.line, at.character), (at.line, at.character), ', "ex')
    items = await client.text_document_completion_async(
        types.CompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(at.line, at.character + 5),
        )
    )
    assert isinstance(items, types.CompletionList)
    labels = {i.label for i in items.items}
    assert {"expose", "resumable", "render_range", "tool"} <= labels
    expose = next(i for i in items.items if i.label == "expose")
    assert isinstance(expose.text_edit, types.TextEdit)
    assert expose.text_edit.new_text == "expose"  # inside the string: no quotes added
    assert expose.text_edit.range.start.character == at.character + 3

    # enum values after "expose":
    line = AGENT_PROGRAM.splitlines()[at.line]
    change_range(client, uri, (at.line, at.character + 5), (at.line, at.character + 5), 'pose": ')
    items = await client.text_document_completion_async(
        types.CompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(at.line, at.character + 12),
        )
    )
    assert isinstance(items, types.CompletionList)
    values = {i.label: i for i in items.items}
    assert set(values) == {"full", "io", "llm", "hidden"}, line
    edit = values["hidden"].text_edit
    assert isinstance(edit, types.TextEdit) and edit.new_text == '"hidden"'

    # method names at the top level of the dict
    top = _pos(AGENT_PROGRAM, '"helper": {')
    change_range(client, uri, (top.line, 0), (top.line, 0), "        h\n")
    items = await client.text_document_completion_async(
        types.CompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(top.line, 9),
        )
    )
    assert isinstance(items, types.CompletionList)
    assert {"report", "helper"} <= {i.label for i in items.items}

    # outside any method_options literal: nothing
    items = await client.text_document_completion_async(
        types.CompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(0, 3),
        )
    )
    assert isinstance(items, types.CompletionList) and list(items.items) == []


async def test_document_symbols(client: LanguageClient, workspace: Path) -> None:
    uri = (workspace / "prog.py").as_uri()
    open_doc(client, uri, AGENT_PROGRAM)
    result = await client.text_document_document_symbol_async(
        types.DocumentSymbolParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert result is not None
    syms = {s.name: s for s in result if isinstance(s, types.DocumentSymbol)}
    assert {"PROGRAM_ENTRIES", "Reporter", "fetch", "summarize"} <= set(syms)
    entries = syms["PROGRAM_ENTRIES"].children or []
    assert [e.name for e in entries] == ["summarize", "reporter.report"]
    reporter = syms["Reporter"]
    assert reporter.kind == types.SymbolKind.Class and reporter.detail == "Agent"
    methods = {m.name: m for m in reporter.children or []}
    assert set(methods) == {"report", "helper"}
    assert methods["report"].detail == "resumable"
    steps = [s.name for s in methods["report"].children or []]
    assert steps == ['step "fetch"', 'step "fetch"', 'step "write"']
    assert methods["report"].selection_range.start == _pos(AGENT_PROGRAM, "report(self")

    # a document that does not parse (mid-edit): the last outline that parsed, not an error
    change_range(client, uri, (0, 0), (0, 0), "def (:\n")
    broken = await client.text_document_document_symbol_async(
        types.DocumentSymbolParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert broken is not None
    assert [s.name for s in broken] == [s.name for s in result]


async def test_unknown_uri_is_harmless(client: LanguageClient, workspace: Path) -> None:
    uri = (workspace / "never-opened.py").as_uri()
    for req in (
        client.text_document_hover_async(
            types.HoverParams(types.TextDocumentIdentifier(uri=uri), types.Position(0, 0))
        ),
        client.text_document_document_symbol_async(
            types.DocumentSymbolParams(text_document=types.TextDocumentIdentifier(uri=uri))
        ),
        client.text_document_code_lens_async(
            types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
        ),
    ):
        assert not await req


async def test_hover_rule_code_in_suppression_comment(
    client: LanguageClient, workspace: Path
) -> None:
    text = AGENT_PROGRAM.replace(
        '"expose": "io"},', '"expose": "iox"},  # noqa: OP104, OP102'
    ).replace("def helper(self):", "def helper(self):  # openprogram: ignore[OP203]")
    uri = (workspace / "prog.py").as_uri()
    open_doc(client, uri, text)
    hover = await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri=uri), _pos(text, "OP104", 2))
    )
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    assert hover.contents.value.startswith("**OP104** `invalid-expose`")
    assert '"full"' in hover.contents.value  # the rule's explanation
    assert hover.range is not None and hover.range.start == _pos(text, "OP104")
    other = await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri=uri), _pos(text, "OP203]", 1))
    )
    assert other is not None and isinstance(other.contents, types.MarkupContent)
    assert "OP203" in other.contents.value
    # a code outside a suppression comment is not a rule reference
    plain = AGENT_PROGRAM.replace("return 1", 'return "OP104"')
    open_doc(client, uri, plain, version=5)
    none = await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri=uri), _pos(plain, '"OP104"', 2))
    )
    assert none is None
