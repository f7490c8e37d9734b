"""Exit codes and error lines of every ``openprogram`` command: the one table.

====  ===========  ===========================================================
code  name         when
====  ===========  ===========================================================
0     OK           the command did what was asked (a run completed)
1     FAILED       a run failed or was cancelled, or could not be saved after it
                   started (its id is printed); a replay whose result differs
2     USAGE        the command could not do its work: bad arguments or
                   ``--args``, an entry that does not load, an unknown run or
                   session id, a run whose state forbids the operation, a store
                   that cannot be opened, read or written (missing, a file,
                   corrupted, locked, read-only, newer schema)
3     PAUSED       the run paused; ``openprogram resume RUN_ID`` continues it
130   INTERRUPTED  Ctrl-C
143   TERMINATED   SIGTERM (``docker stop``, systemd, a CI timeout, ``cancel
                   --kill``): the command stops as for Ctrl-C
====  ===========  ===========================================================

Every error is one line on stderr, ``openprogram: error: <message>`` (never a
traceback); a determinism refusal lists its findings beneath that line, one per line,
exactly as ``openprogram-lint`` prints them. With ``--json`` the same message is also the
one JSON object on stdout, carrying the run id the command was given (``RUN_ID``, set
once by the dispatcher with :func:`command_run`).
Command modules raise :class:`CliError` or an :class:`~openprogram.errors.OpenProgramError`
(or call :func:`report_error`); :func:`code_for` maps it to its code.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from enum import IntEnum
from typing import TYPE_CHECKING, Any, TypeGuard

from openprogram.contract.runs import RunStatus
from openprogram.errors import OpenProgramError, stopped_by
from openprogram.terminal_text import inert, inert_json

if TYPE_CHECKING:
    from openprogram.durable.errors import DeterminismError


class Exit(IntEnum):
    """The exit codes of the table above."""

    OK = 0
    FAILED = 1
    USAGE = 2
    PAUSED = 3
    INTERRUPTED = 130
    TERMINATED = 143


class CliError(Exception):
    """A one-line error for stderr with the exit code to return (usage by default)."""

    def __init__(self, message: str, code: int = Exit.USAGE) -> None:
        super().__init__(message)
        self.code = code


def for_status(status: str) -> Exit:
    """The exit code of a run that ended in ``status``."""
    if status == RunStatus.COMPLETED:
        return Exit.OK
    return Exit.PAUSED if status == RunStatus.PAUSED else Exit.FAILED


def code_for(exc: BaseException) -> int:
    """The exit code of an error that stopped a command."""
    if isinstance(exc, CliError):
        return exc.code
    if isinstance(exc, KeyboardInterrupt):
        return Exit.TERMINATED if stopped_by(exc) == "SIGTERM" else Exit.INTERRUPTED
    if isinstance(exc, OpenProgramError):
        return Exit.USAGE
    return Exit.FAILED


def error_line(message: object) -> str:
    """``openprogram: error: <message>`` folded onto one line, its control characters
    escaped (:func:`~openprogram.cli.table.inert`); for a
    :class:`~openprogram.durable.errors.DeterminismError` its headline so, then its
    findings verbatim, one per line."""
    if _is_determinism_error(message) and message.findings:
        return "\n".join((error_line(message.headline), *map(inert, message.findings)))
    return inert("openprogram: error: " + " ".join(str(message).split()))


def _is_determinism_error(message: object) -> TypeGuard[DeterminismError]:
    """Whether ``message`` is a determinism refusal, without loading the durable package:
    one exists only once its module is loaded, so a command that never loads it
    (``sessions``, ``show``, ``--help``) does not load it to print an error line."""
    errors = sys.modules.get("openprogram.durable.errors")
    return errors is not None and isinstance(message, errors.DeterminismError)


_RUN_ID: ContextVar[str | None] = ContextVar("openprogram_cli_run_id", default=None)


@contextmanager
def command_run(run_id: str | None) -> Iterator[None]:
    """While active, the run id the running command was given: the ``run_id`` of its
    ``--json`` error object unless :func:`report_error` is given one."""
    token = _RUN_ID.set(run_id)
    try:
        yield
    finally:
        _RUN_ID.reset(token)


def report_error(
    message: object,
    *,
    code: int = Exit.USAGE,
    as_json: bool = False,
    run_id: str | None = None,
    status: str = "error",
) -> int:
    """Print the error line (and with ``as_json`` the JSON object, whose ``run_id`` is
    ``run_id``, else the command's run); return ``code``."""
    print(error_line(message), file=sys.stderr)
    if as_json:
        rid = run_id if run_id is not None else _RUN_ID.get()
        out: dict[str, Any] = {"run_id": rid, "status": status, "error": str(message)}
        print(inert_json(out))
    return code


def reader_gone() -> None:
    """The reader of stdout went away (``openprogram runs | head``): point stdout at the
    null device, so the interpreter's last flush does not print a BrokenPipeError
    traceback. Both command lines (``openprogram``, ``openprogram-lint``) call it."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no real stdout (redirected to an object): nothing to do
        pass
