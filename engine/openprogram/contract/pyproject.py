"""Where a Program's configuration comes from: the one discovery rule and the one key table.

The configuration of a Program file is the ``[tool.openprogram]`` table of the nearest
``pyproject.toml`` at or above the file's folder **that has such a table** (a
``pyproject.toml`` without one, e.g. a sub-package's ``[project]`` only, is passed over, as
ruff does with ``[tool.ruff]``). The search goes up to the filesystem root. ``openprogram
run``/``submit``/``resume`` (model, ``execution``, the determinism check's ``lint``),
``openprogram-lint`` (``lint``, per file) and the language server (per document) all ask
:func:`find_config` / :func:`nearest_openprogram_table`; nothing else looks for a
``pyproject.toml``.

Unknown keys are refused (:func:`check_keys`, with a "did you mean" suggestion): a typo
such as ``modle = ...`` is an error, never silently ignored.

On Python 3.10 without ``tomli`` no pyproject is read (``TOML`` is None).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, MutableMapping
from pathlib import Path
from types import ModuleType
from typing import Any

from openprogram.errors import ConfigError

__all__ = [
    "EXECUTION_KEYS",
    "KEYS",
    "LINT_KEYS",
    "TOML",
    "check_keys",
    "find_config",
    "nearest_openprogram_table",
    "openprogram_table",
    "unknown_key_message",
]

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

#: ``[tool.openprogram.execution]`` keys.
EXECUTION_KEYS = ("code_change_policy",)
#: ``[tool.openprogram.lint]`` keys (each also accepted with ``_`` for ``-``).
LINT_KEYS = (
    "select",
    "ignore",
    "extend-select",
    "extend-ignore",
    "per-file-ignores",
    "exclude",
    "extend-exclude",
    "force-exclude",
)
#: The one key table: ``[tool.openprogram]`` keys -> the keys of their sub-table (None: a
#: plain value).
KEYS: dict[str, tuple[str, ...] | None] = {
    "model": None,
    "execution": EXECUTION_KEYS,
    "lint": LINT_KEYS,
}


def unknown_key_message(source: object, table: str, key: str, known: Iterable[str]) -> str:
    """``<file>: unknown key 'modle' in [tool.openprogram]; did you mean `model`? (known:
    ...)`` — the one wording of an unknown configuration key."""
    import difflib

    names = list(known)
    close = difflib.get_close_matches(key, names, n=1, cutoff=0.6)
    hint = f"; did you mean `{close[0]}`?" if close else ""
    return f"{source}: unknown key {key!r} in [{table}]{hint} (known: {', '.join(names)})"


def check_keys(path: object, table: dict[str, Any]) -> None:
    """ConfigError naming ``path`` and the key for a key of ``[tool.openprogram]`` (or of
    its ``execution`` / ``lint`` table) that :data:`KEYS` does not know."""
    for key, value in table.items():
        if key not in KEYS:
            raise ConfigError(unknown_key_message(path, "tool.openprogram", key, KEYS))
        sub = KEYS[key]
        if sub is None or not isinstance(value, dict):
            continue  # a wrong type is reported by the reader of that key
        for inner in value:
            if inner not in sub and inner.replace("_", "-") not in sub:
                raise ConfigError(unknown_key_message(path, f"tool.openprogram.{key}", inner, sub))


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


def find_config(
    start: str | os.PathLike[str], memo: MutableMapping[str, Path | None] | None = None
) -> Path | None:
    """The ``pyproject.toml`` whose ``[tool.openprogram]`` applies to ``start`` (a Program
    file or a folder): the nearest at or above it that has that table; None when there is
    none (or no TOML parser). ``memo`` (folder -> answer) spares a caller asking for many
    files (the linter, the language server) reading the same files again.

    A ``pyproject.toml`` that cannot be read or parsed on the way is a ConfigError: whether
    it holds the table cannot be known."""
    if TOML is None:
        return None
    here = os.path.realpath(start)
    if not os.path.isdir(here):
        here = os.path.dirname(here)
    walked: list[str] = []
    found: Path | None = None
    while True:
        if memo is not None and here in memo:
            found = memo[here]
            break
        walked.append(here)
        candidate = os.path.join(here, "pyproject.toml")
        if os.path.isfile(candidate) and openprogram_table(Path(candidate)) is not None:
            found = Path(candidate)
            break
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    if memo is not None:
        for directory in walked:
            memo[directory] = found
    return found


def nearest_openprogram_table(
    start: str | os.PathLike[str],
) -> tuple[Path, dict[str, Any]] | None:
    """:func:`find_config` of ``start`` and its ``[tool.openprogram]`` table, its keys
    checked (:func:`check_keys`); None when no configuration applies."""
    path = find_config(start)
    if path is None:
        return None
    table = openprogram_table(path)
    assert table is not None
    check_keys(path, table)
    return path, table
