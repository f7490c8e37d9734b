"""Shared pieces of the ``run`` / ``resume`` / ``runs`` / ``cancel`` commands.

Exit codes: 0 completed, 1 failed (or cancelled), 2 usage error, 3 paused. With
``--json`` stdout carries exactly one JSON object; anything the Program prints goes to
stderr meanwhile. A progress line (steps done, current step, model calls) is drawn on
stderr only when stderr is a terminal.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_PAUSED = 0, 1, 2, 3


def exit_code(status: str) -> int:
    return {"completed": EXIT_OK, "paused": EXIT_PAUSED}.get(status, EXIT_FAILED)


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
    print(f"openprogram {command}: error: {message}", file=sys.stderr)
    if as_json:
        print(json.dumps({"run_id": None, "status": "error", "error": message}))
    return EXIT_USAGE


def report_outcome(outcome: Any, as_json: bool) -> int:
    """Print how a run ended and return its exit code."""
    lost = bool(getattr(outcome, "lease_lost", False))
    if as_json:
        print(json.dumps(outcome.to_json(), ensure_ascii=False, default=repr))
        return EXIT_FAILED if lost else exit_code(outcome.status)
    rid = outcome.run_id
    if lost:
        print(f"run {rid}: {outcome.error} (the run is {outcome.status} now)", file=sys.stderr)
        return EXIT_FAILED
    if outcome.status == "completed":
        print(f"run {rid} completed")
        print(json.dumps(outcome.result, ensure_ascii=False, indent=2, default=repr))
    elif outcome.status == "paused":
        occ = outcome.paused_occurrence
        where = f" at step '{outcome.paused_step}'" if outcome.paused_step else ""
        if outcome.paused_step and occ:
            where += f" (occurrence {occ})"
        print(f"run {rid} paused{where}: {outcome.error}")
        hint = " --rerun-uncertain" if outcome.pause_reason == "uncertain" else ""
        if outcome.pause_reason == "incompatible":
            hint = " --policy keep_original  (or restore the recorded steps)"
        print(f"resume with: openprogram resume {rid}{hint}")
    else:
        print(f"run {rid} {outcome.status}: {outcome.error}", file=sys.stderr)
    return exit_code(outcome.status)


class Progress:
    """A one-line progress display on stderr (only when it is a terminal)."""

    def __init__(self, run_label: str, stream: Any = None) -> None:
        self.stream = stream or sys.stderr
        self.enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self.label = run_label
        self.done = 0
        self.current = ""
        self.model_calls: Callable[[], int] = lambda: 0

    def __call__(self, event: str, key: str) -> None:
        if event in ("done", "skipped"):
            self.done += 1
        if event == "start":
            self.current = key
        if self.enabled:
            line = (
                f"\r\x1b[2K{self.label}: {self.done} steps done · current: "
                f"{self.current or '-'} · model calls: {self.model_calls()}"
            )
            self.stream.write(line)
            self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()
