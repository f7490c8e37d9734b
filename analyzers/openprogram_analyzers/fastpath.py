"""Warm-run fast path of ``openprogram-lint``: replay the last output of an unchanged run.

A full cached run stores a settings snapshot (configuration fingerprint, root, exclude
patterns) keyed by the pyproject's path and stat, the selection options, the working
directory and the analyzer's code hash. With it a later run discovers and stats the files
and asks the run memo (``memo.py``) — without importing the configuration machinery
(``dataclasses``, ``tomllib``), the result cache, the findings or the formatters. Any
doubt (no snapshot, a file that cannot be stat'ed, a memo miss) means the normal run.
"""

from __future__ import annotations

import os

from openprogram_analyzers.cache import CACHE_DIR, _code_hash, cache_stem
from openprogram_analyzers.digest import blake2b_hex, stat_key
from openprogram_analyzers.files import discover
from openprogram_analyzers.memo import RunMemo, memo_key
from openprogram_analyzers.paths import excluded, find_pyproject_str

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from openprogram_analyzers.config import LintConfig

Entries = list[tuple[str, str, os.stat_result]]


class _Snapshot:
    """The parts of a validated ``LintConfig`` a warm run needs."""

    def __init__(
        self, fingerprint: str, root: str, force_exclude: bool, exclude: tuple[str, ...]
    ) -> None:
        self.fingerprint = fingerprint
        self.root = root
        self.force_exclude = force_exclude
        self.exclude = exclude

    def is_excluded(self, path: str) -> bool:
        return excluded(path, self.root, self.exclude)


def _pyprojects(directories: list[str]) -> str:
    """The stat of every ``pyproject.toml`` at or above ``directories``: which one's
    ``[tool.openprogram]`` applies to a file (``find_config``) depends on these files only,
    so a warm run knows its configurations are the same without parsing any TOML."""
    seen: set[str] = set()
    found: list[str] = []
    for d in directories:
        while d not in seen:
            seen.add(d)
            candidate = os.path.join(d, "pyproject.toml")
            try:
                found.append(f"{candidate}\0{stat_key(os.stat(candidate))}")
            except OSError:
                pass
            parent = os.path.dirname(d)
            if parent == d:
                break
            d = parent
    return "\0".join(sorted(found))


def _snapshot_file(args: argparse.Namespace, cwd: str) -> str | None:
    """Where the snapshot for these pyprojects (by stat) and these options lives."""
    pyproject = args.config or find_pyproject_str(cwd)
    parts: list[object] = [
        _pyprojects([os.path.realpath(cwd)]),
        cwd,
        args.select,
        args.ignore,
        args.extend_select,
        args.extend_ignore,
        args.extend_exclude,
        args.force_exclude,
        _code_hash(),
    ]
    if pyproject:
        try:
            st = os.stat(pyproject)
        except OSError:
            return None
        parts += [pyproject, st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino]
        base = os.path.dirname(pyproject) or "."
    else:
        base = cwd
    name = "settings-" + blake2b_hex(repr(parts).encode("utf-8", "surrogateescape"), 12)
    return os.path.join(base, CACHE_DIR, name)


def save_settings(args: argparse.Namespace, cwd: str, config: LintConfig) -> None:
    """Store the snapshot of ``config`` (already validated) for later warm runs."""
    force = "1" if config.force_exclude else "0"
    fields = [config.fingerprint(), str(config.root), force, *config.excludes]
    if any("\n" in f or "\r" in f for f in fields):
        return
    path = _snapshot_file(args, cwd)
    if path is None or os.path.exists(path):
        return
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "w", encoding="utf-8", errors="surrogateescape") as fh:
            fh.write("\n".join(fields) + "\n")
        os.replace(tmp, path)
    except OSError:
        pass


def run_memo(args: argparse.Namespace, root: str, fingerprint: str, entries: Entries) -> RunMemo:
    """The memo of a run with these output options over these files."""
    stem = cache_stem(root, fingerprint)
    header = ":".join(
        str(o) for o in (args.fmt, args.statistics, args.quiet, args.show_fixes, args.fail_on_info)
    )
    if not args.config:  # each file's configuration: the nearest with [tool.openprogram]
        folders = {os.path.dirname(os.path.realpath(key)) for key, _, _ in entries}
        header += "\0" + _pyprojects(sorted(folders))
    return RunMemo(stem + ".last", memo_key(header, entries))


def try_replay(args: argparse.Namespace, paths: list[str], cwd: str) -> tuple[int, str] | None:
    """``(exit code, output)`` of the identical last run, or None (run normally)."""
    path = _snapshot_file(args, cwd)
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as fh:
            lines = fh.read().split("\n")
    except OSError:
        return None
    if len(lines) < 4 or lines[-1] != "":
        return None
    snapshot = _Snapshot(lines[0], lines[1], lines[2] == "1", tuple(lines[3:-1]))
    entries: Entries = []
    for key, display in discover(paths, snapshot, cwd, force_exclude=snapshot.force_exclude):
        try:
            entries.append((key, display, os.stat(key)))
        except OSError:
            return None
    return run_memo(args, snapshot.root, snapshot.fingerprint, entries).replay()
