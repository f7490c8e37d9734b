"""Fixtures shared by every test folder: a temporary PostgreSQL server.

``pg_cluster`` starts one throwaway cluster per test session from the installed server
binaries (``tests/pgcluster.py``) and stops it at the end; ``pg_dsn`` is a fresh empty
database on it for one test. Only without the server binaries (``.ci/run`` installs them)
are the tests that need PostgreSQL skipped, with that reason. Under pytest-xdist each
worker is a test session of its own, with its own cluster in its own directory (it
listens only on a Unix socket there, so the clusters never meet).
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
