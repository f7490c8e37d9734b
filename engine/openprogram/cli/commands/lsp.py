"""``openprogram lsp ...``: the language server over stdio (same as ``openprogram-lsp``)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from openprogram.cli.delegate import delegate

NAME = "lsp"


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        NAME, help="start the language server on stdio (same as openprogram-lsp)", add_help=False
    )
    parser.add_argument("args", nargs=argparse.REMAINDER)
    parser.set_defaults(handler=lambda a: passthrough(a.args))


def passthrough(argv: Sequence[str]) -> int:
    return delegate("openprogram_lsp.__main__", "main", argv, "openprogram lsp")
