"""Whole-file analysis in a separate process, so it never competes with the server's
event loop and incremental passes for the GIL.

Protocol (JSON lines on stdin/stdout, no pickling): request
``{"id", "source", "path", "config": {LintConfig fields} | null, "recorded": {...} | null,
"only_model": bool}``, acknowledgement ``{"id", "started": true}`` (so a worker that dies
afterwards died on this request, and one that dies before is simply replaced), then the
response ``{"id", "findings": [Finding.to_json()...], "model": ProgramModel.to_json() |
null, "depends_on": [helper files read or looked for]}`` (the analyzer's Program model of
the same parse; ``only_model``: no findings) or
``{"id", "error": "..."}``. The worker only parses source text; it never imports or runs
user code.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from openprogram_analyzers.program import ProgramModel

log = logging.getLogger(__name__)

MAX_LINE = 256 * 1024 * 1024
MAX_WORKER_RSS_MB = 400  # the worker is replaced after a request that left it bigger


def _rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` in MB (0 where /proc is unavailable)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        pass
    return 0.0


def config_to_json(config: Any) -> dict[str, Any] | None:
    if config is None:
        return None
    data = dataclasses.asdict(config)
    data["per_file_ignores"] = {k: list(v) for k, v in dict(config.per_file_ignores).items()}
    return data


def config_from_json(data: dict[str, Any] | None) -> Any:
    if data is None:
        return None
    from openprogram_analyzers import LintConfig

    fields = {f.name for f in dataclasses.fields(LintConfig)}
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        if key not in fields:
            continue
        if key == "per_file_ignores":
            kwargs[key] = {k: tuple(v) for k, v in value.items()}
        elif isinstance(value, list):
            kwargs[key] = tuple(value)
        else:
            kwargs[key] = value
    return LintConfig(**kwargs)


def handle(request: dict[str, Any]) -> dict[str, Any]:
    from openprogram_analyzers.analysis import analyze_with_model
    from openprogram_analyzers.program import program_model_of

    if request.get("only_model"):
        try:
            model = program_model_of(request["source"])
            return {"id": request.get("id"), "findings": [], "model": _model_json(model)}
        except Exception as exc:
            return {"id": request.get("id"), "error": f"{type(exc).__name__}: {exc}"[:500]}
    config = config_from_json(request.get("config"))
    recorded = request.get("recorded")
    if recorded:
        recorded = {
            k: [[(str(n), int(o)) for n, o in run] for run in runs] for k, runs in recorded.items()
        }
    try:
        deps: dict[str, Any] = {}
        findings, model = analyze_with_model(
            request["source"],
            request["path"],
            config=config,
            recorded_steps=recorded or None,
            helpers_at_call=True,  # a helper module's finding shows at the call reaching it
            depends_on=deps,
        )
        return {
            "id": request.get("id"),
            "findings": [f.to_json() for f in findings],
            "model": _model_json(model),
            "depends_on": sorted(os.path.abspath(p) for p in deps),
        }
    except Exception as exc:
        return {"id": request.get("id"), "error": f"{type(exc).__name__}: {exc}"[:500]}


def _model_json(model: Any) -> dict[str, Any] | None:
    return None if model is None else dict(model.to_json())


def main() -> int:
    from openprogram_analyzers.dataclass_code import load_modules

    load_modules(
        "openprogram_analyzers.analysis",
        "openprogram_analyzers.program",
        "openprogram_analyzers.rules",
    )
    for line in sys.stdin:
        try:
            request = json.loads(line)
        except json.JSONDecodeError as exc:
            response: dict[str, Any] = {"id": None, "error": f"bad request: {exc}"}
        else:
            try:  # acknowledge first: the server then knows a crash was this request's
                sys.stdout.write(json.dumps({"id": request.get("id"), "started": True}) + "\n")
                sys.stdout.flush()
            except BrokenPipeError:
                return 0
            response = handle(request)
        try:
            sys.stdout.write(json.dumps(response) + "\n")
            sys.stdout.flush()
        except BrokenPipeError:  # the server went away
            return 0
    return 0


class WorkerCrashed(RuntimeError):
    """The worker died while analysing a document (e.g. a native parser crash)."""


class FullAnalysisWorker:
    """Client side: one worker subprocess, one request at a time, restarted on failure."""

    def __init__(self) -> None:
        self._proc: asyncio.subprocess.Process | None = None
        self._lock = asyncio.Lock()
        self._next_id = 0
        self._stopped = False

    async def _ensure(self) -> asyncio.subprocess.Process:
        if self._stopped:
            # Starting one now would race the event loop's teardown: a start cancelled
            # before its pipes connect waits forever for the child (CPython 3.11's
            # subprocess transport), and the server would never exit.
            raise OSError("the analysis worker is stopped (the server is shutting down)")
        if self._proc is None or self._proc.returncode is not None:
            self._proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "openprogram_lsp.full_worker",
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                limit=MAX_LINE,
            )
        return self._proc

    async def analyze(
        self, source: str, path: str, config: Any, recorded: Any, *, only_model: bool = False
    ) -> tuple[tuple[Any, ...], ProgramModel | None, tuple[str, ...]]:
        """Findings of ``analyze_source``, the Program model of the same parse (None:
        not analysed) and the helper files the findings depend on (absolute paths),
        computed in the worker (raises on failure). ``only_model``: the model alone (no
        findings)."""
        from openprogram_analyzers import Finding
        from openprogram_analyzers.program import ProgramModel

        async with self._lock:
            self._next_id += 1
            request = {
                "id": self._next_id,
                "source": source,
                "path": path,
                "config": config_to_json(config),
                "recorded": recorded,
                "only_model": only_model,
            }
            payload = (json.dumps(request) + "\n").encode("utf-8", "surrogatepass")
            try:
                proc, ack = await self._send(payload)
                assert proc.stdout is not None
                try:
                    line = await proc.stdout.readline() if ack else b""
                except (OSError, asyncio.LimitOverrunError, ValueError) as exc:
                    self.close()
                    raise WorkerCrashed(f"analysis worker failed: {exc}") from None
            except asyncio.CancelledError:
                # (a closed document's analysis) its ack or answer is still to come: read
                # by the next request, it would pass for that one's; a fresh worker then
                self.close()
                raise
            if not line:
                code = await proc.wait()
                self._proc = None  # the next request starts a new worker
                raise WorkerCrashed(f"analysis worker exited with code {code}")
            response = json.loads(line)
            if _rss_mb(proc.pid) > MAX_WORKER_RSS_MB:
                self.close()  # fragmentation or a huge file: a fresh worker next time
            if "error" in response:
                raise RuntimeError(response["error"])
            model = response.get("model")
            return (
                tuple(Finding.from_json(f) for f in response["findings"]),
                None if model is None else ProgramModel.from_json(model),
                tuple(response.get("depends_on", ())),
            )

    async def _send(self, payload: bytes) -> tuple[asyncio.subprocess.Process, bool]:
        """Send ``payload``; a worker that died before taking it is replaced once."""
        for attempt in (1, 2):
            proc = await self._ensure()
            assert proc.stdin is not None and proc.stdout is not None
            try:
                proc.stdin.write(payload)
                await proc.stdin.drain()
                ack = await proc.stdout.readline()
            except (OSError, asyncio.LimitOverrunError, ValueError):
                ack = b""
            if ack:
                return proc, True
            self.close()  # it died before this request: not this document's fault
            if attempt == 2:
                return proc, False
        raise AssertionError("unreachable")

    def close(self) -> None:
        """Kill the worker; the next request starts a fresh one."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.returncode is None:
            proc.kill()

    def stop(self) -> None:
        """Kill the worker for good (server shutdown): no request starts another."""
        self._stopped = True
        self.close()


if __name__ == "__main__":
    sys.exit(main())
