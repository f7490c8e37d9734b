"""Hand a subcommand over to another tool's ``main`` (imported only when used)."""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Sequence


def delegate(module: str, func: str, argv: Sequence[str], what: str) -> int:
    """Call ``module.func(argv)``; print "not yet available" (exit 1) if it is missing."""
    try:
        target = getattr(importlib.import_module(module), func)
    except (ImportError, AttributeError):
        print(f"openprogram: error: {what} is not yet available in this version", file=sys.stderr)
        return 1
    try:
        takes_argv = bool(inspect.signature(target).parameters)
    except (TypeError, ValueError):
        takes_argv = True
    saved = sys.argv
    try:
        if takes_argv:
            result = target(list(argv))
        else:  # a main() that reads sys.argv itself
            sys.argv = [what.replace(" ", "-"), *argv]
            result = target()
    except SystemExit as exc:
        result = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.argv = saved
    return int(result or 0)
