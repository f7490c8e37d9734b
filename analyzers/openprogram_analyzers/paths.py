"""Path helpers shared by the configuration and the CLI's warm path (``os`` only)."""

from __future__ import annotations

import os


def find_pyproject_str(start: str | os.PathLike[str]) -> str | None:
    """The nearest ``pyproject.toml`` at or above ``start`` (plain strings, no ``pathlib``)."""
    d = os.path.realpath(start)
    if os.path.isfile(d):
        d = os.path.dirname(d)
    while True:
        candidate = os.path.join(d, "pyproject.toml")
        if os.path.isfile(candidate):
            return candidate
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def relative_to_root(path: str, root: str) -> str:
    """``path`` relative to ``root``, '/'-separated (no symlink resolution)."""
    absolute = os.path.abspath(path)
    base = os.path.abspath(root)
    if absolute == base or absolute.startswith(base.rstrip(os.sep) + os.sep):
        return os.path.relpath(absolute, base).replace(os.sep, "/")
    from pathlib import Path

    return Path(path).as_posix()


def excluded(path: str, root: str, patterns: tuple[str, ...]) -> bool:
    """Whether ``path`` matches one of the ``exclude`` patterns (relative to ``root``)."""
    if not patterns:
        return False
    rel = relative_to_root(path, root)
    return any(path_matches(rel, p) for p in patterns)


def path_matches(rel: str, pattern: str) -> bool:
    """Glob match of a root-relative path (ruff-like ``exclude`` / per-file-ignores)."""
    import fnmatch  # imports ``re``: only configs with exclude / per-file-ignores pay it

    pattern = pattern.rstrip("/")
    if fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(rel, pattern + "/*"):
        return True
    if pattern.endswith("/**"):
        base = pattern[:-3]
        return rel == base or rel.startswith(base + "/")
    # A bare pattern without "/" matches the file name or any directory component.
    if "/" not in pattern:
        return any(fnmatch.fnmatch(part, pattern) for part in rel.split("/"))
    return False
