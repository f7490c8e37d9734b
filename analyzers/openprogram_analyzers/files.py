"""File discovery: paths, ``.gitignore`` (pathspec), config excludes, symlink loops."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from openprogram_analyzers.config import LintConfig

# The same default excludes as ruff (plus our own cache directory).
SKIP_DIRS = frozenset(
    {
        ".bzr",
        ".direnv",
        ".eggs",
        ".git",
        ".git-rewrite",
        ".hg",
        ".ipynb_checkpoints",
        ".mypy_cache",
        ".nox",
        ".pants.d",
        ".pyenv",
        ".pytest_cache",
        ".pytype",
        ".ruff_cache",
        ".svn",
        ".tox",
        ".venv",
        ".vscode",
        "__pypackages__",
        "_build",
        "buck-out",
        "dist",
        "node_modules",
        "site-packages",
        "venv",
        "__pycache__",
        ".openprogram-lint-cache",
    }
)


def _gitignore_spec(root: Path) -> object | None:
    """A pathspec of the ``.gitignore`` files under ``root`` (top-level and nested)."""
    import pathspec

    lines: list[str] = []
    for gi in _gitignores(root):
        base = gi.parent.relative_to(root).as_posix()
        try:
            text = gi.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for raw in text.splitlines():
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            neg = line.startswith("!")
            body = line[1:] if neg else line
            if base != ".":
                body = (
                    f"{base}/{body.lstrip('/')}" if "/" in body.rstrip("/") else f"{base}/**/{body}"
                )
            lines.append(("!" if neg else "") + body)
    if not lines:
        return None
    return pathspec.PathSpec.from_lines("gitwildmatch", lines)


def _gitignores(root: Path) -> Iterator[Path]:
    top = root / ".gitignore"
    if top.is_file():
        yield top


def discover(paths: list[str], config: LintConfig, cwd: Path) -> Iterator[tuple[Path, str]]:
    """``(absolute path, display path)`` of every Python file to lint, sorted per root."""
    for given in paths:
        p = Path(given)
        absolute = p if p.is_absolute() else cwd / p
        if absolute.is_file() or not absolute.exists():
            yield absolute, given
            continue
        spec = _gitignore_spec(absolute.resolve())
        # A directory named explicitly is linted even when the config excludes it.
        honour_exclude = not config.is_excluded(str(absolute))
        seen_dirs: set[tuple[int, int]] = set()
        found: list[tuple[Path, str]] = []
        for dirpath, dirnames, filenames in os.walk(absolute, followlinks=True):
            d = Path(dirpath)
            try:
                st = d.stat()
            except OSError:
                dirnames[:] = []
                continue
            key = (st.st_dev, st.st_ino)
            if key in seen_dirs:  # symlink loop
                dirnames[:] = []
                continue
            seen_dirs.add(key)
            rel_dir = d.relative_to(absolute)
            keep = []
            for name in dirnames:
                if name in SKIP_DIRS:
                    continue
                rel = (rel_dir / name).as_posix()
                if spec is not None and spec.match_file(rel + "/"):  # type: ignore[attr-defined]
                    continue
                if honour_exclude and config.is_excluded(str(d / name)):
                    continue
                keep.append(name)
            dirnames[:] = sorted(keep)
            for name in filenames:
                if not name.endswith((".py", ".pyi")):
                    continue
                rel = (rel_dir / name).as_posix()
                if spec is not None and spec.match_file(rel):  # type: ignore[attr-defined]
                    continue
                full = d / name
                if honour_exclude and config.is_excluded(str(full)):
                    continue
                display = os.path.normpath(os.path.join(given, rel))
                found.append((full, display))
        yield from sorted(found, key=lambda t: t[1])
