"""Fixtures shared by every test folder: a temporary PostgreSQL server; and the session's
start: the project's bytecode compiled once, the long tests first.

``pg_cluster`` starts one throwaway cluster per test session from the installed server
binaries (``tests/pgcluster.py``) and stops it at the end; ``pg_dsn`` is a fresh empty
database on it for one test; ``st`` runs a test once per backend with its ``--store``. Only without the server binaries (``.ci/run`` installs them)
are the tests that need PostgreSQL skipped, with that reason. Under pytest-xdist each
worker is a test session of its own, with its own cluster in its own directory (it
listens only on a Unix socket there, so the clusters never meet).
"""

from __future__ import annotations

import compileall
import os
import py_compile
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from pgcluster import BACKENDS, Cluster, find_bindir, store_for

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ["engine/openprogram", "analyzers/openprogram_analyzers", "lsp/openprogram_lsp"]
STORE_DATACLASS_CODE = """
from openprogram_analyzers.dataclass_code import load_modules

load_modules("openprogram_analyzers.analysis", "openprogram_analyzers.rules")
load_modules("openprogram_lsp.server", attrs=True)
"""


def pytest_configure(config: pytest.Config) -> None:
    """Once per test session (not in each xdist worker): compile the project's packages.

    The tests start the CLI, the language server and the linter in many subprocesses.
    Where bytecode writing is off (``PYTHONDONTWRITEBYTECODE``, set on the shared test
    machine), each one compiled every project module it imports again (about a quarter
    of the CPU of a CLI start), and each linter libcst's dataclass methods (about 40 % of
    a linter's). The ``.pyc`` files written here check their source's hash (PEP 552), so
    an edited module never runs from a stale one; the programs the tests write are still
    compiled on every load."""
    if hasattr(config, "workerinput"):
        return
    mode = py_compile.PycInvalidationMode.CHECKED_HASH
    for package in PACKAGES:
        compileall.compile_dir(ROOT / package, quiet=2, invalidation_mode=mode)
    # The stored dataclass code of the linter and the language server (``dataclass_code.py``,
    # kept beside the bytecode) is written only where bytecode writing is on: write it
    # once, as a linter run and a server start would.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-c", STORE_DATACLASS_CODE], env=env, check=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests marked ``slow`` first (in their order), so that pytest-xdist never ends on
    one long test while the other worker has nothing left to do."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    bindir = find_bindir()
    if bindir is None:
        pytest.skip(
            "PostgreSQL server binaries not installed: no initdb/pg_ctl in "
            "/usr/lib/postgresql/*/bin, $OPENPROGRAM_PG_BINDIR or PATH (.ci/run installs "
            "the Debian package 'postgresql')"
        )
    import psycopg  # noqa: F401  (a dev dependency: a missing one is an error, not a skip)

    cluster = Cluster(bindir).start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture()
def pg_dsn(pg_cluster: Cluster) -> str:
    return pg_cluster.create_database()


@pytest.fixture(params=BACKENDS)
def st(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The ``--store`` of a test run once per backend: an SQLite directory under
    ``tmp_path``, or the URL of a fresh PostgreSQL database."""
    return store_for(request, tmp_path)
