"""Retry policy: full-jitter capped backoff and Retry-After parsing."""

from __future__ import annotations

import email.utils
import random

import pytest

from openprogram.runtime.retry import RetryPolicy, is_retryable_status, parse_retry_after


def test_retry_after_seconds_date_and_garbage() -> None:
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after(" 0.25 ") == 0.25
    assert parse_retry_after("-3") == 0.0
    now = 1_700_000_000.0
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert parse_retry_after(date, now=now) == pytest.approx(30.0)
    assert parse_retry_after(email.utils.formatdate(now - 30, usegmt=True), now=now) == 0.0
    for bad in (None, "", "soon", "nan"):
        assert parse_retry_after(bad) is None


def test_backoff_is_full_jitter_and_capped() -> None:
    policy = RetryPolicy(base_s=0.5, cap_s=4.0, rng=random.Random(1))
    for retry in range(1, 12):
        ceiling = min(4.0, 0.5 * 2 ** (retry - 1))
        samples = [policy.backoff(retry) for _ in range(50)]
        assert all(0.0 <= s <= ceiling for s in samples)
        assert max(samples) > ceiling / 2  # jitter spreads over the whole range


def test_retry_after_header_wins_and_is_capped() -> None:
    policy = RetryPolicy(retry_after_cap_s=10.0)
    assert policy.delay(1, {"retry-after": "3"}) == 3.0
    assert policy.delay(1, {"retry-after": "300"}) == 10.0
    assert 0.0 <= policy.delay(1, {}) <= 0.5


def test_retryable_statuses_and_validation() -> None:
    assert [
        s for s in (400, 401, 404, 408, 429, 500, 501, 502, 503, 504, 529) if is_retryable_status(s)
    ] == [
        429,
        500,
        502,
        503,
        504,
        529,
    ]
    assert RetryPolicy(max_retries=0).attempts == 1
    with pytest.raises(ValueError, match="max_retries must be >= 0"):
        RetryPolicy(max_retries=-1)
