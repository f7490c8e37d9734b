"""Read recorded step identities of paused/running runs from a store (for OP209).

Reads ``<store>/openprogram.db`` with the stdlib ``sqlite3`` module in read-only mode. A
store without the durable tables (schema v1) has no recorded runs; a store that is missing,
unreadable, corrupt, locked or newer than this code is a :class:`StoreUnreadable` error
(``openprogram-lint`` exits 2): OP209 is never silently dropped.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from openprogram.contract.runs import Policy, RunStatus


class StoreUnreadable(Exception):
    """The store given to ``--store`` cannot be read (the message says why)."""


def check_store(store_dir: str) -> None:
    """Raise :class:`StoreUnreadable` unless ``store_dir`` holds a readable store."""
    db = Path(store_dir) / "openprogram.db"
    if not Path(store_dir).is_dir():
        raise StoreUnreadable(f"--store {store_dir}: no such directory")
    if not db.is_file():
        raise StoreUnreadable(f"--store {store_dir}: no store there ({db.name} not found)")
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=2.0)
        try:
            tables = {
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            }
            version = 0
            if "schema_version" in tables:
                row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
                version = int(row[0] or 0)
            if {"runs", "run_steps"} <= tables:
                conn.execute("SELECT 1 FROM runs r JOIN run_steps s ON s.run_id = r.id LIMIT 1")
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise StoreUnreadable(f"--store {store_dir}: cannot read {db}: {exc}") from None
    from openprogram.store.migrations import latest_version

    if version > latest_version():
        raise StoreUnreadable(
            f"--store {store_dir}: the store's schema v{version} is newer than this "
            f"openprogram-lint knows (v{latest_version()}): upgrade openprogram"
        )


def recorded_steps(
    store_dir: str, program_path: str | None = None
) -> dict[str, list[list[tuple[str, int]]]]:
    """``{function_qualname: [[(name, occurrence), ...] per run]}`` of top-level steps of
    the runs an edit can break: paused/running runs that resume the latest source (each
    run's recorded policy is ``use_latest``, or it has no saved source)."""
    db = Path(store_dir) / "openprogram.db"
    if not db.is_file():
        return {}  # no store yet (``check_store`` makes that an error for ``--store``)
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=2.0)
    except sqlite3.Error as exc:
        raise StoreUnreadable(f"--store {store_dir}: cannot read {db}: {exc}") from None
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not {"runs", "run_steps"} <= tables:
            return {}  # a store without durable runs (schema v1)
        rows = conn.execute(
            "SELECT r.id, r.function_qualname, r.program_path, s.name, s.occurrence "
            "FROM runs r JOIN run_steps s ON s.run_id = r.id "
            "WHERE r.status IN (?, ?) AND s.scope = '' AND s.kind != 'branch' "
            # a keep_original run with a saved source resumes that source: edits cannot break it
            "AND NOT (r.policy = ? AND r.source_snapshot IS NOT NULL) "
            "ORDER BY r.id, s.position",
            (RunStatus.PAUSED.value, RunStatus.RUNNING.value, Policy.KEEP_ORIGINAL.value),
        ).fetchall()
    except sqlite3.Error as exc:
        raise StoreUnreadable(f"--store {store_dir}: cannot read {db}: {exc}") from None
    finally:
        conn.close()
    target = str(Path(program_path).resolve()) if program_path else None
    runs: dict[tuple[str, str], list[tuple[str, int]]] = {}
    for run_id, qualname, path, name, occurrence in rows:
        if target is not None and path and str(Path(path).resolve()) != target:
            continue
        runs.setdefault((str(qualname), str(run_id)), []).append((str(name), int(occurrence)))
    out: dict[str, list[list[tuple[str, int]]]] = {}
    for (qualname, _run), steps in runs.items():
        out.setdefault(qualname, []).append(steps)
    return out
