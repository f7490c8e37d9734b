"""The ``[tool.openprogram]`` table of the nearest ``pyproject.toml`` (stdlib only).

Read by the runtime (``model``) and by durable runs (``execution.code_change_policy``).
On Python 3.10 without ``tomli`` no pyproject is read (``TOML`` is None).
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from openprogram.errors import ConfigError

__all__ = ["TOML", "nearest_openprogram_table", "openprogram_table"]

TOML: ModuleType | None
if sys.version_info >= (3, 11):
    import tomllib

    TOML = tomllib
else:  # pragma: no cover - depends on the interpreter
    try:
        import tomli

        TOML = tomli
    except ModuleNotFoundError:
        TOML = None


def openprogram_table(path: Path) -> dict[str, Any] | None:
    """``[tool.openprogram]`` of the pyproject file ``path`` (None when it has none)."""
    if TOML is None:
        return None
    try:
        data = TOML.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    except (ValueError, UnicodeDecodeError) as exc:  # TOMLDecodeError is a ValueError
        raise ConfigError(f"{path}: invalid TOML ({exc})") from None
    tool = data.get("tool")
    table = tool.get("openprogram") if isinstance(tool, dict) else None
    return table if isinstance(table, dict) else None


def nearest_openprogram_table(start: Path) -> tuple[Path, dict[str, Any]] | None:
    """The nearest ``pyproject.toml`` at or above ``start`` with a ``[tool.openprogram]``
    table, and that table (``None`` when there is none, or no TOML parser)."""
    if TOML is None:
        return None
    start = start.resolve()
    for directory in (start, *start.parents):
        path = directory / "pyproject.toml"
        if path.is_file():
            table = openprogram_table(path)
            if table is not None:
                return path, table
    return None
