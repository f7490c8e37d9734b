"""2,000 random incremental edits: the server answers every request and never crashes."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from lsp_harness import change_range, edit_doc, open_doc, rec_of, wait_for
from lsp_programs import AGENT_PROGRAM
from lsprotocol import types
from pytest_lsp import LanguageClient

SNIPPETS = [
    '"',
    "'",
    '"""',
    "'''",
    "(",
    ")",
    "{",
    "}",
    "[",
    "]",
    ":",
    ",",
    "\n",
    "    ",
    "\t",
    "def f(:",
    "class X(Agent):\n    method_options = {",
    '"expose": "',
    '"report": {"resumable": Tr',
    'step("a", f)',
    "step(name, f)",
    "PROGRAM_ENTRIES = [",
    "# noqa: OP2",
    "import os\n",
    "lambda: 0",
    "\\\n",
    "😀é漢",
    "\x00",
    "@decorator\n",
    "async def g():\n    yield 1\n",
    'f"{x!r:>{w}}"',
    "\r\n",
    "\r",
]


def _random_edit(rng: random.Random, text: str) -> tuple[tuple[int, int], tuple[int, int], str]:
    lines = text.split("\n")

    def pos() -> tuple[int, int]:
        line = rng.randrange(len(lines))
        return line, rng.randint(0, len(lines[line].rstrip("\r")))

    kind = rng.random()
    a = pos()
    if kind < 0.45:
        return a, a, rng.choice(SNIPPETS)
    if kind < 0.75:
        b = pos()
        return (min(a, b), max(a, b), "")
    if kind < 0.85:
        b = pos()
        return (min(a, b), max(a, b), rng.choice(SNIPPETS) * rng.randint(1, 5))
    if kind < 0.90:
        return a, a, "x" * rng.choice([1_000, 20_000, 100_000])  # huge line
    if kind < 0.95:
        return (0, 0), (len(lines), 0), ""  # delete everything
    return (0, 0), (len(lines), 0), AGENT_PROGRAM


@pytest.mark.slow
@pytest.mark.lsp_init(options={"incrementalMinChars": 0, "debounceMs": 50})
async def test_random_edits_never_crash(client: LanguageClient, workspace: Path) -> None:
    rng = random.Random(20260501)
    uri = (workspace / "prog.py").as_uri()
    open_doc(client, uri, AGENT_PROGRAM)
    answered = 0
    for batch in range(40):
        for _ in range(50):
            _, text = rec_of(client).docs[uri]
            start, end, new = _random_edit(rng, text)
            change_range(client, uri, start, end, new)
        _, text = rec_of(client).docs[uri]
        n_lines = text.count("\n") + 1
        line = rng.randrange(n_lines)
        position = types.Position(line=line, character=rng.randint(0, 5))
        ident = types.TextDocumentIdentifier(uri=uri)
        await client.text_document_hover_async(types.HoverParams(ident, position))
        await client.text_document_document_symbol_async(types.DocumentSymbolParams(ident))
        await client.text_document_completion_async(types.CompletionParams(ident, position))
        await client.text_document_code_lens_async(types.CodeLensParams(ident))
        await client.text_document_code_action_async(
            types.CodeActionParams(
                ident,
                types.Range(types.Position(line, 0), types.Position(line, 0)),
                types.CodeActionContext(diagnostics=[]),
            )
        )
        answered += 5
        assert client.error is None, f"batch {batch}"
    assert answered == 200

    # the document was never lost: replace it through one more incremental edit and check
    # the server's view (symbols and diagnostics) matches the client's text exactly
    version = edit_doc(client, uri, AGENT_PROGRAM.replace('"io"', '"iox"'))
    symbols = await client.text_document_document_symbol_async(
        types.DocumentSymbolParams(types.TextDocumentIdentifier(uri=uri))
    )
    assert symbols and {s.name for s in symbols} >= {"Reporter", "summarize", "PROGRAM_ENTRIES"}

    def final_diags() -> list[str] | None:
        for p in reversed(rec_of(client).published):
            if p.uri == uri and p.version == version:
                return [str(d.code) for d in p.diagnostics]
        return None

    await wait_for(lambda: final_diags() == ["OP104"], "diagnostics of the final version")
