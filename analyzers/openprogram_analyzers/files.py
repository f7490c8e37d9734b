"""File discovery: paths, git ignore rules (pathspec), config excludes, symlink loops."""

from __future__ import annotations

import os
from collections.abc import Iterator

TYPE_CHECKING = False
if TYPE_CHECKING:
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


class GitIgnores:
    """git's ignore rules for paths under ``top``: ``.git/info/exclude`` of the repository,
    then every ``.gitignore`` from the repository root down (a deeper file overrides a
    shallower one, ``!`` re-includes). ``top`` is the repository root when the path is in
    a git work tree, else the directory linted. ``.gitignore`` files load on first need.
    """

    def __init__(self, start: str) -> None:
        self.top = _repo_root(start)
        self.in_repo = self.top is not None
        if self.top is None:
            self.top = start
        self._chains: dict[str, tuple[tuple[str, object], ...]] = {}
        base: tuple[tuple[str, object], ...] = ()
        if self.in_repo:
            spec = _load(os.path.join(self.top, ".git", "info", "exclude"))
            if spec is not None:
                base = ((self.top, spec),)
        self._chains[self.top] = base + self._own(self.top)

    @staticmethod
    def _own(directory: str) -> tuple[tuple[str, object], ...]:
        spec = _load(os.path.join(directory, ".gitignore"))
        return ((directory, spec),) if spec is not None else ()

    def chain(self, directory: str) -> tuple[tuple[str, object], ...]:
        """The specs that apply inside ``directory`` (root first)."""
        found = self._chains.get(directory)
        if found is None:
            parent = os.path.dirname(directory)
            if parent == directory or not directory.startswith(str(self.top)):
                return ()
            found = self.chain(parent) + self._own(directory)
            self._chains[directory] = found
        return found

    def ignored(self, path: str, is_dir: bool) -> bool:
        """Whether git ignores ``path`` (absolute; its parent directories not checked)."""
        result = False
        for base, spec in self.chain(os.path.dirname(path)):
            rel = path[len(base) + 1 :].replace(os.sep, "/") + ("/" if is_dir else "")
            verdict = spec.check_file(rel).include  # type: ignore[attr-defined]
            if verdict is not None:
                result = verdict
        return result

    def ignored_with_parents(self, path: str, is_dir: bool) -> bool:
        """Whether ``path`` or one of its directories below the top is ignored."""
        top = str(self.top)
        if not path.startswith(top.rstrip(os.sep) + os.sep):
            return False
        if self.ignored(path, is_dir):
            return True
        parent = os.path.dirname(path)
        while parent != top and parent.startswith(top):
            if self.ignored(parent, True):
                return True
            parent = os.path.dirname(parent)
        return False


def _repo_root(start: str) -> str | None:
    d = start
    while True:
        if os.path.exists(os.path.join(d, ".git")):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def _load(path: str) -> object | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    if not any(line.strip() and not line.startswith("#") for line in lines):
        return None
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(lines)


def _absolute(given: str, cwd: str) -> str:
    """``cwd / given`` normalised like ``pathlib`` (no ``.``/empty parts; ``..`` kept)."""
    joined = os.path.join(cwd, given)
    if os.sep != "/" or os.altsep:  # pragma: no cover - Windows: let pathlib do it
        from pathlib import Path

        return str(Path(joined))
    parts = [p for p in joined.split("/") if p not in ("", ".")]
    return "/" + "/".join(parts)


def discover(
    paths: list[str], config: Excluder, cwd: str, *, force_exclude: bool = False
) -> Iterator[tuple[str, str]]:
    """``(absolute path, display path)`` of every Python file to lint, sorted per root.

    Directories are walked honouring ``.gitignore`` files (every level, from the git
    root even when a subdirectory is given), ``.git/info/exclude`` and the configured
    excludes. A path named explicitly is linted anyway unless ``force_exclude`` (what
    pre-commit needs: it names every file). Plain strings and ``os.walk``: on a warm run
    this walk is most of the work.
    """
    for given in paths:
        absolute = _absolute(given, cwd)
        if os.path.isfile(absolute) or not os.path.exists(absolute):
            if force_exclude and os.path.exists(absolute):
                real = os.path.realpath(absolute)
                if config.is_excluded(absolute) or GitIgnores(
                    os.path.dirname(real)
                ).ignored_with_parents(real, False):
                    continue
            yield absolute, given
            continue
        real_top = os.path.realpath(absolute)
        ignores = GitIgnores(real_top)
        if force_exclude and (
            config.is_excluded(absolute) or ignores.ignored_with_parents(real_top, True)
        ):
            continue
        # A directory named explicitly is linted even when the config excludes it.
        honour_exclude = force_exclude or not config.is_excluded(absolute)
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
            # git rules are matched on the real path under the walked top
            real_dir = os.path.join(real_top, rel_dir) if rel_dir else real_top
            chain = ignores.chain(real_dir)
            keep = []
            for name in dirnames:
                if name in SKIP_DIRS:
                    continue
                if chain and ignores.ignored(os.path.join(real_dir, name), True):
                    continue
                if honour_exclude and config.is_excluded(os.path.join(dirpath, name)):
                    continue
                keep.append(name)
            dirnames[:] = sorted(keep)
            for name in filenames:
                if not name.endswith((".py", ".pyi")):
                    continue
                if chain and ignores.ignored(os.path.join(real_dir, name), False):
                    continue
                full = os.path.join(dirpath, name)
                if honour_exclude and config.is_excluded(full):
                    continue
                display = os.path.normpath(os.path.join(given, prefix + name))
                found.append((full, display))
        yield from sorted(found, key=lambda t: t[1])
