"""Pre-run determinism check: the analyzer's OP2xx rules, run before the first step.

The engine imports ``openprogram_analyzers.determinism`` lazily so the static check
(``openprogram-lint``) and this runtime check are the same code with the same codes.
"""

from __future__ import annotations

import os
from typing import Any

from openprogram.durable.errors import DeterminismError


def display_path(path: str) -> str:
    """``path`` relative to the working directory when it is below it (as lint prints)."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # pragma: no cover - other drive on Windows
        return path
    return path if rel.startswith("..") else rel


def check_resumable(source: str, path: str, qualname: str) -> None:
    """Raise :class:`DeterminismError` listing every error finding for ``qualname``."""
    import importlib

    try:
        module = importlib.import_module("openprogram_analyzers.determinism")
    except ModuleNotFoundError as exc:
        if exc.name and "openprogram_analyzers" in exc.name:
            raise  # not installed: the caller decides
        raise DeterminismError(f"the determinism checker cannot be imported: {exc}") from None
    try:
        findings = module.check_resumable(source, path, qualname)
    except Exception as exc:
        raise DeterminismError(
            f"the determinism check of {qualname} failed internally: {type(exc).__name__}: {exc}"
        ) from None
    errors = [f for f in findings if getattr(f, "severity", "error") == "error"]
    if errors:
        import dataclasses

        from openprogram_analyzers.formats import text_lines

        def shown(f: Any) -> Any:  # paths as lint prints them (relative to the cwd)
            related = tuple(dataclasses.replace(r, path=display_path(r.path)) for r in f.related)
            return dataclasses.replace(f, path=display_path(f.path), related=related)

        lines = [line for f in errors for line in text_lines(shown(f))]
        raise DeterminismError(
            f"{qualname} cannot run as a resumable function:\n" + "\n".join(lines)
        )
