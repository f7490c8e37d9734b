"""Shared pieces of the ``run`` / ``resume`` / ``runs`` / ``cancel`` commands.

Exit codes and error lines: :mod:`openprogram.cli.exits` (0 completed, 1 failed or
cancelled, 2 usage error, 3 paused, 130 Ctrl-C, 143 SIGTERM). With ``--json`` stdout carries exactly one JSON
object; anything the Program prints goes to stderr meanwhile. A progress line (steps done, current step, model calls) is drawn on
stderr only when stderr is a terminal.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from openprogram.cli.exits import Exit, code_for, error_line, for_status, report_error
from openprogram.contract.json_depth import MAX_JSON_DEPTH, nested_deeper_than
from openprogram.contract.runs import PauseReason, RunStatus, paused_at
from openprogram.schema_grammar import json_type_name
from openprogram.terminal_text import inert, inert_json, inert_line

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_PAUSED = Exit.OK, Exit.FAILED, Exit.USAGE, Exit.PAUSED


def exit_code(status: str) -> int:
    return for_status(status)


@contextmanager
def stdout_to_stderr(enabled: bool) -> Iterator[None]:
    """While active, file descriptor 1 (and ``sys.stdout``) write to stderr."""
    if not enabled:
        yield
        return
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def usage_error(command: str, message: str, as_json: bool) -> int:
    """Report a usage error (exit 2); with ``--json`` also as the one JSON object."""
    return report_error(message, code=Exit.USAGE, as_json=as_json)


class BadArguments(ValueError):
    """``--args`` that is not a JSON object (the message says why)."""


def parse_args_json(text: str | None) -> dict[str, Any]:
    """The ``--args`` JSON object of ``run``/``submit`` (``{}`` when not given).

    Raises :class:`BadArguments` with a one-line reason: not JSON, not readable (an integer
    of 5,000 digits, nesting too deep), a key given twice in one object (JSON would keep
    the last silently), or not an object (named by its JSON type: ``null``, ``array``).
    """
    if text is None:
        return {}
    try:
        value = json.loads(text, object_pairs_hook=_unique_keys)
    except BadArguments:
        raise
    except json.JSONDecodeError as exc:
        raise BadArguments(f"--args is not valid JSON: {exc}") from None
    except (ValueError, RecursionError) as exc:  # e.g. an integer of 5,000 digits
        reason = "it is nested too deeply" if isinstance(exc, RecursionError) else exc
        raise BadArguments(f"--args cannot be read: {reason}") from None
    if nested_deeper_than(value, MAX_JSON_DEPTH):
        raise BadArguments(
            f"--args cannot be read: it is nested too deeply (more than {MAX_JSON_DEPTH} levels)"
        )
    if not isinstance(value, dict):
        raise BadArguments(f"--args must be a JSON object, got {json_type_name(value)}")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """One JSON object of ``--args``; :class:`BadArguments` when it repeats a key."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            shown = json.dumps(key, ensure_ascii=False)
            raise BadArguments(f"--args gives the key {shown} twice: give each argument once")
        out[key] = value
    return out


def command_error(command: str, exc: BaseException, as_json: bool) -> int:
    """Report the error that stopped ``command`` with its code from the exit table."""
    return report_error(exc, code=code_for(exc), as_json=as_json)


def report_interrupted(exc: KeyboardInterrupt, as_json: bool) -> int:
    """Ctrl-C or SIGTERM: the error line, and with ``--json`` the interrupted run's JSON
    (exit 130, 143 for SIGTERM)."""
    code = code_for(exc)
    outcome = getattr(exc, "outcome", None)  # a RunInterrupted names the run it saved
    if outcome is None:
        return report_error("interrupted", code=code, as_json=as_json)
    hint = f"; resume with: openprogram resume {outcome.run_id}"
    if outcome.status != "paused":  # cancelled, or failed: its entry is not resumable
        hint = ""
    elif outcome.paused_step is not None:  # stopped inside it: uncertain on resume
        hint = (
            f"; the step may or may not have taken effect: check it, then resume with: "
            f"openprogram resume {outcome.run_id} --rerun-uncertain"
        )
    print(error_line(f"interrupted: {outcome.error}{hint}"), file=sys.stderr)
    if as_json:
        print(inert_json(outcome.to_json(), default=repr))
    return code


def report_outcome(outcome: Any, as_json: bool) -> int:
    """Print how a run ended and return its exit code."""
    lost = bool(getattr(outcome, "lease_lost", False))
    if as_json:
        print(inert_json(outcome.to_json(), default=repr))
        return EXIT_FAILED if lost else exit_code(outcome.status)
    rid = outcome.run_id
    if lost:
        print(
            inert_line(f"run {rid}: {outcome.error} (the run is {outcome.status} now)"),
            file=sys.stderr,
        )
        return EXIT_FAILED
    if outcome.status == RunStatus.COMPLETED:
        print(f"run {rid} completed")
        print(inert(json.dumps(outcome.result, ensure_ascii=False, indent=2, default=repr)))
    elif outcome.status == RunStatus.PAUSED:
        where = paused_at(outcome.paused_step, outcome.paused_occurrence)
        print(inert_line(f"run {rid} paused{where}: {outcome.error}"))
        hint = " --rerun-uncertain" if outcome.pause_reason == PauseReason.UNCERTAIN else ""
        if outcome.pause_reason == PauseReason.INCOMPATIBLE:
            hint = " --policy keep_original  (or restore the recorded steps)"
        if outcome.pause_reason == PauseReason.AWAITING_APPROVAL:
            print(f"approve with: openprogram approve {rid}   (or: openprogram deny {rid})")
        else:
            print(f"resume with: openprogram resume {rid}{hint}")
    else:
        print(inert_line(f"run {rid} {outcome.status}: {outcome.error}"), file=sys.stderr)
    return exit_code(outcome.status)
