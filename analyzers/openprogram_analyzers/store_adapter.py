"""Recorded step identities of the runs an edit can break (for OP209).

Reads through the store's read API (:func:`openprogram.store.runs.read_run_store`,
read-only, SQLite or PostgreSQL); a missing store or one without run tables yields
nothing.
"""

from __future__ import annotations


def recorded_steps(
    store_dir: str, program_path: str | None = None
) -> dict[str, list[list[tuple[str, int]]]]:
    """``{function_qualname: [[(name, occurrence), ...] per run]}`` of top-level steps of
    the runs an edit can break: paused/running runs that resume the latest source (each
    run's recorded policy is ``use_latest``, or it has no saved source)."""
    from openprogram.errors import OpenProgramError
    from openprogram.store.runs import read_run_store

    try:
        runs = read_run_store(store_dir)
        if runs is None:
            return {}
        with runs:
            return runs.recorded_step_sequences(program_path)
    except OpenProgramError:
        return {}
