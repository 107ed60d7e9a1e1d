from __future__ import annotations

import httpx
from pydantic_ai.exceptions import (
    ModelAuthenticationError,
    ModelContextWindowExceededError,
    ModelHTTPError,
    ModelQuotaExceededError,
)

from nestor.providers.retry import RetryPolicy, describe_error, is_retryable


def test_transient_failures_are_retryable() -> None:
    for status in (429, 500, 502, 503, 504, 529):
        assert is_retryable(ModelHTTPError(status, "m")), status
    assert is_retryable(httpx.ReadError("connection dropped"))
    assert is_retryable(TimeoutError())


def test_rejections_are_not_retryable() -> None:
    assert not is_retryable(ModelHTTPError(400, "m"))
    assert not is_retryable(ModelAuthenticationError("m", "bad key"))
    assert not is_retryable(ModelQuotaExceededError("m", "no credit"))
    assert not is_retryable(ModelContextWindowExceededError("m", "too long"))
    assert not is_retryable(ValueError("a bug"))


def test_retry_after_wins_and_is_capped() -> None:
    policy = RetryPolicy(max_retry_after_s=60)
    assert policy.delay_for(1, ModelHTTPError(429, "m", headers={"retry-after": "12"})) == 12
    assert policy.delay_for(1, ModelHTTPError(429, "m", headers={"retry-after": "3600"})) == 60


def test_backoff_doubles_with_jitter_up_to_the_cap() -> None:
    policy = RetryPolicy(base_delay_s=1, max_delay_s=5)
    error = ModelHTTPError(500, "m")
    assert 0.75 <= policy.delay_for(1, error) <= 1.25
    assert 1.5 <= policy.delay_for(2, error) <= 2.5
    assert 3.75 <= policy.delay_for(10, error) <= 6.25


def test_describe_error_is_one_short_line() -> None:
    error = ModelHTTPError(429, "gpt-4o", {"error": {"message": "Rate limit\nreached " + "x" * 500}})
    text = describe_error(error)
    assert text.startswith("HTTP 429 (rate limited) from gpt-4o: Rate limit reached")
    assert "\n" not in text and len(text) < 260
