"""Convert a pydantic-ai response's usage into nestor's :class:`~nestor.core.usage.Usage`, with cost."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nestor.core.usage import Usage

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelResponse


def usage_from_response(response: ModelResponse, *, priced: bool = True) -> Usage:
    """Return the tokens and cost of one model response.

    With ``priced=False`` (named providers, local servers) only a cost the provider itself
    reported counts; public price tables are not applied.

    Token counts follow pydantic-ai's convention: cache reads and writes are part of the input
    tokens, reasoning tokens part of the output tokens. The cost is the one the provider reported
    when it did, else genai-prices' estimate; a model it cannot price (a local model, an unknown
    name, a response without usage) gives ``cost_usd=None`` and ``unpriced_requests=1``.
    """
    request_usage = response.usage
    details = request_usage.details
    reasoning = (
        request_usage.output_reasoning_tokens
        or details.get("reasoning_tokens", 0)
        or details.get("thoughts_tokens", 0)
    )
    cost = _cost_usd(response, priced=priced)
    return Usage(
        input_tokens=request_usage.input_tokens,
        output_tokens=request_usage.output_tokens,
        cache_read_tokens=request_usage.cache_read_tokens,
        cache_write_tokens=request_usage.cache_write_tokens,
        reasoning_tokens=reasoning,
        requests=1,
        cost_usd=cost,
        unpriced_requests=0 if cost is not None else 1,
    )


def _cost_usd(response: ModelResponse, *, priced: bool) -> float | None:
    if response.usage.cost is not None:
        return float(response.usage.cost)
    if not priced:
        return None
    try:
        price = response.cost()
    # genai-prices raises LookupError for unknown models, ValueError for responses without usage,
    # and whatever its price data gets wrong; a cost is never worth failing a run over.
    except Exception:
        return None
    return float(price.total_price)
