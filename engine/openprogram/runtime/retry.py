"""Retry policy for provider HTTP requests: capped exponential backoff with full jitter.

Retried: HTTP 408 (Request Timeout), 429 (Too Many Requests) and every 5xx except those
in :data:`PERMANENT_5XX` (501 Not Implemented, 505 HTTP Version Not Supported: asking
again cannot help), timeouts and connection errors. Every other status is final at once.

``Retry-After`` (seconds or an HTTP date) replaces the computed delay and is waited in
full, never shortened (a retry earlier than the server allows would be refused again).
When it is longer than ``retry_after_cap_s``, or reaches past what the call's budget
(:meth:`RetryPolicy.call_budget`) leaves for waiting, the call fails at once with an error
saying how long the server asked to wait and which limit it passes
(:meth:`RetryPolicy.retry_after_refusal`). A whole call (every attempt and every wait)
ends within the budget. Delays and the sleep functions are configurable so tests can run
with tiny (or recorded, not slept) delays.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

TRANSIENT_4XX = frozenset({408, 429})
"""The client-error statuses worth retrying: Request Timeout and Too Many Requests."""

PERMANENT_5XX = frozenset({501, 505})
"""The server-error statuses not worth retrying; every other 5xx (529 too) is retried."""


def _default_asleep(seconds: float) -> Awaitable[None]:
    return asyncio.sleep(seconds)


@dataclass
class RetryPolicy:
    """How often and how long to wait before retrying a failed provider request.

    ``max_retries`` retries follow the first attempt. The delay before retry ``n``
    (1-based) is ``uniform(0, min(cap_s, base_s * 2 ** (n - 1)))`` unless the server sent
    ``Retry-After``, which is waited in full when it is at most ``retry_after_cap_s`` (and
    fits the call's budget); a longer one fails the call at once.
    """

    max_retries: int = 4
    base_s: float = 0.5
    cap_s: float = 20.0
    retry_after_cap_s: float = 60.0
    sleep: Callable[[float], None] = time.sleep
    asleep: Callable[[float], Awaitable[None]] = _default_asleep
    rng: random.Random = field(default_factory=random.Random)

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}")
        if self.base_s < 0 or self.cap_s < 0 or self.retry_after_cap_s < 0:
            raise ValueError("retry delays must be >= 0")

    @property
    def attempts(self) -> int:
        """Total number of attempts (first try plus retries)."""
        return self.max_retries + 1

    def ceiling(self, retry_number: int) -> float:
        """The longest backoff before retry ``retry_number`` (1-based)."""
        return min(self.cap_s, self.base_s * (2 ** max(0, retry_number - 1)))

    def backoff(self, retry_number: int) -> float:
        """Full-jitter delay before retry ``retry_number`` (1-based)."""
        return self.rng.uniform(0.0, self.ceiling(retry_number))

    def call_budget(self, timeout_s: float) -> float:
        """How long a whole call may take: ``attempts x timeout_s`` + every backoff ceiling.

        Each attempt has ``timeout_s`` for its whole response (a deadline, not a per-read
        timeout); with the defaults and ``timeout_s=60`` a call ends within 307.5 s.
        """
        backoff = sum(self.ceiling(n) for n in range(1, self.max_retries + 1))
        return self.attempts * timeout_s + backoff

    def retry_after_refusal(self, asked: float, left: float) -> str | None:
        """Why a ``Retry-After`` of ``asked`` seconds is not waited for (the call then
        fails at once), or ``None`` when it is waited in full. It is never shortened; it
        must be at most ``retry_after_cap_s`` and at most ``left``, the seconds the call's
        budget leaves for waiting once the remaining attempts keep their full timeout."""
        limits = []
        if asked > self.retry_after_cap_s:
            limits.append(f"retry_after_cap_s is {self.retry_after_cap_s:g} s")
        if asked > left:
            limits.append(
                f"only {max(left, 0.0):.1f} s of the call's deadline are left for waiting"
            )
        if not limits:
            return None
        return (
            f"the server asked to wait {asked:g} s (Retry-After) and no retry is made "
            f"earlier, but {' and '.join(limits)}"
        )


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta seconds or HTTP date)."""
    if value is None:
        return None
    value = value.strip()
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return max(0.0, seconds) if seconds == seconds else None  # NaN -> None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


def is_retryable_status(status: int) -> bool:
    """True for statuses worth retrying: :data:`TRANSIENT_4XX` and every 5xx not in
    :data:`PERMANENT_5XX`."""
    return status in TRANSIENT_4XX or (500 <= status <= 599 and status not in PERMANENT_5XX)
