"""Helpers shared by command modules: errors, ``--store``, opening the store read-only."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from openprogram.cli.exits import CliError, error_line
from openprogram.store import SessionStore, resolve_root, store_db_path, store_url

__all__ = [
    "CliError",
    "add_store_argument",
    "cannot_write",
    "error",
    "no_store_note",
    "open_existing_store",
    "queue_name",
    "resolve_run_arg",
]


def error(message: object) -> None:
    """Print ``openprogram: error: <message>`` on stderr (:func:`~openprogram.cli.exits.error_line`)."""
    print(error_line(message), file=sys.stderr)


def cannot_write(path: object, exc: OSError) -> CliError:
    """The usage error of an output file (``-o``, ``--cassette``) that cannot be written."""
    return CliError(f"cannot write {path}: {exc.strerror or exc}")


def add_store_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--store DIR|URL`` (default ``$OPENPROGRAM_STORE`` or ``./.openprogram``)."""
    parser.add_argument(
        "--store",
        metavar="DIR|URL",
        default=None,
        help="store root directory or postgresql:// URL "
        "(default: $OPENPROGRAM_STORE or ./.openprogram)",
    )


def queue_name(text: str) -> str:
    """The type of every command's ``--queue``: a usage error for a name that
    :func:`openprogram.durable.worker.check_queue` refuses (empty, blank, or with leading
    or trailing whitespace)."""
    from openprogram.durable.worker import check_queue
    from openprogram.errors import ConfigError

    try:
        return check_queue(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def open_existing_store(args: Any) -> SessionStore | None:
    """Open the store named by ``args.store`` if it exists (``None`` when there is none).

    Reading commands never create, write or migrate a store (it is opened read-only); a
    store path that is a file, or a database that cannot be read, raises ``StoreError``.
    """
    if store_url(getattr(args, "store", None)) is not None:
        store = SessionStore(getattr(args, "store", None), create=False, read_only=True)
        try:
            empty = store.backend.schema_version() == 0  # no store in this database yet
        except BaseException:
            store.close()
            raise
        if empty:
            store.close()
            return None
        return store
    root = resolve_root(getattr(args, "store", None))
    if root.exists() and not root.is_dir():
        # Let the store produce its one-line message.
        return SessionStore(root, create=False, read_only=True)
    db = store_db_path(root)
    if not db.exists():
        return None
    from openprogram.store.sqlite import holds_no_store

    if holds_no_store(db):  # an empty file: no store yet, and it stays as it is
        return None
    return SessionStore(root, create=False, read_only=True)


def resolve_run_arg(text: str, store: str | None) -> str:
    """The run id that a ``RUN_ID`` argument names in ``store`` (``--store``, else
    ``$OPENPROGRAM_STORE``, else ``./.openprogram``): an id, or a unique prefix of one
    (:func:`openprogram.durable.queries.resolve_run_id`, which says what it raises)."""
    from openprogram.durable.queries import resolve_run_id

    return resolve_run_id(store_url(store) or store_db_path(store), text)


def no_store_note(store: str | None) -> str:
    """`` (no store at /path)`` when the store directory ``store`` names (``--store``, else
    ``$OPENPROGRAM_STORE``, else ``./.openprogram``) holds no store, for an empty listing:
    a mistyped ``--store`` is not taken for a store without runs. ``""`` otherwise."""
    if store_url(store) is not None:
        return ""
    root = resolve_root(store)
    return "" if store_db_path(root).exists() else f" (no store at {root})"
