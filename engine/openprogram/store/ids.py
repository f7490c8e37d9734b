"""Ids of sessions and nodes: 32 lowercase hex digits that increase with time.

The first 12 digits are the creation time in milliseconds since the Unix epoch, the other
20 are random (80 bits), the layout of a UUIDv7 without its version bits. A store's id
index (SQLite's primary-key index of ``nodes``, PostgreSQL's ``nodes_pkey``) then receives
new ids on its last page rather than on a random one: a durable step rewrites one index
page fewer on average, and a store too large for the page cache does not read a random
index page from disk for every node it appends. Ids remain opaque: nothing orders by them,
and two processes creating ids in the same millisecond still differ in 80 random bits.

The random bits come from a generator of this module's own, seeded from ``os.urandom``
at import and again in a forked child (so parent and child never share a sequence): an
id needs uniqueness, not secrecy, and a durable step creates one, where a system call
per id cost more than the rest of the id. A Program's ``random.seed(...)`` does not touch
this generator.
"""

from __future__ import annotations

import os
import random
import time

__all__ = ["new_id"]

_random = random.Random(os.urandom(32))
_bits = _random.getrandbits

if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=lambda: _random.seed(os.urandom(32)))


def new_id() -> str:
    """A fresh node or session id (32 hex digits, time-ordered to the millisecond)."""
    return f"{time.time_ns() // 1_000_000 & 0xFFFF_FFFF_FFFF:012x}{_bits(80):020x}"
