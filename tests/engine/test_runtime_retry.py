"""Retry policy: full-jitter capped backoff and Retry-After parsing."""

from __future__ import annotations

import email.utils
import random

import pytest

from openprogram.runtime.retry import (
    PERMANENT_5XX,
    RetryPolicy,
    is_retryable_status,
    parse_retry_after,
)


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


def test_retry_after_is_waited_in_full_or_refused() -> None:
    policy = RetryPolicy(retry_after_cap_s=10.0)
    assert policy.retry_after_refusal(10.0, left=30.0) is None
    past_cap = policy.retry_after_refusal(300.0, left=400.0)
    assert past_cap == (
        "the server asked to wait 300 s (Retry-After) and no retry is made earlier, "
        "but retry_after_cap_s is 10 s"
    )
    past_budget = policy.retry_after_refusal(8.0, left=2.5)
    assert past_budget is not None and past_budget.endswith(
        "but only 2.5 s of the call's deadline are left for waiting"
    )
    both = policy.retry_after_refusal(300.0, left=-1.0)
    assert both is not None and both.endswith(
        "but retry_after_cap_s is 10 s and only 0.0 s of the call's deadline are left for waiting"
    )


def test_retryable_statuses_and_validation() -> None:
    statuses = (400, 401, 404, 408, 409, 429, 499, 500, 501, 502, 503, 504, 505, 507, 529, 599)
    assert [s for s in statuses if is_retryable_status(s)] == [
        408,
        429,
        500,
        502,
        503,
        504,
        507,
        529,
        599,
    ]
    assert PERMANENT_5XX == {501, 505}
    assert RetryPolicy(max_retries=0).attempts == 1
    with pytest.raises(ValueError, match="max_retries must be >= 0"):
        RetryPolicy(max_retries=-1)
