"""Latency and memory of ``openprogram-lsp`` driven over stdio by a real LSP client.

Generates a ~2,000-line Program, opens it, applies single-character edits at realistic
positions (inside identifiers, step names and option strings; each insert is followed by
the matching backspace) and measures, per edit, the time from sending ``didChange`` to
receiving the ``publishDiagnostics`` for that document version. Then opens N such files
and reports the server's resident memory.

    .venv/bin/python benchmarks/lsp_latency.py [--edits 200] [--files 50] [--json]

Targets (issue 7): p50 <= 25 ms, p95 <= 50 ms, RSS <= 300 MB with 50 files open.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient


def generate_program(target_lines: int = 2000, seed: int = 0) -> str:
    """A Program of Agents with resumable methods, helpers, steps and entries."""
    parts = ['"""Generated benchmark Program."""\n\nfrom openprogram import Agent, llm, step\n\n']
    names: list[str] = []
    i = 0
    while sum(p.count("\n") for p in parts) < target_lines - 3:
        parts.append(
            f'''

def fetch_{i}(url: str) -> str:
    """Fetch document {i}."""
    text = url.strip()
    words = text.split()
    return " ".join(w.lower() for w in words)


class Worker{i}(Agent):
    """Agent number {i} (seed {seed})."""

    method_options = {{
        "report": {{"resumable": True, "expose": "io"}},
        "helper": {{"system": "be brief", "render_range": {{"callers": 1, "subcalls": -1}}}},
    }}

    def report(self, topic: str) -> str:
        first = step("fetch", fetch_{i}, topic)
        second = step("fetch", fetch_{i}, first)
        summary = self.helper(second)
        return step("write", fetch_{i}, summary)

    def helper(self, text: str) -> str:
        return llm(f"Summarize: {{text}}")


def summarize_{i}(text: str) -> str:
    return step("sum", fetch_{i}, text)
'''
        )
        names.append(f"summarize_{i}")
        i += 1
    parts.append("\n\nPROGRAM_ENTRIES = [" + ", ".join(names) + "]\n")
    return "".join(parts)


_IDENT = re.compile(r"\b[a-z_]{4,}\b")
_STRING = re.compile(r'"([a-z ]{3,})"')


def edit_positions(text: str, n: int, seed: int = 1) -> list[tuple[int, int]]:
    """Positions inside identifiers and strings of indented (body) lines."""
    rng = random.Random(seed)
    lines = text.split("\n")
    body = [i for i, ln in enumerate(lines) if ln.startswith("    ") and ln.strip()]
    out: list[tuple[int, int]] = []
    while len(out) < n:
        ln = rng.choice(body)
        pat = _STRING if rng.random() < 0.35 else _IDENT
        matches = list(pat.finditer(lines[ln]))
        if not matches:
            continue
        m = rng.choice(matches)
        start, end = m.span(1) if pat is _STRING else m.span()
        out.append((ln, rng.randint(start + 1, end - 1)))
    return out


class Client:
    def __init__(self) -> None:
        self.lc = LanguageClient("lsp-latency", "1")
        self.first: dict[tuple[str, int], float] = {}
        self.last: dict[tuple[str, int], float] = {}
        self.counts: dict[tuple[str, int], int] = {}
        self.event = asyncio.Event()

        @self.lc.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def publish(ls: Any, params: types.PublishDiagnosticsParams) -> None:
            key = (params.uri, params.version or -1)
            now = time.perf_counter()
            self.first.setdefault(key, now)
            self.last[key] = now
            self.counts[key] = self.counts.get(key, 0) + 1
            self.event.set()

        @self.lc.feature(types.WINDOW_LOG_MESSAGE)
        def log(ls: Any, params: types.LogMessageParams) -> None:
            if params.type == types.MessageType.Error:
                print("server:", params.message, file=sys.stderr)

    async def wait(self, key: tuple[str, int], count: int = 1, timeout: float = 120.0) -> float:
        deadline = time.perf_counter() + timeout
        while self.counts.get(key, 0) < count:
            self.event.clear()
            left = deadline - time.perf_counter()
            if left <= 0:
                raise TimeoutError(f"no diagnostics for {key}")
            try:
                await asyncio.wait_for(self.event.wait(), left)
            except asyncio.TimeoutError:
                pass
        return self.first[key]


def _proc_mb(pid: int) -> tuple[float, float]:
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(rest.split()[0]) / 1024
    return values.get("VmRSS", 0.0), values.get("VmHWM", 0.0)


def rss_mb(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) in MB from /proc (Linux), server plus its child processes."""
    total, peak = _proc_mb(pid)
    children = Path(f"/proc/{pid}/task/{pid}/children")
    for child in children.read_text().split() if children.exists() else []:
        rss, hwm = _proc_mb(int(child))
        total, peak = total + rss, peak + hwm
    return total, peak


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


async def run(args: argparse.Namespace) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="op-lsp-bench-"))
    c = Client()
    await c.lc.start_io(sys.executable, "-m", "openprogram_lsp")
    await c.lc.initialize_async(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            root_uri=root.as_uri(),
            initialization_options={"debounceMs": args.debounce_ms}
            if args.debounce_ms is not None
            else None,
        )
    )
    c.lc.initialized(types.InitializedParams())
    text = generate_program(args.lines)
    path = root / "program.py"
    path.write_text(text)
    uri = path.as_uri()
    t0 = time.perf_counter()
    c.lc.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", 1, text))
    )
    await c.wait((uri, 1))
    open_first = time.perf_counter() - t0
    await c.wait((uri, 1), count=2)  # the full analysis after the quiet period
    open_full = time.perf_counter() - t0

    latencies: list[float] = []
    version = 1
    positions = edit_positions(text, args.edits // 2 + 1)
    for n in range(args.edits):
        line, col = positions[n // 2]
        if n % 2 == 0:
            rng = types.Range(types.Position(line, col), types.Position(line, col))
            new = "x"
        else:
            rng = types.Range(types.Position(line, col), types.Position(line, col + 1))
            new = ""
        version += 1
        sent = time.perf_counter()
        c.lc.text_document_did_change(
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(version=version, uri=uri),
                [types.TextDocumentContentChangePartial(range=rng, text=new)],
            )
        )
        got = await c.wait((uri, version))
        latencies.append((got - sent) * 1000)
        await asyncio.sleep(args.think_ms / 1000)
        if args.pause_every and (n + 1) % args.pause_every == 0:
            await asyncio.sleep(args.pause_s)  # a pause in typing: the full pass runs

    pid = c.lc._server.pid if c.lc._server else None
    for k in range(args.files - 1):
        extra = root / f"program_{k}.py"
        body = generate_program(args.lines, seed=k + 1)
        extra.write_text(body)
        c.lc.text_document_did_open(
            types.DidOpenTextDocumentParams(
                types.TextDocumentItem(extra.as_uri(), "python", 1, body)
            )
        )
    for k in range(args.files - 1):
        await c.wait(((root / f"program_{k}.py").as_uri(), 1), timeout=600)
    await asyncio.sleep(args.settle_s)
    rss, hwm = rss_mb(pid) if pid else (0.0, 0.0)
    await c.lc.shutdown_async(None)
    c.lc.exit(None)
    await c.lc.stop()
    return {
        "lines": text.count("\n"),
        "edits": len(latencies),
        "p50_ms": round(statistics.median(latencies), 1),
        "p95_ms": round(pct(latencies, 0.95), 1),
        "max_ms": round(max(latencies), 1),
        "open_first_diagnostics_s": round(open_first, 2),
        "open_full_analysis_s": round(open_full, 2),
        "files_open": args.files,
        "rss_mb": round(rss, 1),
        "peak_rss_mb": round(hwm, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=2000)
    ap.add_argument("--edits", type=int, default=200)
    ap.add_argument("--files", type=int, default=50)
    ap.add_argument(
        "--think-ms", type=float, default=30.0, help="pause after each edit's diagnostics"
    )
    ap.add_argument("--pause-every", type=int, default=40, help="edits between typing pauses")
    ap.add_argument("--pause-s", type=float, default=1.0)
    ap.add_argument("--settle-s", type=float, default=2.0)
    ap.add_argument("--debounce-ms", type=int, default=None)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    result = asyncio.run(run(args))
    if args.json:
        print(json.dumps(result))
        return
    for k, v in result.items():
        print(f"{k:28} {v}")
    ok = result["p50_ms"] <= 25 and result["p95_ms"] <= 50 and result["peak_rss_mb"] <= 300
    print("targets (p50<=25ms, p95<=50ms, RSS<=300MB):", "met" if ok else "NOT met")


if __name__ == "__main__":
    main()
