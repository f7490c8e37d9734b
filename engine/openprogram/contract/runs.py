"""Run states, pause reasons, code-change policies and durability modes.

``StrEnum``-style enums (``str`` subclasses) so a member compares equal to the text the
store holds and serialises as that text in JSON.
"""

from __future__ import annotations

import enum
from typing import TypeGuard


class RunStatus(str, enum.Enum):
    """The state of a run, as stored and printed."""

    QUEUED = "queued"
    RUNNING = "running"
    PAUSED = "paused"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"

    def __str__(self) -> str:
        return self.value

    @property
    def terminal(self) -> bool:
        """Whether the run can no longer be resumed."""
        return self in (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED)


class PauseReason(str, enum.Enum):
    """Why a paused run stopped."""

    REQUESTED = "requested"
    UNCERTAIN = "uncertain"
    INCOMPATIBLE = "incompatible"
    INTERRUPTED = "interrupted"
    AWAITING_APPROVAL = "awaiting_approval"
    """A ``requires_approval`` tool was called in the run and nobody approved it yet."""

    def __str__(self) -> str:
        return self.value


class Policy(str, enum.Enum):
    """What a resumed run executes when its code changed since it started."""

    KEEP_ORIGINAL = "keep_original"
    USE_LATEST = "use_latest"

    def __str__(self) -> str:
        return self.value


class ApprovalStatus(str, enum.Enum):
    """The state of one tool call waiting for approval inside a run."""

    REQUESTED = "requested"
    APPROVED = "approved"
    DENIED = "denied"
    #: the approved call ran (or started): the approval is used, never used again
    EXECUTED = "executed"

    def __str__(self) -> str:
        return self.value


class CancelOutcome(str, enum.Enum):
    """What cancelling a run did (:func:`~openprogram.durable.runner.cancel_run`): the
    ``"cancel"`` of ``openprogram cancel --json`` and of the editor's
    ``openprogram/cancelRun``."""

    CANCELLED = "cancelled"
    """Done: the run's status is ``cancelled``."""
    REQUESTED = "requested"
    """Another live process executes the run: it stays ``running`` until that process
    records the cancel at its next step (a safe point)."""

    def __str__(self) -> str:
        return self.value

    @property
    def status(self) -> RunStatus:
        """The run's status right after the cancel."""
        return RunStatus.RUNNING if self is CancelOutcome.REQUESTED else RunStatus.CANCELLED


class PauseOutcome(str, enum.Enum):
    """What pausing a run did (:func:`~openprogram.durable.runner.pause_run`): the
    ``"pause"`` of ``openprogram pause --json`` and of the editor's
    ``openprogram/pauseRun``."""

    PAUSED = "paused"
    """Done: the run's status is ``paused`` (it was already, or its process is gone)."""
    REQUESTED = "requested"
    """Another live process executes the run: it stays ``running`` until that process
    pauses it before its next step (a safe point)."""

    def __str__(self) -> str:
        return self.value

    @property
    def status(self) -> RunStatus:
        """The run's status right after the pause."""
        return RunStatus.RUNNING if self is PauseOutcome.REQUESTED else RunStatus.PAUSED


class Durability(str, enum.Enum):
    """When a step's result is committed (see ``openprogram.durable``)."""

    PROCESS = "process"
    EAGER = "eager"
    POWER = "power"

    def __str__(self) -> str:
        return self.value


RUN_STATES: tuple[str, ...] = tuple(s.value for s in RunStatus)
PAUSE_REASONS: tuple[str, ...] = tuple(r.value for r in PauseReason)
POLICIES: tuple[str, ...] = tuple(p.value for p in Policy)
DURABILITY_MODES: tuple[str, ...] = tuple(d.value for d in Durability)
DEFAULT_POLICY = Policy.KEEP_ORIGINAL


def state_text(
    status: str,
    pause_reason: str | None,
    *,
    interrupted: bool = False,
    cancel_requested: bool = False,
    pause_requested: bool = False,
) -> str:
    """A run's state as ``openprogram runs`` and ``show`` print it: the stored status, and
    for a paused run its stored :class:`PauseReason` (the ``status`` and ``pause_reason``
    of ``--json``): ``paused (uncertain)``, ``paused (requested)``,
    ``paused (awaiting_approval)``. A ``running`` run whose process is gone
    (``interrupted``: no live owner holds its lease) is ``interrupted``, as the editor's
    Runs view says: it is resumable, nothing executes it. A ``running`` run whose cancel
    or pause waits for the process executing it (its next step) is ``running (cancel
    requested)`` or ``running (pause requested)`` (a cancel is said first: it wins)."""
    if status == RunStatus.RUNNING and interrupted:
        return "interrupted"
    if status == RunStatus.RUNNING and cancel_requested:
        return f"{RunStatus.RUNNING} (cancel requested)"
    if status == RunStatus.RUNNING and pause_requested:
        return f"{RunStatus.RUNNING} (pause requested)"
    if status == RunStatus.PAUSED and pause_reason:
        return f"{RunStatus.PAUSED} ({pause_reason})"
    return str(status)


def paused_at(step: str | None, occurrence: int | None) -> str:
    """Where a paused run stopped, for a message: `` at step 'NAME'`` with
    `` (occurrence N)`` after a step's first call; ``""`` when no step is known."""
    if not step:
        return ""
    where = f" at step '{step}'"
    return where + f" (occurrence {occurrence})" if occurrence else where


def lease_lost_message(run_id: str) -> str:
    """What an execution that lost the run's lease says of it (``LeaseLost``; the step it
    stopped before may follow), and the error of a step node such an execution closes."""
    return f"run {run_id} is no longer held by this process (its lease was taken over)"


def entry_name(entry: str) -> str:
    """The ENTRY of a run's ``FILE.py:ENTRY`` / ``MODULE:ENTRY`` (``report``, or
    ``FancyReporter.report`` for a direct call of a method), as run views name the run."""
    return entry.rpartition(":")[2] or entry


def program_file(program_path: str | None, entry: str) -> str:
    """The Program file a run executes: its recorded ``program_path``, else the FILE of its
    ``FILE.py:ENTRY`` (``""``: neither is recorded). The one place the store, run views,
    lenses and commands take a run's file from."""
    return program_path or entry.rpartition(":")[0]


RUN_ID_LENGTH = 16
"""A run id is ``RUN_ID_LENGTH`` lowercase hex digits (see :func:`new_run_id`)."""


def new_run_id() -> str:
    """A fresh random run id (16 lowercase hex digits; also the run's session id)."""
    import uuid

    return uuid.uuid4().hex[:RUN_ID_LENGTH]


def is_run_id(text: object) -> TypeGuard[str]:
    """Whether ``text`` has the exact shape :func:`new_run_id` generates.

    Anything else (a leading ``-``, spaces, upper case, another length) is refused by
    callers that put the id on a command line.
    """
    return (
        isinstance(text, str)
        and len(text) == RUN_ID_LENGTH
        and all(c in "0123456789abcdef" for c in text)
    )
