"""The saved source of a ``keep_original`` run, restored: compiled once per process for
every run of the Program (a worker), each run in a namespace of its own."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from openprogram.durable.snapshot import capture, restore

SOURCE = """
import math

CALLS = []


def helper(x: int) -> int:
    CALLS.append(x)
    return math.floor(x / 2)


def main(x: int) -> int:
    return helper(x) + 1
"""


def _module(tmp_path: Path):  # type: ignore[no-untyped-def]
    path = tmp_path / "saved_prog.py"
    path.write_text(SOURCE, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("saved_prog", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["saved_prog"] = module
    spec.loader.exec_module(module)
    return module


def test_two_runs_restore_one_compiled_source_into_namespaces_of_their_own(
    tmp_path: Path,
) -> None:
    module = _module(tmp_path)
    try:
        snapshot = capture(module.main, module, "main", ["helper"])
        first = restore(snapshot, module, None)
        second = restore(snapshot, module, None)
        assert first(5) == second(5) == 3
        # one compile serves both (a worker's runs of one Program) ...
        assert first.__code__ is second.__code__
        # ... each run with its own globals: rebinding a name in one is not seen by the other
        assert first.__globals__ is not second.__globals__
        first.__globals__["helper"] = lambda x: 100
        assert (first(5), second(5)) == (101, 3)
        # line numbers stay those of the file the source was saved from
        assert (
            first.__code__.co_firstlineno
            == SOURCE.splitlines().index("def main(x: int) -> int:") + 1
        )
    finally:
        sys.modules.pop("saved_prog", None)
