"""Read-only workspace tools for the Planner: read, grep, glob, list (never outside root)."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

MAX_CHARS = 20_000
MAX_HITS = 200
_SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", ".openprogram", ".mypy_cache"}


class WorkspaceError(ValueError):
    """A tool argument points outside the workspace or at nothing."""


def workspace_tools(root: str | Path) -> list[Callable[..., Any]]:
    """``read_file``, ``grep``, ``glob_files`` and ``list_dir`` bound to ``root``."""
    base = Path(root).resolve()

    def inside(path: str) -> Path:
        target = (base / path).resolve()
        if target != base and base not in target.parents:
            raise WorkspaceError(f"{path!r} is outside the workspace")
        return target

    def files() -> list[Path]:
        out: list[Path] = []
        for p in sorted(base.rglob("*")):
            if any(part in _SKIP_DIRS for part in p.relative_to(base).parts):
                continue
            if p.is_file():
                out.append(p)
        return out

    def rel(p: Path) -> str:
        return p.relative_to(base).as_posix()

    def read_file(path: str) -> str:
        """Read a text file of the workspace (relative path); long files are cut."""
        target = inside(path)
        if not target.is_file():
            raise WorkspaceError(f"no file {path!r} in the workspace")
        text = target.read_text(encoding="utf-8", errors="replace")
        return text if len(text) <= MAX_CHARS else text[:MAX_CHARS] + "\n[... truncated]"

    def grep(pattern: str, path: str = ".") -> str:
        """Lines matching a regular expression, as path:line:text (under a relative path)."""
        try:
            rx = re.compile(pattern)
        except re.error as exc:
            raise WorkspaceError(f"bad pattern {pattern!r}: {exc}") from None
        start = inside(path)
        hits: list[str] = []
        for p in files():
            if start != base and start != p and start not in p.parents:
                continue
            try:
                lines = p.read_text(encoding="utf-8").splitlines()
            except (UnicodeDecodeError, OSError):
                continue
            for n, line in enumerate(lines, 1):
                if rx.search(line):
                    hits.append(f"{rel(p)}:{n}:{line.strip()[:200]}")
                    if len(hits) >= MAX_HITS:
                        return "\n".join([*hits, "[... more matches]"])
        return "\n".join(hits) or "(no matches)"

    def glob_files(pattern: str) -> str:
        """Workspace files whose relative path matches a glob pattern such as 'src/**/*.py'."""
        found = [rel(p) for p in files() if fnmatch.fnmatch(rel(p), pattern) or p.match(pattern)]
        return "\n".join(found[:MAX_HITS]) or "(no files)"

    def list_dir(path: str = ".") -> str:
        """Entries of a workspace directory (directories end with '/')."""
        target = inside(path)
        if not target.is_dir():
            raise WorkspaceError(f"no directory {path!r} in the workspace")
        names = sorted(
            p.name + ("/" if p.is_dir() else "")
            for p in target.iterdir()
            if p.name not in _SKIP_DIRS
        )
        return "\n".join(names) or "(empty)"

    return [read_file, grep, glob_files, list_dir]
