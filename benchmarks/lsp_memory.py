"""Memory of ``openprogram-lsp`` over a long editing session (issue 16, item 6).

Opens one generated Program (the ``lsp_latency`` generator) and applies N random edits
through a real LSP client over stdio: inserts of 1–3 characters (letters, brackets,
quotes, newlines, so the text is often broken) at random positions, each undone later,
so the document size stays constant. Every ``--sample`` edits it waits for the
diagnostics of the current version and prints the resident memory of the server and of
its analysis worker — the curve. Goal: the server's RSS stays within ±30 MB of its value
after the first sample.

    .venv/bin/python benchmarks/lsp_memory.py [--edits 10000] [--sample 500] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lsp_latency import Client, _proc_mb, generate_program
from lsprotocol import types

ALPHABET = "abcdefxyz_ ()[]{}:'\"\n.,=#"


def children_mb(pid: int) -> float:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    kids = path.read_text().split() if path.exists() else []
    return sum(_proc_mb(int(k))[0] for k in kids)


def position(text: str, offset: int) -> types.Position:
    line = text.count("\n", 0, offset)
    start = text.rfind("\n", 0, offset) + 1
    return types.Position(line, offset - start)


class Editor:
    """Random edits with undo; keeps the client's copy of the text."""

    def __init__(self, text: str, seed: int) -> None:
        self.text = text
        self.rng = random.Random(seed)
        self.undo: list[tuple[int, int]] = []  # (offset, length) of inserts not yet undone

    def next_edit(self) -> types.TextDocumentContentChangePartial:
        if self.undo and (len(self.undo) >= 20 or self.rng.random() < 0.5):
            at, n = self.undo.pop()
            rng = types.Range(position(self.text, at), position(self.text, at + n))
            self.text = self.text[:at] + self.text[at + n :]
            return types.TextDocumentContentChangePartial(range=rng, text="")
        at = self.rng.randrange(len(self.text))
        # later undo entries must stay valid: only insert after the last pending insert
        if self.undo:
            last_at, last_n = self.undo[-1]
            at = max(at, last_at + last_n)
            at = min(at, len(self.text))
        new = "".join(self.rng.choice(ALPHABET) for _ in range(self.rng.randint(1, 3)))
        pos = position(self.text, at)
        self.text = self.text[:at] + new + self.text[at:]
        self.undo.append((at, len(new)))
        return types.TextDocumentContentChangePartial(range=types.Range(pos, pos), text=new)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="op-lsp-mem-"))
    c = Client()
    await c.lc.start_io(sys.executable, "-m", "openprogram_lsp")
    await c.lc.initialize_async(
        types.InitializeParams(capabilities=types.ClientCapabilities(), root_uri=root.as_uri())
    )
    c.lc.initialized(types.InitializedParams())
    text = generate_program(args.lines)
    path = root / "program.py"
    path.write_text(text)
    uri = path.as_uri()
    c.lc.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", 1, text))
    )
    await c.wait((uri, 1))
    pid = c.lc._server.pid if c.lc._server else 0
    editor = Editor(text, args.seed)
    version = 1
    curve: list[dict[str, float]] = []
    t0 = time.perf_counter()
    for n in range(1, args.edits + 1):
        version += 1
        c.lc.text_document_did_change(
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(version=version, uri=uri),
                [editor.next_edit()],
            )
        )
        if n % args.wait_every == 0:
            await c.wait((uri, version), timeout=300)
        if n % args.sample == 0:
            await c.wait((uri, version), timeout=300)
            await asyncio.sleep(args.settle_s)  # let the full pass run
            server, _ = _proc_mb(pid)
            point = {
                "edits": n,
                "server_mb": round(server, 1),
                "worker_mb": round(children_mb(pid), 1),
                "doc_chars": len(editor.text),
                "elapsed_s": round(time.perf_counter() - t0, 1),
            }
            curve.append(point)
            if not args.json:
                print(json.dumps(point), flush=True)
    await c.lc.shutdown_async(None)
    c.lc.exit(None)
    await c.lc.stop()
    servers = [p["server_mb"] for p in curve]
    first = servers[0] if servers else 0.0
    return {
        "edits": args.edits,
        "lines": text.count("\n"),
        "curve": curve,
        "server_first_mb": first,
        "server_last_mb": servers[-1] if servers else 0.0,
        "server_max_drift_mb": round(max((abs(s - first) for s in servers), default=0.0), 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=2000)
    ap.add_argument("--edits", type=int, default=10_000)
    ap.add_argument("--sample", type=int, default=500, help="edits between RSS samples")
    ap.add_argument("--wait-every", type=int, default=10, help="edits between waits")
    ap.add_argument("--settle-s", type=float, default=0.6)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    result = asyncio.run(run(args))
    if args.json:
        print(json.dumps(result))
        return
    for key in ("edits", "lines", "server_first_mb", "server_last_mb", "server_max_drift_mb"):
        print(f"{key:22} {result[key]}")
    ok = result["server_max_drift_mb"] <= 30
    print("target (server RSS within ±30 MB):", "met" if ok else "NOT met")


if __name__ == "__main__":
    main()
