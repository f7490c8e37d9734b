"""Node and session ids: time-ordered, unique across threads and forked processes, and
untouched by a Program's ``random.seed``."""

from __future__ import annotations

import os
import random
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

from openprogram.durable import start_run
from openprogram.store.ids import new_id


def test_ids_are_32_hex_digits_ordered_by_millisecond() -> None:
    first = new_id()
    time.sleep(0.002)
    second = new_id()
    assert len(first) == len(second) == 32
    assert set(first + second) <= set("0123456789abcdef")
    assert first[:12] < second[:12]


def test_a_programs_random_seed_does_not_repeat_ids() -> None:
    random.seed(42)
    a = [new_id() for _ in range(5)]
    random.seed(42)
    b = [new_id() for _ in range(5)]
    assert len(set(a + b)) == 10


def test_a_forked_child_never_repeats_its_parents_ids() -> None:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the ids it makes right after the fork
        os.write(write, "".join(new_id()[12:] for _ in range(100)).encode())
        os._exit(0)
    os.close(write)
    parent = {new_id()[12:] for _ in range(100)}
    os.waitpid(pid, 0)
    with os.fdopen(read) as f:
        text = f.read()
    child = {text[i : i + 20] for i in range(0, len(text), 20)}
    assert len(child) == 100 and not parent & child


def test_two_processes_started_at_once_make_distinct_ids() -> None:
    code = "from openprogram.store.ids import new_id; print(' '.join(new_id() for _ in range(50)))"
    procs = [
        subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    ids = [set(p.communicate(timeout=60)[0].split()) for p in procs]
    assert len(ids[0]) == len(ids[1]) == 50 and not ids[0] & ids[1]


SEEDING_PROGRAM = """
import random

from openprogram import step

random.seed(7)


def roll(i: int) -> int:
    random.seed(7)  # reproducible dice, as a Program may want them
    return random.randint(1, 6)


def main(n: int) -> list[int]:
    return [step("roll", roll, i) for i in range(n)]


main.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["main"]
"""


def test_runs_of_a_program_that_seeds_random_record_distinct_nodes(tmp_path: Path) -> None:
    """A Program's ``random.seed`` (at import and in every step) leaves the
    store's node ids alone: two runs into one store both record every step."""
    (tmp_path / "prog.py").write_text(SEEDING_PROGRAM)
    ref = f"{tmp_path / 'prog.py'}:main"
    outs = [start_run(ref, {"n": 20}, store=tmp_path / "st") for _ in range(2)]
    assert [o.status for o in outs] == ["completed", "completed"]
    assert outs[0].result == outs[1].result and len(set(outs[0].result)) == 1
    with closing(sqlite3.connect(tmp_path / "st" / "openprogram.db")) as db:
        count, distinct = db.execute(
            "SELECT COUNT(*), COUNT(DISTINCT id) FROM nodes_all"
        ).fetchone()
        steps = db.execute("SELECT COUNT(*) FROM nodes_all WHERE name = 'roll'").fetchone()[0]
    assert count == distinct and steps == 40
