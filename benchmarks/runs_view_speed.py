"""How fast the editor's run views open: Runs view, steps and graph of a 10,000-step run,
and the step inlay hints of a 2,000-line Program, through ``openprogram-lsp`` over stdio.

Makes the runs with the real CLI in a temporary workspace, starts the server, and times each
request from send to answer (medians of several rounds; the transport is included, so the
server's own share is smaller). The floor printed beside each figure is a bare ``sqlite3``
read of the same rows plus ``json.loads`` of their JSON columns in this process: the cost of
merely reading what the view shows.

    .venv/bin/python benchmarks/runs_view_speed.py [--steps 10000] [--lines 2000] [--rounds 5]

Targets (issue 14): runs view, steps and graph of a 10,000-node run <= 1 s; inlay hints of a
2,000-line Program <= 50 ms (its outline cached, as while scrolling or after a run). Right
after an edit the server first rebuilds the outline: that row is shown beside a bare
``ast.parse`` of the same text, without a target.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

OPENPROGRAM = str(Path(sys.executable).parent / "openprogram")

LONG_RUN = """\
from openprogram import step


def work(i: int) -> dict:
    return {"i": i, "square": i * i}


def main(n: int) -> int:
    total = 0
    for i in range(n):
        total += step("work", work, i)["square"] % 7
    return total


main.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["main"]
"""


def long_program(lines: int) -> str:
    """A 2,000-line resumable function with one step per line."""
    body = "\n".join(f'    x = step("s{i}", work, x)' for i in range(lines - 12))
    return (
        "from openprogram import step\n\n\n"
        "def work(x: int) -> int:\n    return x + 1\n\n\n"
        f"def main() -> int:\n    x = 0\n{body}\n    return x\n\n\n"
        'main.__agent_options__ = {"resumable": True}\nPROGRAM_ENTRIES = ["main"]\n'
    )


def run_cli(workspace: Path, ref: str, args: dict[str, Any]) -> str:
    proc = subprocess.run(
        [OPENPROGRAM, "run", ref, "--args", json.dumps(args), "--json"],
        cwd=workspace, capture_output=True, text=True, check=True, timeout=900,
    )  # fmt: skip
    return str(json.loads(proc.stdout)["run_id"])


class RawClient:
    """A minimal JSON-RPC client over the server's stdio: answers are timed up to the last byte
    read, without any client-side conversion into typed objects."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.next_id = 0

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    async def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        length = 0
        while True:
            line = await self.proc.stdout.readline()
            if line in (b"\r\n", b""):
                break
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        return dict(json.loads(await self.proc.stdout.readexactly(length)))

    async def request(self, method: str, params: Any) -> Any:
        self.next_id += 1
        my_id = self.next_id
        self.send({"id": my_id, "method": method, "params": params})
        while True:
            msg = await self.read()
            if msg.get("id") == my_id and "method" not in msg:
                if "error" in msg:
                    raise RuntimeError(msg["error"])
                return msg.get("result")
            if "method" in msg and "id" in msg:  # a server request: answer it plainly
                result: Any = (
                    [None] * len(msg["params"]["items"])
                    if msg["method"] == "workspace/configuration"
                    else None
                )
                self.send({"id": msg["id"], "result": result})

    def notify(self, method: str, params: Any) -> None:
        self.send({"method": method, "params": params})


async def timed(fn: Callable[[], Awaitable[Any]], rounds: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(rounds):
        start = time.perf_counter()
        result = await fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def floor_read(db: Path, run_id: str, rounds: int) -> float:
    """Median time of a bare read of the run's steps and nodes with their JSON decoded."""
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        steps = conn.execute("SELECT result FROM run_steps WHERE run_id = ?", (run_id,)).fetchall()
        nodes = conn.execute(
            "SELECT input, output, metadata FROM nodes WHERE session_id = ?", (run_id,)
        ).fetchall()
        for (r,) in steps:
            json.loads(r)
        for row in nodes:
            for col in row:
                if col:
                    json.loads(col)
        conn.close()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def floor_parse(text: str, rounds: int) -> float:
    """Median time of a bare ``ast.parse`` of the Program (an edit's hints need its outline)."""
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        ast.parse(text)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--lines", type=int, default=2_000)
    parser.add_argument("--rounds", type=int, default=5)
    opts = parser.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp)
        (ws / "long_run.py").write_text(LONG_RUN)
        (ws / "long_program.py").write_text(long_program(opts.lines))
        print(f"making a {opts.steps}-step run and a {opts.lines}-line Program's run ...")
        run_id = run_cli(ws, "long_run.py:main", {"n": opts.steps})
        run_cli(ws, "long_program.py:main", {})
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "openprogram_lsp", cwd=ws,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            limit=2**30,
        )  # fmt: skip
        client = RawClient(proc)
        await client.request(
            "initialize",
            {
                "processId": None,
                "rootUri": ws.as_uri(),
                "capabilities": {"workspace": {"inlayHint": {"refreshSupport": False}}},
                "workspaceFolders": [{"uri": ws.as_uri(), "name": "ws"}],
            },
        )
        client.notify("initialized", {})
        text = (ws / "long_program.py").read_text()
        uri = (ws / "long_program.py").as_uri()
        client.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}},
        )
        req = client.request
        t_runs, _ = await timed(lambda: req("openprogram/runs", {}), opts.rounds)
        t_steps, steps = await timed(
            lambda: req("openprogram/runSteps", {"runId": run_id}), opts.rounds
        )
        t_graph, graph = await timed(
            lambda: req("openprogram/runGraph", {"runId": run_id}), opts.rounds
        )
        n_lines = len(text.splitlines())
        hint_params = {
            "textDocument": {"uri": uri},
            "range": {
                "start": {"line": 0, "character": 0},
                "end": {"line": n_lines, "character": 0},
            },
        }
        await req("textDocument/inlayHint", hint_params)  # outline cached, as in use
        t_hints, hints = await timed(
            lambda: req("textDocument/inlayHint", hint_params), opts.rounds * 4
        )
        version = 1

        async def after_edit() -> Any:
            """One edit (a comment appended: the outline is rebuilt), then the hints."""
            nonlocal version
            version += 1
            client.notify(
                "textDocument/didChange",
                {
                    "textDocument": {"uri": uri, "version": version},
                    "contentChanges": [{"text": f"{text}# edit {version}\n"}],
                },
            )
            return await req("textDocument/inlayHint", hint_params)

        t_edited, _ = await timed(after_edit, opts.rounds)
        await req("shutdown", None)
        client.notify("exit", None)
        await proc.wait()
        floor = floor_read(ws / ".openprogram" / "openprogram.db", run_id, opts.rounds)
        parse_floor = floor_parse(text, opts.rounds)
    n_steps, n_nodes = len(steps["steps"]), len(graph["nodes"])
    rows = [
        ("runs view (openprogram/runs)", t_runs, 1.0, None),
        (f"steps of the run ({n_steps} steps)", t_steps, 1.0, floor),
        (f"run graph ({n_nodes} nodes)", t_graph, 1.0, floor),
        (f"inlay hints, {n_lines}-line Program ({len(hints or [])} hints)", t_hints, 0.050, None),
        ("  the same right after an edit (outline rebuilt)", t_edited, None, parse_floor),
    ]
    print(f"\nload average (1, 5, 15 min): {load_before} before, {os.getloadavg()} after")
    print(f"{'request':<52} {'median':>10} {'target':>9}        floor (bare read / parse)")
    ok = True
    for name, t, target, fl in rows:
        good = target is None or t <= target
        ok &= good
        extra = f"{fl * 1000:8.1f} ms" if fl is not None else ""
        goal = "-" if target is None else f"{target * 1000:.0f} ms"
        verdict = "" if target is None else "ok" if good else "SLOW"
        print(f"{name:<52} {t * 1000:8.1f} ms {goal:>9} {verdict:>4} {extra}")
    print("\nall within target" if ok else "\nsome requests are over target")


if __name__ == "__main__":
    asyncio.run(main())
