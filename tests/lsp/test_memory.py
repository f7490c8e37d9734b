"""2,000 random edits with undo (issue 16, item 6; issue 13 "must show"): the server stays
alive and answering, and its memory stays bounded. The RSS curve over 10,000 edits is
``benchmarks/lsp_memory.py``; this test only guards against unbounded growth."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest
from lsp_harness import change_range, diags_for, open_doc, rec_of, wait_for
from lsp_programs import AGENT_PROGRAM, DEEP_PROGRAM
from lsprotocol import types
from pytest_lsp import LanguageClient

ALPHABET = "abcdefxyz_ ()[]{}:'\"\n.,=#"
RSS_GROWTH_BOUND_MB = 150  # generous: the benchmark shows it flat; leaks grow far faster


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def _latest_codes(client: LanguageClient, uri: str, version: int) -> list[str] | None:
    for p in reversed(rec_of(client).published):
        if p.uri == uri and p.version == version:
            return sorted(str(d.code) for d in p.diagnostics)
    return None


def _position(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset)
    return line, offset - (text.rfind("\n", 0, offset) + 1)


@pytest.mark.slow
@pytest.mark.lsp_init(options={"incrementalMinChars": 2_000, "debounceMs": 30})
async def test_two_thousand_random_edits_with_undo_keep_memory_bounded(
    client: LanguageClient, workspace: Path
) -> None:
    rng = random.Random(16_6)
    uri = (workspace / "prog.py").as_uri()
    base = AGENT_PROGRAM * 4  # a few thousand characters: incremental passes and full ones
    open_doc(client, uri, base)
    await diags_for(client, uri, 1)
    await wait_for(lambda: _latest_codes(client, uri, 1) is not None, "first diagnostics")
    await asyncio.sleep(0.5)  # the full pass
    start_codes = _latest_codes(client, uri, 1)
    assert client._server is not None
    pid = client._server.pid
    before = _rss_mb(pid)
    pending: list[tuple[int, int]] = []  # inserts not yet undone (offset, length)
    version = 1
    for n in range(2_000):
        _, text = rec_of(client).docs[uri]
        if pending and (len(pending) >= 20 or rng.random() < 0.5):
            at, size = pending.pop()  # undo the last insert
            version = change_range(client, uri, _position(text, at), _position(text, at + size), "")
        else:
            low = pending[-1][0] + pending[-1][1] if pending else 0
            at = rng.randint(low, len(text))
            new = (
                DEEP_PROGRAM
                if n % 500 == 250
                else "".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 3)))
            )
            pos = _position(text, at)
            version = change_range(client, uri, pos, pos, new)
            pending.append((at, len(new)))
        if n % 100 == 99:
            symbols = await client.text_document_document_symbol_async(
                types.DocumentSymbolParams(types.TextDocumentIdentifier(uri=uri))
            )
            assert symbols is not None  # answering (last good outline while broken)
            await diags_for(client, uri, version)
    while pending:  # undo everything: back to the original text
        _, text = rec_of(client).docs[uri]
        at, size = pending.pop()
        version = change_range(client, uri, _position(text, at), _position(text, at + size), "")
    assert rec_of(client).docs[uri][1] == base
    await wait_for(
        lambda: _latest_codes(client, uri, version) == start_codes,
        "the original findings for the original text",
    )
    after = _rss_mb(pid)
    print(f"server RSS before {before:.1f} MB, after 2,000 edits {after:.1f} MB")
    assert client.error is None
    assert after - before < RSS_GROWTH_BOUND_MB


async def test_finished_handlers_are_released_after_every_keystroke() -> None:
    """pygls 2 keeps a future per notification (and per handler its built-in features yield
    to) in ``_request_futures`` forever: ~2 KB per keystroke, the linear drift the memory
    benchmark showed. The real server, fed real JSON-RPC messages, keeps none of them."""
    from openprogram_lsp.server import OpenProgramLanguageServer

    class Discard:
        def write(self, data: bytes) -> None:
            pass

        def close(self) -> None:
            pass

    server = OpenProgramLanguageServer()
    protocol = server.protocol
    protocol.set_writer(Discard())

    def send(message: dict[str, object]) -> None:
        protocol.handle_message(protocol.structure_message({"jsonrpc": "2.0", **message}))

    send({"id": 1, "method": "initialize", "params": {"capabilities": {}, "rootUri": None}})
    send({"method": "initialized", "params": {}})
    uri = "file:///tmp/op-released/prog.py"
    doc = {"uri": uri, "languageId": "python", "version": 1, "text": AGENT_PROGRAM}
    send({"method": "textDocument/didOpen", "params": {"textDocument": doc}})
    start = {"line": 0, "character": 0}
    for version in range(2, 302):
        change = {"range": {"start": start, "end": start}, "text": "#"}
        send(
            {
                "method": "textDocument/didChange",
                "params": {
                    "textDocument": {"uri": uri, "version": version},
                    "contentChanges": [change],
                },
            }
        )
        await asyncio.sleep(0)
    document = server.workspace.get_text_document(uri)
    assert (document.version, document.source) == (301, "#" * 300 + AGENT_PROGRAM)
    await wait_for(lambda: not protocol._request_futures, "every handler's future released")
    send({"method": "textDocument/didClose", "params": {"textDocument": {"uri": uri}}})
    await asyncio.sleep(0.05)
