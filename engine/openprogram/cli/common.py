"""Helpers shared by command modules: errors, ``--store``, opening the store read-only."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from openprogram.store import SessionStore, resolve_root, store_db_path, store_url


class CliError(Exception):
    """A one-line error for stderr with the exit code to return."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def error(message: str) -> None:
    """Print ``openprogram: error: <message>`` as one line on stderr."""
    one_line = " ".join(str(message).split())
    print(f"openprogram: error: {one_line}", file=sys.stderr)


def add_store_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--store DIR|URL`` (default ``$OPENPROGRAM_STORE`` or ``./.openprogram``)."""
    parser.add_argument(
        "--store",
        metavar="DIR|URL",
        default=None,
        help="store root directory or postgresql:// URL "
        "(default: $OPENPROGRAM_STORE or ./.openprogram)",
    )


def open_existing_store(args: Any) -> SessionStore | None:
    """Open the store named by ``args.store`` if it exists (``None`` when there is none).

    Reading commands never create a store; a store path that is a file, or a database
    that cannot be read, raises ``StoreError``.
    """
    if store_url(getattr(args, "store", None)) is not None:
        return SessionStore(getattr(args, "store", None), create=False)
    root = resolve_root(getattr(args, "store", None))
    if root.exists() and not root.is_dir():
        # Let the store produce its one-line message.
        return SessionStore(root, create=False)
    if not store_db_path(root).exists():
        return None
    return SessionStore(root, create=False)
