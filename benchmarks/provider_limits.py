"""What a hostile model server costs the client: peak RSS and wall time, measured, not asserted.

Two cases, each in its own process against a loopback server speaking the OpenAI wire
format (``tests/engine/loopback.py``):

* ``huge-body`` — a 300 MiB reply without Content-Length; prints the client's peak RSS
  (``ru_maxrss``) next to the RSS of the same process before the call (its floor) and
  how the call ended (with the 32 MiB default cap: ``ProviderError ... too large``);
* ``trickle``   — headers at once, then one byte a second, ``Runtime(timeout_s=2,
  max_retries=0)``; prints how long ``exec()`` took to fail (the deadline is 2 s; a
  per-read timeout would wait for ever — the case is cut off after ``--give-up`` s).

Usage::

    .venv/bin/python benchmarks/provider_limits.py [--give-up 30]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import itertools, json, resource, sys, time
sys.path.insert(0, {tests!r})
from loopback import OpenAIServer
from openprogram import Runtime
from openprogram.runtime import RetryPolicy

case = {case!r}
server = OpenAIServer()
if case == "huge-body":
    head, _, tail = json.dumps(server.text_payload("@")).partition("@")
    mib = 1024 * 1024
    chunks = itertools.chain([head.encode()], (b"a" * mib for _ in range(300)), [tail.encode()])
    server.reply_stream(chunks)
    timeout = 120.0
else:
    server.reply_stream(itertools.repeat(b" "), chunk_delay_s=1.0,
                        headers={{"content-length": "100000"}})
    timeout = 2.0
floor = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.perf_counter()
try:
    with Runtime("openai:gpt-test", base_url=server.base_url, timeout_s=timeout,
                 retry=RetryPolicy(max_retries=0)) as rt:
        outcome = "ok: %d chars" % len(rt.exec("hi"))
except Exception as exc:
    outcome = "%s: %s" % (type(exc).__name__, str(exc)[:110])
elapsed = time.perf_counter() - started
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({{"floor_mb": floor / 1024, "peak_mb": peak / 1024,
                  "seconds": elapsed, "outcome": outcome}}))
server.close()
"""


def run_case(case: str, give_up: float) -> dict[str, object]:
    code = CHILD.format(tests=str(ROOT / "tests" / "engine"), case=case)
    try:
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=give_up
        )
    except subprocess.TimeoutExpired:
        return {"outcome": f"still waiting after {give_up:g} s (killed)", "seconds": give_up}
    if out.returncode != 0:
        return {"outcome": f"crashed: {out.stderr.strip().splitlines()[-1:]}"}
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--give-up", type=float, default=30.0)
    ns = parser.parse_args()
    for case in ("huge-body", "trickle"):
        started = time.perf_counter()
        r = run_case(case, ns.give_up)
        rss = (
            f"peak RSS {r['peak_mb']:.0f} MB (floor {r['floor_mb']:.0f} MB)"
            if "peak_mb" in r
            else "peak RSS n/a"
        )
        seconds = float(str(r.get("seconds", time.perf_counter() - started)))
        print(f"{case:10} {seconds:7.2f} s  {rss}  -> {r['outcome']}")


if __name__ == "__main__":
    main()
