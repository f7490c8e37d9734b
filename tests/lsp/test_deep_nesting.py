"""A Program nested too deeply for libcst (issue 13, item 1): OP001, nothing crashes.

libcst's native parser overflows the C stack on ~1,500 nested brackets (SIGSEGV, no
exception); the server and its analysis worker must neither crash nor lose documents,
and a worker that dies anyway is restarted.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from lsp_harness import diags_for, edit_doc, open_doc
from lsp_programs import AGENT_PROGRAM, DEEP_PROGRAM
from lsprotocol import types
from pytest_lsp import LanguageClient


def _server_pid(client: LanguageClient) -> int:
    proc = client._server  # the real server process pytest-lsp started
    assert proc is not None
    return proc.pid


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


async def _symbols(client: LanguageClient, uri: str) -> list[str]:
    res = await client.text_document_document_symbol_async(
        types.DocumentSymbolParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    return [s.name for s in res or []]


@pytest.mark.parametrize("incremental", [False, True], ids=["worker", "incremental"])
@pytest.mark.lsp_init(options={"debounceMs": 50})
async def test_two_thousand_nested_parentheses_get_op001(
    client: LanguageClient, workspace: Path, incremental: bool
) -> None:
    # a large document takes the in-process incremental path first, a small one the worker
    filler = "".join(f"\n\ndef helper_{i}():\n    return {i}\n" for i in range(700))
    text = DEEP_PROGRAM + (filler if incremental else "")
    assert (len(text) > 20_000) is incremental
    uri = (workspace / "deep.py").as_uri()
    other = (workspace / "agent.py").as_uri()
    open_doc(client, other, AGENT_PROGRAM)
    open_doc(client, uri, text)
    diags = await diags_for(client, uri, 1)
    assert [(d.code, d.range.start.line) for d in diags] == [("OP001", 4)]
    assert diags[0].message == "file does not parse: too many nested parentheses"
    server = _server_pid(client)
    assert _alive(server)
    workers = _children(server)
    # edit it: still OP001, same processes, the other document is intact
    version = edit_doc(client, uri, text.replace("return (", "return  ("))
    diags = await diags_for(client, uri, version)
    assert [d.code for d in diags] == ["OP001"]
    assert _alive(server) and all(_alive(w) for w in workers)
    assert "Reporter" in await _symbols(client, other)


@pytest.mark.lsp_init(options={"debounceMs": 50})
async def test_a_killed_worker_is_restarted_and_documents_kept(
    client: LanguageClient, workspace: Path
) -> None:
    uri = (workspace / "prog.py").as_uri()
    open_doc(client, uri, AGENT_PROGRAM)
    await diags_for(client, uri, 1)
    server = _server_pid(client)
    workers = _children(server)
    assert workers, "the whole-file analysis runs in a worker process"
    for pid in workers:
        os.kill(pid, signal.SIGKILL)
    # the next full analysis starts a new worker; the document was not lost
    version = edit_doc(client, uri, AGENT_PROGRAM.replace('"io"', '"iox"'))
    diags = await diags_for(client, uri, version)
    assert [d.code for d in diags] == ["OP104"]
    assert _alive(server)
    assert set(_children(server)) - set(workers)
    assert "Reporter" in await _symbols(client, uri)
