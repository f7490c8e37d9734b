"""``openprogram lint ...``: the static analyzer (same as ``openprogram-lint``)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from openprogram.cli.delegate import delegate

NAME = "lint"


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        NAME, help="check Programs statically (same as openprogram-lint)", add_help=False
    )
    parser.add_argument("args", nargs=argparse.REMAINDER)
    parser.set_defaults(handler=lambda a: passthrough(a.args))


def passthrough(argv: Sequence[str]) -> int:
    return delegate("openprogram_analyzers.cli", "main", argv, "openprogram lint")
