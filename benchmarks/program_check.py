"""Cost of "checked before it runs", side by side in one run (issue 12).

    .venv/bin/python benchmarks/program_check.py [--rounds 5] [--lines 50000]

(a) Starting a run: ``openprogram run prog.py:ENTRY`` in a fresh process, the same
    1-step Program once as a resumable entry (pre-run check + saved source) and once as a
    plain entry. Cold = first start with an empty check cache; warm = a later start (the
    check is cached by the content hash of the module, its pyproject.toml and the helpers
    it reached). Target: warm resumable <= 1.3x plain.
(b) The full check of a generated 50,000-line Program (resumable functions, helpers,
    Agent classes, menus): ``analyze_source`` with every rule, against a bare
    ``libcst.parse_module`` of the same text, both CPU time in this process. Target <= 1.5x.

Medians over ``--rounds`` interleaved rounds; each round's subprocesses are fresh.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent

PROGRAM = """\
from openprogram import step


def double(n: int) -> int:
    return 2 * n


def resumable_main(n: int = 1) -> dict:
    return {"value": step("double", double, n)}


def plain_main(n: int = 1) -> dict:
    return {"value": step("double", double, n)}


resumable_main.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["resumable_main", "plain_main"]
"""

CHUNK = """
class Writer{i}(Agent):
    method_options = {{"report": {{"resumable": True, "expose": "io"}}}}

    def draft(self, topic: str) -> str:
        return self("Draft " + topic)

    def report(self, topic: str, n: int = 2) -> list:
        parts = [step("outline", outline_{i}, topic)]
        for k in range(n):
            parts.append(step("section", section_{i}, topic, k))
        return parts + [step("verdict", verdict_{i}, topic)]


def verdict_{i}(topic: str) -> str:
    return str(decision.make("Ship " + topic + "?", {{"yes": "ship", "no": "hold"}}))


def outline_{i}(topic: str) -> str:
    words = [w for w in topic.split() if w]
    return " / ".join(sorted(words))


def section_{i}(topic: str, k: int) -> str:
    text = helper_{i}(topic, k)
    return text.upper() if k % 2 else text.lower()


def helper_{i}(topic: str, k: int) -> str:
    total = 0
    for ch in topic:
        total += ord(ch) * (k + 1)
    return f"{{topic}}-{{total}}"

"""


def big_program(lines: int) -> str:
    head = "from openprogram import Agent, decision, step\n\n"
    one = CHUNK.format(i=0).count("\n")
    return head + "".join(CHUNK.format(i=i) for i in range(max(1, lines // one)))


def start(folder: Path, entry: str, cache: Path) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENPROGRAM_", "OPENAI_"))}
    env["OPENPROGRAM_CHECK_CACHE"] = str(cache)
    t0 = time.perf_counter()
    proc = subprocess.run(
        [str(BIN / "openprogram"), "run", f"prog.py:{entry}", "--store", "st", "--json"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{entry} failed: {proc.stderr}")
    return elapsed


def run_starts(rounds: int) -> None:
    plain: list[float] = []
    cold: list[float] = []
    warm: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "prog.py").write_text(PROGRAM, encoding="utf-8")
        start(folder, "plain_main", folder / "c0")  # warm the interpreter's pyc files
        for r in range(rounds):
            cache = folder / f"cache{r}"
            plain.append(start(folder, "plain_main", cache))
            cold.append(start(folder, "resumable_main", cache))
            warm.append(start(folder, "resumable_main", cache))
    p, c, w = (statistics.median(x) for x in (plain, cold, warm))
    print("(a) starting a 1-step run (wall, median of", rounds, "rounds)")
    print(f"    plain entry          {p * 1000:8.0f} ms")
    print(f"    resumable, cold      {c * 1000:8.0f} ms   {c / p:5.2f}x plain")
    print(f"    resumable, warm      {w * 1000:8.0f} ms   {w / p:5.2f}x plain   (target <= 1.3x)")


def run_check(rounds: int, lines: int) -> None:
    import libcst as cst

    from openprogram_analyzers import analyze_source

    source = big_program(lines)
    n_lines = source.count("\n")
    parse: list[float] = []
    check: list[float] = []
    codes: set[str] = set()
    for _ in range(rounds):
        t0 = time.process_time()
        cst.parse_module(source)
        parse.append(time.process_time() - t0)
        t0 = time.process_time()
        found = analyze_source(source, "big.py")
        check.append(time.process_time() - t0)
        codes = {f.code for f in found}
    p, c = statistics.median(parse), statistics.median(check)
    print(f"(b) full check of a {n_lines:,}-line Program (CPU, median of {rounds} rounds)")
    print(f"    libcst.parse_module  {p:8.2f} s")
    print(f"    analyze_source       {c:8.2f} s   {c / p:5.2f}x parse   (target <= 1.5x)")
    print(f"    findings: {sorted(codes) or 'none'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--lines", type=int, default=50_000)
    ap.add_argument("--skip-starts", action="store_true")
    ap.add_argument("--skip-check", action="store_true")
    args = ap.parse_args()
    if not args.skip_starts:
        run_starts(args.rounds)
    if not args.skip_check:
        run_check(max(1, min(args.rounds, 3)), args.lines)


if __name__ == "__main__":
    main()
