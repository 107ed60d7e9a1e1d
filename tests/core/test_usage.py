from __future__ import annotations

from nestor.core.usage import Usage, format_cost, format_tokens


def test_add_keeps_cost_none_until_a_priced_request() -> None:
    total = Usage()
    total.add(Usage(input_tokens=10, output_tokens=2, requests=1, unpriced_requests=1))
    assert total.cost_usd is None and total.unpriced_requests == 1
    total.add(Usage(input_tokens=5, output_tokens=1, requests=1, cost_usd=0.25))
    assert total.cost_usd == 0.25 and total.total_tokens == 18 and total.requests == 2


def test_round_trip_through_dict() -> None:
    usage = Usage(
        input_tokens=1, output_tokens=2, cache_read_tokens=3, cache_write_tokens=4, reasoning_tokens=5
    )
    data = usage.to_dict()
    assert data["total_tokens"] == 3
    assert Usage.from_dict(data) == usage


def test_sum_operator() -> None:
    assert (Usage(input_tokens=1) + Usage(output_tokens=2)).total_tokens == 3


def test_formats() -> None:
    assert format_tokens(950) == "950"
    assert format_tokens(12_400) == "12.4k"
    assert format_tokens(1_200_000) == "1.2M"
    assert format_cost(None) == "cost unknown"
    assert format_cost(0.0042) == "$0.0042"
    assert format_cost(1.5) == "$1.50"
