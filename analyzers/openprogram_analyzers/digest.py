"""Stable digests for cache keys without importing ``hashlib`` (OpenSSL) on warm runs."""

from __future__ import annotations


def blake2b_hex(data: bytes, size: int = 32) -> str:
    """Hex BLAKE2b digest of ``data`` (``_blake2`` directly: ``hashlib`` costs ~3 ms)."""
    try:
        from _blake2 import blake2b
    except ImportError:  # pragma: no cover - interpreters without the C module
        from hashlib import blake2b
    return blake2b(data, digest_size=size).hexdigest()
