from __future__ import annotations

import dataclasses

from nestor.core.usage import USAGE_COUNTS, Usage, format_cost, format_tokens


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


def test_minus_gives_what_was_added_since_a_snapshot() -> None:
    before = Usage(input_tokens=10, output_tokens=2, requests=1, cost_usd=0.5)
    after = Usage(input_tokens=25, output_tokens=5, requests=3, cost_usd=0.75, unpriced_requests=1)
    delta = after.minus(before)
    assert (delta.input_tokens, delta.output_tokens, delta.requests) == (15, 3, 2)
    assert delta.cost_usd == 0.25 and delta.unpriced_requests == 1


def test_minus_keeps_the_cost_unknown_when_nothing_priced_was_added() -> None:
    before = Usage(requests=1, cost_usd=0.5)
    after = Usage(requests=2, cost_usd=0.5, unpriced_requests=1)
    assert after.minus(before).cost_usd is None


def test_the_counters_are_every_field_but_the_cost() -> None:
    fields = [field.name for field in dataclasses.fields(Usage)]
    assert sorted(USAGE_COUNTS) == sorted(name for name in fields if name != "cost_usd")
