"""The concurrent branch code runs in, as a deterministic path (``""`` = sequential code).

Each branch of ``parallel(...)`` (the control-flow list form and the durable dict form)
runs under its own path, built from its place in the Program (``parallel[1]``, a durable
branch's step key), never from thread timing; a branch inside a branch extends its
parent's path (``parallel[0]/parallel[2]``). Model requests are recorded with their
branch (a cassette line's ``"branch"``, an ``llm`` node's ``metadata.branch``), and
``replay:`` consumes each branch's recordings strictly in order, so concurrent branches
replay the same however their threads interleave.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["current_branch", "in_branch"]

_branch: contextvars.ContextVar[str] = contextvars.ContextVar("openprogram_branch", default="")


def current_branch() -> str:
    """The branch path of the calling code (``""`` outside any parallel branch)."""
    return _branch.get()


@contextmanager
def in_branch(segment: str) -> Iterator[str]:
    """Run the block as branch ``segment`` of the current branch; yields the full path."""
    parent = _branch.get()
    path = f"{parent}/{segment}" if parent else segment
    token = _branch.set(path)
    try:
        yield path
    finally:
        _branch.reset(token)
