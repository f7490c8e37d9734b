"""A step's recorded input is the canonical JSON of its call — ``{"args": [...], "kwargs":
{...}}`` with sorted keys, no spaces, text unescaped — and its input hash is that text's
sha256: a run recorded by one version resumes under the next only while both agree."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from contextlib import closing
from pathlib import Path

from openprogram.durable import start_run

PROGRAM = """
from openprogram import step


def echo(*args, **kwargs):
    return {"n": len(args) + len(kwargs)}


def main() -> int:
    total = 0
    total += step("plain", echo, 5, 1999)["n"]
    total += step("nested", echo, {"z": [1, 2.5, None, True], "a": {"y": "é\\n", "b": -0.0}})["n"]
    total += step("kw", echo, "x", zeta=3, alpha=["ü", {"k": 1}])["n"]
    total += step("none", echo)["n"]
    return total


main.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["main"]
"""

CALLS = {
    "plain": ([5, 1999], {}),
    "nested": ([{"z": [1, 2.5, None, True], "a": {"y": "é\n", "b": -0.0}}], {}),
    "kw": (["x"], {"zeta": 3, "alpha": ["ü", {"k": 1}]}),
    "none": ([], {}),
}


def test_a_steps_input_and_hash_are_the_canonical_json_of_its_call(tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(PROGRAM)
    out = start_run(f"{tmp_path / 'prog.py'}:main", {}, store=tmp_path / "st")
    assert out.status == "completed" and out.result == 6
    with closing(sqlite3.connect(tmp_path / "st" / "openprogram.db")) as db:
        rows = db.execute(
            "SELECT name, input, step_input_hash FROM nodes_all WHERE step_key IS NOT NULL"
        ).fetchall()
    assert sorted(name for name, _, _ in rows) == sorted(CALLS)
    for name, text, digest in rows:
        args, kwargs = CALLS[name]
        canonical = json.dumps(
            {"args": args, "kwargs": kwargs},
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
            allow_nan=False,
        )
        assert text == canonical, name
        assert digest == hashlib.sha256(canonical.encode()).hexdigest(), name
