"""Errors and control signals of durable runs."""

from __future__ import annotations

from openprogram.errors import OpenProgramError


class DurableError(OpenProgramError):
    """Base class of durable-execution errors."""


class StepUsageError(DurableError, TypeError):
    """A step was used wrongly: non-JSON arguments/result, a lambda or closure, bad name."""


class DeterminismError(DurableError):
    """The resumable function breaks a determinism rule (message: ``path:line:col: OP2xx ...``)."""


class RunNotFound(DurableError, LookupError):
    """No run with that id in the store."""


class RunStateError(DurableError):
    """The run is in a state that does not allow the operation (e.g. resuming a completed run)."""


class ProgramLoadError(DurableError):
    """The Program file/module of a run cannot be loaded any more."""


class RunPaused(BaseException):
    """Unwinds a run to its driver so it can be saved as ``paused``.

    A ``BaseException`` so that a Program's ``except Exception`` cannot swallow it.
    ``reason`` is ``uncertain`` | ``incompatible`` | ``requested``.
    """

    def __init__(self, reason: str, message: str, step: str | None, occurrence: int | None):
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.step = step
        self.occurrence = occurrence


class RunCancelled(BaseException):
    """The run was cancelled; raised at the next step boundary."""


class RunClaimLost(RunStateError):
    """Another process claimed the run between our read and our claim (compare-and-set)."""


class LeaseLost(BaseException):
    """This execution no longer holds the run's lease (taken over after it expired or by
    ``resume --force-takeover``): it stops at its next step and writes nothing more."""


class RunReleased(BaseException):
    """The executing worker is shutting down: the run goes back to its queue before its
    next step (completed steps stay saved; another worker resumes it)."""
