"""When and how long to wait before retrying a failed model request.

Retried: rate limits (429), overload and server errors (5xx, 529), timeouts, refused connections
and streams that dropped mid-response. Not retried: rejected requests (400, auth, unknown model,
context overflow) and exhausted quota, where sending the same request again cannot help. The wait
doubles from ``base_delay_s`` with jitter, capped at ``max_delay_s``; a ``Retry-After`` from the
provider wins when it gave one (capped at ``max_retry_after_s`` so a bogus header cannot hang a run).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import httpx
from pydantic_ai.exceptions import (
    ModelAPIError,
    ModelConnectionError,
    ModelHTTPError,
    ModelQuotaExceededError,
    ModelRateLimitError,
    ModelRequestRejectedError,
    ModelRequestTimeout,
    ModelServerError,
    ModelUnavailableError,
)

from nestor.core.errors import NestorError

_RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})
_STATUS_PHRASES = {
    400: "bad request",
    401: "unauthorized",
    402: "payment required",
    403: "forbidden",
    404: "not found",
    408: "request timeout",
    413: "request too large",
    429: "rate limited",
    500: "server error",
    502: "bad gateway",
    503: "unavailable",
    504: "gateway timeout",
    529: "overloaded",
}


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How many attempts a model request gets, and the waits between them."""

    max_attempts: int = 5
    base_delay_s: float = 1.0
    max_delay_s: float = 30.0
    max_retry_after_s: float = 120.0

    def delay_for(self, attempt: int, error: BaseException) -> float:
        """Seconds to wait before attempt ``attempt + 1`` after ``error`` on attempt ``attempt``."""
        retry_after = getattr(error, "retry_after", None)
        if isinstance(retry_after, int | float) and retry_after >= 0:
            return min(float(retry_after), self.max_retry_after_s)
        backoff = min(self.base_delay_s * (2 ** (attempt - 1)), self.max_delay_s)
        return backoff * (0.75 + random.random() * 0.5)


def is_retryable(error: BaseException) -> bool:
    """Return True when sending the same request again may succeed."""
    if isinstance(error, ModelQuotaExceededError | ModelRequestRejectedError):
        return False
    if isinstance(
        error,
        ModelRateLimitError
        | ModelUnavailableError
        | ModelServerError
        | ModelConnectionError
        | ModelRequestTimeout,
    ):
        return True
    if isinstance(error, ModelHTTPError):
        return error.status_code in _RETRYABLE_STATUS
    if isinstance(error, ModelAPIError):
        return False
    # Transport failures that escaped the provider's own error mapping, e.g. a stream cut mid-way.
    return isinstance(error, httpx.TransportError | httpx.TimeoutException | ConnectionError | TimeoutError)


def describe_error(error: BaseException) -> str:
    """One line saying what went wrong with a model request, without the provider's whole body."""
    if isinstance(error, ModelHTTPError):
        kind = _STATUS_PHRASES.get(error.status_code, "error")
        body = error.body
        detail = ""
        if isinstance(body, dict):
            inner = body.get("error", body)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
            message = inner.get("message") if isinstance(inner, dict) else inner  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
            detail = str(message) if message else ""  # pyright: ignore[reportUnknownArgumentType]
        elif isinstance(body, str):
            detail = body
        detail = " ".join(detail.split())[:200]
        return f"HTTP {error.status_code} ({kind}) from {error.model_name}" + (
            f": {detail}" if detail else ""
        )
    if isinstance(error, ModelAPIError):
        return f"{type(error).__name__} from {error.model_name}: {error.message}"[:300]
    if isinstance(error, NestorError):  # nestor's own (a local engine that cannot load) says it all
        return error.message
    return f"{type(error).__name__}: {error}"[:300]
