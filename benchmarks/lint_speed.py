"""Lint speed, side by side in one run (issue 6).

    .venv/bin/python benchmarks/lint_speed.py [--quick]

(a) the standard library of this interpreter, (b) 300 generated Program files that all
need full analysis. Compared: ``openprogram-lint`` cold and warm (cache), ``ruff check
--no-cache --select E,F``, ``fixit lint`` (if installed), and a bare libcst
``parse_module`` loop on 2 processes with and without ``PositionProvider``. Also the wall
time of ``openprogram-lint`` on one small file. Prints a table.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

BIN = Path(sys.executable).parent

PROGRAM = """\
import json
from openprogram import Agent, decision, llm, step


def fetch_{i}(url: str) -> str:
    return json.dumps({{"url": url, "n": {i}}})


def summarize_{i}(text: str) -> str:
    return llm("Summarize: " + text)


class Reporter{i}(Agent):
    method_options = {{
        "report": {{"resumable": True, "expose": "io", "render_range": {{"callers": 0, "subcalls": -1}}}},
        "pick": {{"tool": True, "cache": True, "timeout": 5.0, "input": {{"kind": {{"options": ["a", "b"]}}}}}},
    }}

    def report(self, url: str) -> str:
        page = step("fetch", fetch_{i}, url)
        text = step("summarize", summarize_{i}, page)
        return step("write", str.upper, text)

    def pick(self, kind: str) -> object:
        return decision.make("Pick", {{"done": ("Finish", {{"tags": [str], "n": int}}), "again": "AGAIN"}})


PROGRAM_ENTRIES = ["fetch_{i}", "summarize_{i}"]
"""


def timed(cmd: list[str], cwd: Path) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - t


def _parse(paths: list[str], positions: bool) -> int:
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    n = 0
    for p in paths:
        try:
            m = cst.parse_module(Path(p).read_text(encoding="utf-8"))
            if positions:
                MetadataWrapper(m, unsafe_skip_copy=True).resolve(PositionProvider)
            n += 1
        except Exception:
            pass
    return n


def parse_floor(files: list[str], positions: bool) -> float:
    t = time.perf_counter()
    chunks = [files[i::16] for i in range(16)]
    with ProcessPoolExecutor(max_workers=2) as pool:
        list(pool.map(_parse, chunks, [positions] * len(chunks)))
    return time.perf_counter() - t


def measure(
    label: str, target: Path, files: list[str], work: Path, quick: bool
) -> list[tuple[str, str, float | None]]:
    rows: list[tuple[str, str, float | None]] = []
    cache = work / ".openprogram-lint-cache"
    shutil.rmtree(cache, ignore_errors=True)
    lint = [str(BIN / "openprogram-lint"), str(target)]
    rows.append((label, "openprogram-lint (cold, --no-cache)", timed([*lint, "--no-cache"], work)))
    rows.append((label, "openprogram-lint (cold, filling cache)", timed(lint, work)))
    rows.append((label, "openprogram-lint (warm, cached)", timed(lint, work)))
    ruff = shutil.which("ruff", path=str(BIN)) or shutil.which("ruff")
    rows.append(
        (
            label,
            "ruff check --no-cache --select E,F",
            timed(
                [ruff, "check", "--no-cache", "--select", "E,F", "--exit-zero", str(target)], work
            )
            if ruff
            else None,
        )
    )
    fixit = shutil.which("fixit", path=str(BIN)) or shutil.which("fixit")
    rows.append((label, "fixit lint", timed([fixit, "lint", str(target)], work) if fixit else None))
    if not quick:
        rows.append((label, "libcst parse_module, 2 procs", parse_floor(files, False)))
        rows.append((label, "libcst parse + PositionProvider, 2 procs", parse_floor(files, True)))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="skip the bare libcst loops")
    args = ap.parse_args()
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        progs = work / "programs"
        progs.mkdir()
        for i in range(300):
            (progs / f"program_{i:03}.py").write_text(PROGRAM.format(i=i))
        std_files = [str(p) for p in stdlib.rglob("*.py") if "site-packages" not in p.parts]
        prog_files = sorted(str(p) for p in progs.glob("*.py"))
        rows = measure(f"(a) stdlib, {len(std_files)} files", stdlib, std_files, work, args.quick)
        rows += measure("(b) 300 generated Programs", progs, prog_files, work, args.quick)
        small = work / "small.py"
        small.write_text(PROGRAM.format(i=0))
        rows.append(
            (
                "one small file",
                "openprogram-lint --no-cache",
                timed([str(BIN / "openprogram-lint"), "--no-cache", str(small)], work),
            )
        )
    width = max(len(r[1]) for r in rows)
    print(f"{'corpus':34} {'command':{width}}  wall s")
    for corpus, cmd, secs in rows:
        print(f"{corpus:34} {cmd:{width}}  {'n/a' if secs is None else f'{secs:.2f}'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
