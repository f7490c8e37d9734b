"""File discovery: paths, ``.gitignore`` (pathspec), config excludes, symlink loops."""

from __future__ import annotations

import os
from collections.abc import Iterator

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Protocol

    class Excluder(Protocol):
        """What discovery needs of a configuration (``LintConfig`` or a warm-run snapshot)."""

        def is_excluded(self, path: str) -> bool: ...


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
    import pathspec

    return pathspec.PathSpec.from_lines("gitwildmatch", lines)


def _gitignores(root: Path) -> Iterator[Path]:
    top = root / ".gitignore"
    if top.is_file():
        yield top


def _absolute(given: str, cwd: str) -> str:
    """``cwd / given`` normalised like ``pathlib`` (no ``.``/empty parts; ``..`` kept)."""
    joined = os.path.join(cwd, given)
    if os.sep != "/" or os.altsep:  # pragma: no cover - Windows: let pathlib do it
        from pathlib import Path

        return str(Path(joined))
    parts = [p for p in joined.split("/") if p not in ("", ".")]
    return "/" + "/".join(parts)


def discover(paths: list[str], config: Excluder, cwd: str) -> Iterator[tuple[str, str]]:
    """``(absolute path, display path)`` of every Python file to lint, sorted per root.

    Plain strings and ``os.walk`` (no ``Path`` object per file): on a warm run this walk
    is most of the work.
    """
    for given in paths:
        absolute = _absolute(given, cwd)
        if os.path.isfile(absolute) or not os.path.exists(absolute):
            yield absolute, given
            continue
        spec = None
        if os.path.isfile(os.path.join(absolute, ".gitignore")):
            from pathlib import Path

            spec = _gitignore_spec(Path(absolute).resolve())
        # A directory named explicitly is linted even when the config excludes it.
        honour_exclude = not config.is_excluded(absolute)
        seen_dirs: set[tuple[int, int]] = set()
        found: list[tuple[str, str]] = []
        cut = len(absolute.rstrip(os.sep)) + 1
        for dirpath, dirnames, filenames in os.walk(absolute, followlinks=True):
            try:
                st = os.stat(dirpath)
            except OSError:
                dirnames[:] = []
                continue
            key = (st.st_dev, st.st_ino)
            if key in seen_dirs:  # symlink loop
                dirnames[:] = []
                continue
            seen_dirs.add(key)
            rel_dir = dirpath[cut:].replace(os.sep, "/")
            prefix = rel_dir + "/" if rel_dir else ""
            keep = []
            for name in dirnames:
                if name in SKIP_DIRS:
                    continue
                if spec is not None and spec.match_file(prefix + name + "/"):  # type: ignore[attr-defined]
                    continue
                if honour_exclude and config.is_excluded(os.path.join(dirpath, name)):
                    continue
                keep.append(name)
            dirnames[:] = sorted(keep)
            for name in filenames:
                if not name.endswith((".py", ".pyi")):
                    continue
                rel = prefix + name
                if spec is not None and spec.match_file(rel):  # type: ignore[attr-defined]
                    continue
                full = os.path.join(dirpath, name)
                if honour_exclude and config.is_excluded(full):
                    continue
                display = os.path.normpath(os.path.join(given, rel))
                found.append((full, display))
        yield from sorted(found, key=lambda t: t[1])
