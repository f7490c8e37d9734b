"""The concurrent branch code runs in, as a deterministic path (``""`` = sequential code).

Each branch of ``parallel(...)`` (the control-flow list form and the durable dict form)
runs under its own path, built from its place in the Program (``parallel[1]``, a durable
branch's step key), never from thread timing; a branch inside a branch extends its
parent's path (``parallel[0]/parallel[2]``). Model requests are recorded with their
branch (a cassette line's ``"branch"``, an ``llm`` node's ``metadata.branch``), and
``replay:`` consumes each branch's recordings strictly in order, so concurrent branches
replay the same however their threads interleave.

Every node written inside a branch also records its **forks** (``metadata.forks``): one
``[fork, index]`` pair per enclosing ``parallel`` call, outermost first, where ``fork``
names that one call (all its branches share it) and ``index`` is the branch's place in
it. History rendering (:mod:`openprogram.history`) uses them to order the session by
calls instead of by commit order, and to keep a branch from seeing its concurrent
siblings' nodes, so prompts do not depend on thread timing either.
"""

from __future__ import annotations

import contextvars
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["Forks", "current_branch", "current_forks", "in_branch", "new_fork"]

Forks = tuple[tuple[str, int], ...]
"""``(fork, index)`` per enclosing ``parallel`` call, outermost first."""

_branch: contextvars.ContextVar[str] = contextvars.ContextVar("openprogram_branch", default="")
_forks: contextvars.ContextVar[Forks] = contextvars.ContextVar("openprogram_forks", default=())


def current_branch() -> str:
    """The branch path of the calling code (``""`` outside any parallel branch)."""
    return _branch.get()


def current_forks() -> Forks:
    """The forks of the calling code (``()`` outside any parallel branch)."""
    return _forks.get()


def new_fork() -> str:
    """A name for one ``parallel`` call, shared by all its branches."""
    return uuid.uuid4().hex[:12]


@contextmanager
def in_branch(segment: str, fork: str, index: int) -> Iterator[str]:
    """Run the block as branch ``index`` (path segment ``segment``) of ``parallel`` call
    ``fork``, inside the current branch; yields the full path."""
    parent = _branch.get()
    path = f"{parent}/{segment}" if parent else segment
    token = _branch.set(path)
    forks_token = _forks.set((*_forks.get(), (fork, index)))
    try:
        yield path
    finally:
        _forks.reset(forks_token)
        _branch.reset(token)
