"""Node and session ids: time-ordered, unique across threads and forked processes, and
untouched by a Program's ``random.seed``."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time

from openprogram.store.ids import new_id


def test_ids_are_32_hex_digits_ordered_by_millisecond() -> None:
    first = new_id()
    time.sleep(0.002)
    second = new_id()
    assert len(first) == len(second) == 32
    assert int(first, 16) >= 0 and first == first.lower()
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
