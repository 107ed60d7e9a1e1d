"""Token and cost accounting, with roll-up from requests to runs to sessions.

Cost is honest: a request whose model has no known price contributes tokens but no cost, and is
counted in ``unpriced_requests``. ``cost_usd`` is ``None`` only when no request had a price, so a
total is never a made-up number; a total that misses some requests says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, cast

from pydantic import PlainSerializer, PlainValidator

USAGE_COUNTS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "requests",
    "unpriced_requests",
)
"""The integer counters of a :class:`Usage` (everything but its cost); the store's columns too."""


@dataclass(slots=True)
class Usage:
    """Tokens and cost of one request or the sum of many."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    requests: int = 0
    cost_usd: float | None = None
    unpriced_requests: int = 0

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens (cache tokens are part of the input)."""
        return self.input_tokens + self.output_tokens

    def add(self, other: Usage) -> None:
        """Add ``other`` into this usage in place."""
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_read_tokens += other.cache_read_tokens
        self.cache_write_tokens += other.cache_write_tokens
        self.reasoning_tokens += other.reasoning_tokens
        self.requests += other.requests
        self.unpriced_requests += other.unpriced_requests
        if other.cost_usd is not None:
            self.cost_usd = (self.cost_usd or 0.0) + other.cost_usd

    def __add__(self, other: Usage) -> Usage:
        total = Usage()
        total.add(self)
        total.add(other)
        return total

    def minus(self, earlier: Usage) -> Usage:
        """What was added since ``earlier`` (a snapshot of the same running total).

        The cost stays ``None`` when nothing priced was added since.
        """
        cost = None
        if self.cost_usd is not None and self.unpriced_requests - earlier.unpriced_requests < (
            self.requests - earlier.requests
        ):
            cost = self.cost_usd - (earlier.cost_usd or 0.0)
        return Usage(
            input_tokens=self.input_tokens - earlier.input_tokens,
            output_tokens=self.output_tokens - earlier.output_tokens,
            cache_read_tokens=self.cache_read_tokens - earlier.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens - earlier.cache_write_tokens,
            reasoning_tokens=self.reasoning_tokens - earlier.reasoning_tokens,
            requests=self.requests - earlier.requests,
            cost_usd=cost,
            unpriced_requests=self.unpriced_requests - earlier.unpriced_requests,
        )

    def copy(self) -> Usage:
        """A snapshot of this usage that later additions to it do not change."""
        return Usage() + self

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict, including ``total_tokens``."""
        # Written out: dataclasses.asdict deep-copies and is ten times slower on the loop's hot path.
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "requests": self.requests,
            "cost_usd": self.cost_usd,
            "unpriced_requests": self.unpriced_requests,
            "total_tokens": self.total_tokens,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Usage:
        """Rebuild a usage from :meth:`to_dict` output, ignoring unknown keys."""
        fields = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in fields})


def _usage_from_json(value: object) -> Usage:
    if isinstance(value, Usage):
        return value
    if isinstance(value, dict):
        return Usage.from_dict(cast("dict[str, Any]", value))
    raise ValueError("usage must be a Usage or a dict of its fields")


UsageField = Annotated[
    Usage,
    PlainValidator(_usage_from_json),
    PlainSerializer(lambda usage: usage.to_dict(), return_type=dict[str, Any]),
]
"""A :class:`Usage` in a pydantic model (an event): read from and written as :meth:`Usage.to_dict`'s JSON."""


def format_tokens(count: int) -> str:
    """Return a short human form of a token count: ``950``, ``12.4k``, ``1.2M``."""
    if count < 1000:
        return str(count)
    if count < 1_000_000:
        return f"{count / 1000:.1f}k"
    return f"{count / 1_000_000:.1f}M"


def format_cost(cost_usd: float | None) -> str:
    """Return ``$0.0042`` style cost, or ``cost unknown`` when no price was known."""
    if cost_usd is None:
        return "cost unknown"
    if cost_usd < 0.01:
        return f"${cost_usd:.4f}"
    return f"${cost_usd:.2f}"
