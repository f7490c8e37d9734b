"""Retry policy for provider HTTP requests: capped exponential backoff with full jitter.

Retried: HTTP 429, 500, 502, 503, 504, 529, timeouts and connection errors. Every other
status is final at once. ``Retry-After`` (seconds or an HTTP date) replaces the computed
delay, capped at ``retry_after_cap_s``. A whole call (every attempt and every wait) ends
within :meth:`RetryPolicy.call_budget`; a ``Retry-After`` that reaches past it is not
waited for: the call fails at once. Delays and the sleep functions are configurable so
tests can run with tiny (or recorded, not slept) delays.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504, 529})


def _default_asleep(seconds: float) -> Awaitable[None]:
    return asyncio.sleep(seconds)


@dataclass
class RetryPolicy:
    """How often and how long to wait before retrying a failed provider request.

    ``max_retries`` retries follow the first attempt. The delay before retry ``n``
    (1-based) is ``uniform(0, min(cap_s, base_s * 2 ** (n - 1)))`` unless the server sent
    ``Retry-After``, which is honoured up to ``retry_after_cap_s``.
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

    def delay(self, retry_number: int, headers: Mapping[str, str] | None = None) -> float:
        """The delay before retry ``retry_number``: ``Retry-After`` if given, else backoff."""
        after = parse_retry_after(headers.get("retry-after") if headers else None)
        if after is not None:
            return min(after, self.retry_after_cap_s)
        return self.backoff(retry_number)


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
    """True for statuses worth retrying (rate limits and transient server errors)."""
    return status in RETRY_STATUSES
