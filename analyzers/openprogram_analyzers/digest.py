"""Stable digests for cache keys without importing ``hashlib`` (OpenSSL) on warm runs."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import os


def blake2b_hex(data: bytes, size: int = 32) -> str:
    """Hex BLAKE2b digest of ``data`` (``_blake2`` directly: ``hashlib`` costs ~3 ms)."""
    try:
        from _blake2 import blake2b
    except ImportError:  # pragma: no cover - interpreters without the C module
        from hashlib import blake2b
    return blake2b(data, digest_size=size).hexdigest()


def stat_key(st: os.stat_result) -> str:
    """What says a file may have changed without reading it (mtime, ctime, size, inode)."""
    return f"{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_size}:{st.st_ino}"


def file_digest(path: str) -> str | None:
    """Content digest of a file a result depends on (None: unreadable)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    return blake2b_hex(data, 16)
