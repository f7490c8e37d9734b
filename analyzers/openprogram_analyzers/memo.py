"""Replay of the last run's output when none of its inputs changed (warm-run fast path).

The key covers every input of a cached run's output: the discovered files in order
(absolute and display path, mtime, ctime, size, inode), the output options, and — through
the file name next to the result cache — the configuration fingerprint and the analyzer's
code hash. A hit prints the stored output without loading the result cache, the findings
classes or the formatters; anything else (a miss, a corrupt file) falls back to the
normal cached run, which rewrites the memo. The files the output also depends on — the
first-party helper modules a Program's resumable functions call, and the module files that
were looked for and not found — are stored with their stat after the key and checked too.
"""

from __future__ import annotations

import os

from openprogram_analyzers.digest import blake2b_hex, stat_key


def memo_key(header: str, entries: list[tuple[str, str, os.stat_result]]) -> bytes:
    """Digest of the run's options (``header``) and the stat of every discovered file."""
    parts = [header]
    for key, display, st in entries:
        parts.append(f"{key}\0{display}\0{stat_key(st)}")
    return blake2b_hex("\n".join(parts).encode("utf-8", "surrogateescape")).encode()


_MISSING = "-"
_DEP, _DEPS = "\0", "\1"  # between a file and its stat, between files


def _stat_or_missing(path: str) -> str:
    try:
        return stat_key(os.stat(path))
    except OSError:
        return _MISSING


class RunMemo:
    """One file: ``<key>\\n<dependencies>\\n<exit code>\\n<output>``; the dependencies
    are ``path\\0stat`` (``-``: absent) separated by ``\\1``."""

    def __init__(self, path: str, key: bytes) -> None:
        self.path = path
        self.key = key

    def replay(self) -> tuple[int, str] | None:
        """``(exit code, output)`` of the last run if it had exactly this key."""
        try:
            with open(self.path, "rb") as fh:
                data = fh.read()
        except OSError:
            return None
        head, sep, rest = data.partition(b"\n")
        if not sep or head != self.key:
            return None
        deps, sep, rest = rest.partition(b"\n")
        if not sep:
            return None
        listed = deps.decode("utf-8", "surrogateescape")
        for item in listed.split(_DEPS) if listed else ():
            path, found, want = item.partition(_DEP)
            if not found or _stat_or_missing(path) != want:
                return None
        code, sep, output = rest.partition(b"\n")
        if not sep or code not in (b"0", b"1"):
            return None
        try:
            return int(code), output.decode("utf-8")
        except UnicodeDecodeError:
            return None

    def save(self, code: int, output: str, deps: dict[str, str | None] | None = None) -> None:
        """Store this run's result (atomically; errors are ignored, it is only a cache)
        with the stat keys of the other files it depends on (absolute path -> stat key
        taken before reading, None: absent)."""
        items = [f"{p}{_DEP}{_MISSING if k is None else k}" for p, k in (deps or {}).items()]
        if any(c in p for p in (deps or {}) for c in ("\n", _DEP, _DEPS)):
            return  # such a name cannot be listed: no memo, the cached run decides
        tmp = f"{self.path}.{os.getpid()}.tmp"
        try:
            listed = _DEPS.join(items).encode("utf-8", "surrogateescape")
            data = self.key + b"\n" + listed + b"\n" + str(code).encode() + b"\n"
            data += output.encode("utf-8")
            with open(tmp, "wb") as fh:
                fh.write(data)
            os.replace(tmp, self.path)
        except (OSError, UnicodeError):
            try:
                os.unlink(tmp)
            except OSError:
                pass
