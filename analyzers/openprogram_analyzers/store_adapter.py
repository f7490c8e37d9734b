"""Recorded step identities of the runs an edit can break (for OP209).

Reads through the store's read API (:func:`openprogram.store.runs.read_run_store`,
read-only, SQLite or PostgreSQL). A store without the durable tables (schema v1) has no
recorded runs; a store that is missing, unreadable, corrupt, locked or newer than this
code is a :class:`StoreUnreadable` error (``openprogram-lint`` exits 2): OP209 is never
silently dropped.
"""

from __future__ import annotations

from pathlib import Path


class StoreUnreadable(Exception):
    """The store given to ``--store`` cannot be read (the message says why)."""


def check_store(store_dir: str) -> None:
    """Raise :class:`StoreUnreadable` unless ``store_dir`` holds a readable store."""
    from openprogram.store import store_url
    from openprogram.store.postgres import refused

    error = refused(store_dir)  # never taken as a path: it would show its password
    if error is not None:
        raise StoreUnreadable(str(error))
    if store_url(store_dir) is None:
        db = Path(store_dir) / "openprogram.db"
        if not Path(store_dir).is_dir():
            raise StoreUnreadable(f"--store {store_dir}: no such directory")
        if not db.is_file():
            raise StoreUnreadable(f"--store {store_dir}: no store there ({db.name} not found)")
    _read(store_dir, None)


def _read(store_dir: str, program_path: str | None) -> dict[str, list[list[tuple[str, int]]]]:
    from openprogram.errors import OpenProgramError, StoreError
    from openprogram.store.runs import read_run_store

    try:
        runs = read_run_store(store_dir)
        if runs is None:
            return {}  # no store yet, or a store without durable runs (schema v1)
        with runs:
            return runs.recorded_step_sequences(program_path)
    except OpenProgramError as exc:
        if isinstance(exc, StoreError) and exc.store is not None:  # it names the store first
            raise StoreUnreadable(str(exc)) from None
        from openprogram.store.postgres import redacted_location

        raise StoreUnreadable(f"--store {redacted_location(store_dir)}: {exc}") from None


def recorded_steps(
    store_dir: str, program_path: str | None = None
) -> dict[str, list[list[tuple[str, int]]]]:
    """``{function_qualname: [RecordedRun per run]}``: the top-level steps of the runs an
    edit can break, each with its entry (:class:`openprogram.store.runs.RecordedRun`,
    read by :meth:`~openprogram.store.runs.RunStore.recorded_step_sequences`, the one
    query the language server reads too)."""
    return _read(store_dir, program_path)
