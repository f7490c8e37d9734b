"""Errors and control signals of durable runs."""

from __future__ import annotations

from collections.abc import Sequence

from openprogram.contract.runs import lease_lost_message
from openprogram.errors import OpenProgramError


class DurableError(OpenProgramError):
    """Base class of durable-execution errors."""


class StepUsageError(DurableError, TypeError):
    """A step was used wrongly: non-JSON arguments/result, a lambda or closure, bad name."""


class DeterminismError(DurableError):
    """The resumable function breaks a determinism rule.

    ``str()`` is the headline, then each finding as ``openprogram-lint`` prints it
    (``path:line:col: OP2xx ...`` and its notes), one per line; ``headline`` and
    ``findings`` are the two parts.
    """

    def __init__(self, headline: str, findings: Sequence[str] = ()) -> None:
        self.headline = headline
        self.findings = tuple(findings)
        super().__init__("\n".join((headline, *self.findings)))


class RunNotFound(DurableError, LookupError):
    """No run with that id in the store."""


class AmbiguousRunId(RunNotFound):
    """A run id prefix that names no single run: several runs' ids start with it, or it is
    too short to look up (:func:`openprogram.durable.queries.resolve_run_id`)."""


class RunStateError(DurableError):
    """The run is in a state that does not allow the operation (e.g. resuming a completed run)."""


#: How to make a run's entry resumable: the advice of every error about what a run of an
#: entry that is not resumable cannot do (pause for an approval, pause on request).
DECLARE_RESUMABLE = (
    "Declare the entry resumable (@resumable, method_options = "
    "{'<method>': {'resumable': True}} or __agent_options__)"
)


class CancelUnavailable(RunStateError):
    """Cancelling, without ``--kill``, a live run whose entry is not resumable: such a run
    has no safe point (it executes no step that would read the request), so a request
    would never be acknowledged and the run would complete."""

    @classmethod
    def for_run(cls, run_id: str) -> CancelUnavailable:
        """The error of ``openprogram cancel RUN_ID`` for such a run."""
        return cls(
            f"run {run_id} cannot be cancelled at a safe point: its entry is not declared "
            "resumable, so it never stops between steps to acknowledge a cancel. End it "
            f"with `openprogram cancel --kill {run_id}`; {DECLARE_RESUMABLE[0].lower()}"
            f"{DECLARE_RESUMABLE[1:]} for its next runs"
        )


class PauseUnavailable(RunStateError):
    """Pausing a run whose entry is not resumable (``openprogram pause RUN_ID``), or
    ``pause_run(current_run_id())`` inside such a run: such a run cannot pause (resuming it could only run the entry again from its start, repeating
    what ran before), so it has no run id to pause (``current_run_id()`` is ``None``); or
    ``pause_run(None)`` outside any run. It says how to get a run that can pause."""

    @classmethod
    def for_run(cls, run_id: str) -> PauseUnavailable:
        """The error of pausing the run ``run_id`` (``openprogram pause``) whose entry is
        not resumable: it never reaches a pause (its process would finish it anyway)."""
        return cls(
            f"run {run_id} cannot be paused: its entry is not declared resumable (resuming "
            f"it could only run it again from its start). {DECLARE_RESUMABLE} for its next "
            f"runs; end this one with `openprogram cancel --kill {run_id}`"
        )

    @classmethod
    def for_call(cls, in_run: bool) -> PauseUnavailable:
        """The error of ``pause_run(None)``; ``in_run``: called inside a run (its entry is
        not resumable, as :func:`~openprogram.durable.steps.current_run_id` is ``None``)."""
        if not in_run:
            return cls("pause_run(None): no run to pause (current_run_id() is None outside a run)")
        return cls(
            "pause_run(current_run_id()): this run cannot pause: its entry is not declared "
            "resumable (resuming it could only run it again from its start), so "
            f"current_run_id() is None in it. {DECLARE_RESUMABLE} and "
            "pause_run(current_run_id()) pauses the run before its next step, until "
            "`openprogram resume RUN_ID`"
        )


class ProgramLoadError(DurableError):
    """The Program file/module of a run cannot be loaded any more."""


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM: ``terminated``) stopped a run; it was saved as it stood (paused,
    or failed when its entry is not resumable, or cancelled when a cancel was requested).
    ``outcome`` is how it ended."""

    def __init__(self, outcome: object, *, terminated: bool = False) -> None:
        super().__init__()
        self.outcome = outcome
        self.terminated = terminated


class RunPaused(BaseException):
    """A run paused: unwinds the run to its driver so it is saved as ``paused``, and is
    what a direct Python call of a resumable function raises when its run pauses.

    A ``BaseException`` so that a Program's ``except Exception`` cannot swallow it.
    ``reason`` is a :class:`~openprogram.contract.runs.PauseReason` value; ``run_id`` is
    set once the run is saved (resume it with ``openprogram resume RUN_ID``).
    """

    def __init__(
        self,
        reason: str,
        message: str,
        step: str | None,
        occurrence: int | None,
        *,
        run_id: str | None = None,
    ):
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.step = step
        self.occurrence = occurrence
        self.run_id = run_id
        self.call_identity: str | None = None  # set for a direct call (see durable.direct)

    def __str__(self) -> str:
        if self.run_id is None:
            return self.message
        where = f" at step '{self.step}'" if self.step else ""
        return (
            f"run {self.run_id} paused{where} ({self.reason}): {self.message}; "
            f"resume with: openprogram resume {self.run_id}"
        )


class RunCancelled(BaseException):
    """The run was cancelled; raised at the next step boundary."""


class RunClaimLost(RunStateError):
    """Another process claimed the run between our read and our claim (compare-and-set)."""


class LeaseLost(BaseException):
    """This execution no longer holds the run's lease (taken over after it expired or by
    ``resume --force-takeover``): it stops at its next step and writes no more step records
    nor the run's state; its open session nodes are closed as errors."""

    @staticmethod
    def message(run_id: str) -> str:
        """What such an execution says of the run (the step it stopped before may follow)."""
        return lease_lost_message(run_id)


class RunReleased(BaseException):
    """The executing worker is shutting down: the run goes back to its queue before its
    next step (completed steps stay saved; another worker resumes it)."""
