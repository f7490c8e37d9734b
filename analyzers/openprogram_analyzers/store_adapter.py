"""Read recorded step identities of paused/running runs from a store (for OP209).

Reads ``<store>/openprogram.db`` with the stdlib ``sqlite3`` module in read-only mode and
tolerates a store without the durable tables (returns nothing).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from openprogram.contract.runs import Policy, RunStatus


def recorded_steps(
    store_dir: str, program_path: str | None = None
) -> dict[str, list[list[tuple[str, int]]]]:
    """``{function_qualname: [[(name, occurrence), ...] per run]}`` of top-level steps of
    the runs an edit can break: paused/running runs that resume the latest source (each
    run's recorded policy is ``use_latest``, or it has no saved source)."""
    db = Path(store_dir) / "openprogram.db"
    if not db.is_file():
        return {}
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=2.0)
    except sqlite3.Error:
        return {}
    try:
        rows = conn.execute(
            "SELECT r.id, r.function_qualname, r.program_path, s.name, s.occurrence "
            "FROM runs r JOIN run_steps s ON s.run_id = r.id "
            "WHERE r.status IN (?, ?) AND s.scope = '' AND s.kind != 'branch' "
            # a keep_original run with a saved source resumes that source: edits cannot break it
            "AND NOT (r.policy = ? AND r.source_snapshot IS NOT NULL) "
            "ORDER BY r.id, s.position",
            (RunStatus.PAUSED.value, RunStatus.RUNNING.value, Policy.KEEP_ORIGINAL.value),
        ).fetchall()
    except sqlite3.Error:
        return {}
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
