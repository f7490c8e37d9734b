"""Replay of the last run's output when none of its inputs changed (warm-run fast path).

The key covers every input of a cached run's output: the discovered files in order
(absolute and display path, mtime, ctime, size, inode), the output options, and — through
the file name next to the result cache — the configuration fingerprint and the analyzer's
code hash. A hit prints the stored output without loading the result cache, the findings
classes or the formatters; anything else (a miss, a corrupt file) falls back to the
normal cached run, which rewrites the memo.
"""

from __future__ import annotations

import os

from openprogram_analyzers.digest import blake2b_hex


def memo_key(header: str, entries: list[tuple[str, str, os.stat_result]]) -> bytes:
    """Digest of the run's options (``header``) and the stat of every discovered file."""
    parts = [header]
    for key, display, st in entries:
        parts.append(
            f"{key}\0{display}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0{st.st_size}\0{st.st_ino}"
        )
    return blake2b_hex("\n".join(parts).encode("utf-8", "surrogateescape")).encode()


class RunMemo:
    """One file: ``<key>\\n<exit code>\\n<output>``."""

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
        code, sep, output = rest.partition(b"\n")
        if not sep or code not in (b"0", b"1"):
            return None
        try:
            return int(code), output.decode("utf-8")
        except UnicodeDecodeError:
            return None

    def save(self, code: int, output: str) -> None:
        """Store this run's result (atomically; errors are ignored, it is only a cache)."""
        tmp = f"{self.path}.{os.getpid()}.tmp"
        try:
            data = self.key + b"\n" + str(code).encode() + b"\n" + output.encode("utf-8")
            with open(tmp, "wb") as fh:
                fh.write(data)
            os.replace(tmp, self.path)
        except (OSError, UnicodeError):
            try:
                os.unlink(tmp)
            except OSError:
                pass
