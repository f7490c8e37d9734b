"""No internal error on real code: the standard library and site-packages.

By default every fourth file (a fixed sample, ~1 min on two cores); set
``OPENPROGRAM_REAL_CODE=all`` to analyze every file (~4 min)."""

from __future__ import annotations

import os
import sysconfig
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest


def _lint(paths: list[str]) -> list[str]:
    """Analyze every file with the pre-filter off; return internal errors."""
    from openprogram_analyzers.analysis import analyze_source

    errors = []
    for p in paths:
        try:
            source = Path(p).read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        try:
            for f in analyze_source(source, p, prefilter=False):
                assert f.line >= 1 and f.column >= 1, f
        except Exception as exc:  # the test is about exactly this
            errors.append(f"{p}: {type(exc).__name__}: {exc}")
    return errors


def _files() -> list[str]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    site = Path(sysconfig.get_paths()["purelib"])
    std = sorted(
        str(p) for p in stdlib.rglob("*.py") if "site-packages" not in p.parts and p.is_file()
    )
    site_files = sorted(str(p) for p in site.rglob("*.py") if p.is_file())
    files = std + site_files
    return files if os.environ.get("OPENPROGRAM_REAL_CODE") == "all" else files[::4]


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_stdlib_and_site_packages_without_internal_errors() -> None:
    files = _files()
    assert len(files) > 500
    chunks = [files[i::32] for i in range(32)]
    with ProcessPoolExecutor(max_workers=2) as pool:
        errors = [e for result in pool.map(_lint, chunks) for e in result]
    assert errors == []
