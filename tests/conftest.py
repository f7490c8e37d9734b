"""Fixtures shared by every test folder: a temporary PostgreSQL server.

``pg_cluster`` starts one throwaway cluster per test session from the installed server
binaries (``tests/pgcluster.py``) and stops it at the end; ``pg_dsn`` is a fresh empty
database on it for one test. Without the binaries (``.ci/run`` installs them) the tests
that need PostgreSQL are skipped with the reason.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from pgcluster import Cluster, find_bindir


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    bindir = find_bindir()
    if bindir is None:
        pytest.skip("PostgreSQL server binaries not installed (.ci/run installs them)")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("psycopg is not installed (pip install -e '.[dev]')")
    cluster = Cluster(bindir).start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture()
def pg_dsn(pg_cluster: Cluster) -> str:
    return pg_cluster.create_database()
