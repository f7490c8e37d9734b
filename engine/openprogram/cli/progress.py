"""The live progress line of ``openprogram run`` / ``resume`` on a terminal (stderr).

``run: 3 steps done · current: fetch#2 1.4 s · model calls: 2 (120→45 tokens) · 5.2 s``

Step events come from the run (``on_progress(event, step_key)``); a ticker thread redraws
the line four times a second, so the elapsed times move inside a long step, and reads the
run's model calls and token usage from the store (``durable.queries.llm_usage``, read-only).
Nothing is drawn when stderr is not a terminal.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

from openprogram.durable import queries
from openprogram.durable.steps import current_run_id
from openprogram.store import store_db_path, store_url
from openprogram.terminal_text import inert

TICK_S = 0.25


def progress_line(
    label: str,
    done: int,
    current: str,
    step_s: float,
    calls: int,
    tokens: tuple[int, int],
    total_s: float,
) -> str:
    """The text of the line (no control characters)."""
    now = f"{current} {step_s:.1f} s" if current else "-"
    usage = f" ({tokens[0]}→{tokens[1]} tokens)" if calls else ""
    return inert(
        f"{label}: {done} steps done · current: {now} · model calls: {calls}{usage}"
        f" · {total_s:.1f} s"
    )


class LiveProgress:
    """``on_progress`` callback of a run that keeps one line on stderr up to date."""

    def __init__(self, label: str, store: str | None, stream: Any = None) -> None:
        self.stream = stream or sys.stderr
        self.enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self.label = label
        self.db = store_url(store) or store_db_path(store)  # what durable.queries reads
        self.run_id: str | None = None
        self.done = 0
        self.current = ""
        self.started = self.step_started = time.monotonic()
        self.usage = (0, (0, 0))
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def __call__(self, event: str, key: str) -> None:
        with self._lock:
            if self.run_id is None:
                self.run_id = current_run_id()
            if event in ("done", "skipped"):
                self.done += 1
            if event == "start":
                self.current, self.step_started = key, time.monotonic()
        if self.enabled and self._ticker is None:
            self._ticker = threading.Thread(
                target=self._tick, name="openprogram-progress", daemon=True
            )
            self._ticker.start()

    def _tick(self) -> None:
        while not self._stop.wait(TICK_S):
            self.draw()

    def draw(self) -> None:
        with self._lock:
            run_id, done, current, step_started = (
                self.run_id,
                self.done,
                self.current,
                self.step_started,
            )
        if run_id is not None:
            self.usage = queries.llm_usage(self.db, run_id)
        calls, tokens = self.usage
        now = time.monotonic()
        line = progress_line(
            self.label, done, current, now - step_started, calls, tokens, now - self.started
        )
        self.stream.write("\r\x1b[2K" + line)
        self.stream.flush()

    def close(self) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join(timeout=2)
        if self.enabled:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()
