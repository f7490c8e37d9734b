"""Lint time and memory on pathological and very large files, beside the parse floor (issue 16.7).

    .venv/bin/python benchmarks/lint_scaling.py [--quick] [--runs N]

Cases: a 4,000-term and an 8,000-term sum, 2,000 nested parentheses, 16,000 lines of
``step(...)`` calls, a 100,000-line file. For each, ``openprogram-lint --no-cache`` (a
real subprocess: wall time, peak RSS, what it reported) is printed beside the floor,
``libcst.parse_module`` alone in a subprocess (capped at ``--cap`` seconds: libcst is
quadratic in operator chains and crashes on deep nesting, which is why the analyzer
refuses such files with an OP001 finding before libcst sees them). Medians of ``--runs``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
HEADER = "from openprogram import step\n\n\n"


def cases(quick: bool) -> dict[str, str]:
    steps = 4_000 if quick else 16_000
    big = 20_000 if quick else 100_000
    return {
        "sum of 4,000 terms": HEADER + "x = " + " + ".join(f"a{i}" for i in range(4000)) + "\n",
        "sum of 8,000 terms": HEADER + "x = " + " + ".join(f"a{i}" for i in range(8000)) + "\n",
        "2,000 nested parentheses": HEADER + "x = " + "(" * 2000 + "1" + ")" * 2000 + "\n",
        f"{steps:,} lines of step(...)": HEADER
        + "def main():\n"
        + "".join(f"    step('s{i}', str, {i})\n" for i in range(steps)),
        f"{big:,}-line file": HEADER
        + "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(big // 4)),
    }


def measure(cmd: list[str], cap: float) -> tuple[float, float | None, str]:
    """(seconds, peak RSS MiB of the child, outcome) of one run."""
    t = time.perf_counter()
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out, err = proc.communicate(timeout=cap)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return cap, None, f"> {cap:g} s (killed)"
    elapsed = time.perf_counter() - t
    if proc.returncode < 0:
        return elapsed, None, f"crashed (signal {-proc.returncode})"
    rss = None
    outcome = ""
    for line in err.splitlines():
        if line.startswith("RSS "):
            rss = float(line.split()[1])
    try:
        findings = json.loads(out)
        outcome = ", ".join(sorted({f["code"] + " " + f["message"][:40] for f in findings}))
    except ValueError:
        outcome = out.strip()[:60]
    return elapsed, rss, outcome or "no findings"


RSS_WRAPPER = (
    "import resource, runpy, sys\n"
    "sys.argv = sys.argv[1:]\n"
    "try:\n"
    "    runpy.run_module(sys.argv[0], run_name='__main__')\n"
    "except SystemExit:\n"
    "    pass\n"
    "finally:\n"
    "    r = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,"
    " resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    "    print(f'RSS {r / 1024:.0f}', file=sys.stderr)\n"
)
PARSE = "import libcst, sys\nlibcst.parse_module(open(sys.argv[1], encoding='utf-8').read())\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cap", type=float, default=120.0, help="seconds before a run is killed")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, source in cases(args.quick).items():
            path = Path(tmp) / "case.py"
            path.write_text(source)
            lint_cmd = [
                sys.executable,
                "-c",
                RSS_WRAPPER,
                "openprogram_analyzers.cli",
                "--no-cache",
                "--format",
                "json",
                str(path),
            ]
            parse_cmd = [sys.executable, "-c", PARSE, str(path)]
            lint_runs = [measure(lint_cmd, args.cap) for _ in range(args.runs)]
            parse_runs = [measure(parse_cmd, args.cap) for _ in range(args.runs)]
            lint_t = statistics.median(r[0] for r in lint_runs)
            parse_t = statistics.median(r[0] for r in parse_runs)
            rss = lint_runs[-1][1]
            rows.append((name, lint_t, rss, lint_runs[-1][2], parse_t, parse_runs[-1][2]))
            print(f"... {name}: lint {lint_t:.2f} s, parse {parse_t:.2f} s", file=sys.stderr)
    print(f"{'case':<28} {'lint s':>8} {'RSS MiB':>8} {'parse s':>8} {'ratio':>6}  lint reported")
    for name, lint_t, rss, outcome, parse_t, parse_outcome in rows:
        floor = parse_t if parse_outcome == "no findings" else None
        ratio = f"{lint_t / floor:.2f}" if floor else "-"
        parse_s = f"{parse_t:.2f}" if floor else parse_outcome
        rss_s = f"{rss:.0f}" if rss is not None else "-"
        print(f"{name:<28} {lint_t:>8.2f} {rss_s:>8} {parse_s:>8} {ratio:>6}  {outcome}")


if __name__ == "__main__":
    main()
