"""Ids of sessions and nodes: 32 lowercase hex digits that increase with time.

The first 12 digits are the creation time in milliseconds since the Unix epoch, the other
20 are random (80 bits), the layout of a UUIDv7 without its version bits. A store's id
index (SQLite's primary-key index of ``nodes``, PostgreSQL's ``nodes_pkey``) then receives
new ids on its last page rather than on a random one: a durable step rewrites one index
page fewer on average, and a store too large for the page cache does not read a random
index page from disk for every node it appends. Ids remain opaque: nothing orders by them,
and two processes creating ids in the same millisecond still differ in 80 random bits.
"""

from __future__ import annotations

import os
import time

__all__ = ["new_id"]


def new_id() -> str:
    """A fresh node or session id (32 hex digits, time-ordered to the millisecond)."""
    return f"{time.time_ns() // 1_000_000 & 0xFFFF_FFFF_FFFF:012x}{os.urandom(10).hex()}"
