"""A Program edited while the process that loaded it keeps running (a worker, a Python
session resuming runs with ``use_latest``) is loaded again with its new text, whatever
Python's bytecode cache holds for it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from openprogram.programs.loader import load_entry

PROGRAM = 'def main() -> str:\n    return "{}"\n\n\nPROGRAM_ENTRIES = ["main"]\n'
SECOND_NS = 1_790_000_000 * 10**9  # a whole second: both versions are written within it


def test_an_edit_of_the_same_size_in_the_same_second_runs_the_new_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Python's default: compiled modules are cached (a .pyc records the source's size and
    # its modification time in whole seconds only)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    path = tmp_path / "prog.py"

    def write(version: str, offset_ns: int) -> None:
        path.write_text(PROGRAM.format(version), encoding="utf-8")
        os.utime(path, ns=(SECOND_NS + offset_ns, SECOND_NS + offset_ns))

    write("v1", 1_000_000)
    assert load_entry(f"{path}:main").target() == "v1"
    write("v2", 2_000_000)  # the same size, 1 ms later
    assert load_entry(f"{path}:main").target() == "v2"
