from decimal import Decimal

import pytest
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.usage import RequestUsage

from nestor.core.usage import Usage
from nestor.providers.usage import usage_from_response


def response(usage: RequestUsage, model_name: str | None, provider_name: str | None) -> ModelResponse:
    return ModelResponse(
        parts=[TextPart("done")], usage=usage, model_name=model_name, provider_name=provider_name
    )


def test_known_model_has_tokens_and_a_cost() -> None:
    request_usage = RequestUsage(
        input_tokens=1200,
        output_tokens=300,
        cache_read_tokens=200,
        cache_write_tokens=100,
        output_reasoning_tokens=50,
    )
    priced = response(request_usage, "claude-sonnet-4-5", "anthropic")
    usage = usage_from_response(priced)
    assert usage.input_tokens == 1200
    assert usage.output_tokens == 300
    assert usage.cache_read_tokens == 200
    assert usage.cache_write_tokens == 100
    assert usage.reasoning_tokens == 50
    assert usage.requests == 1
    assert usage.unpriced_requests == 0
    assert usage.cost_usd is not None and usage.cost_usd > 0
    assert usage.cost_usd == pytest.approx(float(priced.cost().total_price))


def test_unknown_model_has_tokens_but_no_cost() -> None:
    usage = usage_from_response(
        response(RequestUsage(input_tokens=10, output_tokens=5), "qwen-local", "myvllm")
    )
    assert (usage.input_tokens, usage.output_tokens, usage.requests) == (10, 5, 1)
    assert usage.cost_usd is None
    assert usage.unpriced_requests == 1


def test_response_without_model_name_is_unpriced() -> None:
    usage = usage_from_response(response(RequestUsage(input_tokens=10), None, None))
    assert usage.cost_usd is None
    assert usage.unpriced_requests == 1


def test_response_that_omitted_usage_is_unpriced() -> None:
    usage = usage_from_response(response(RequestUsage(unmeasured_requests=1), "gpt-5", "openai"))
    assert usage.cost_usd is None
    assert usage.unpriced_requests == 1


def test_cost_reported_by_the_provider_wins() -> None:
    request_usage = RequestUsage(input_tokens=10, output_tokens=5, cost=Decimal("0.25"))
    usage = usage_from_response(response(request_usage, "some/model", "openrouter"))
    assert usage.cost_usd == 0.25
    assert usage.unpriced_requests == 0


@pytest.mark.parametrize("key", ["reasoning_tokens", "thoughts_tokens"])
def test_reasoning_tokens_from_provider_details(key: str) -> None:
    request_usage = RequestUsage(input_tokens=10, output_tokens=40, details={key: 30})
    assert usage_from_response(response(request_usage, "m", "p")).reasoning_tokens == 30


def test_usages_roll_up_honestly() -> None:
    priced = usage_from_response(response(RequestUsage(input_tokens=1000), "gpt-5", "openai"))
    unpriced = usage_from_response(response(RequestUsage(input_tokens=1000), "local", "ollama"))
    total = priced + unpriced
    assert isinstance(total, Usage)
    assert total.requests == 2
    assert total.unpriced_requests == 1
    assert total.cost_usd == priced.cost_usd
    assert total.input_tokens == 2000


def test_unpriced_provider_gets_no_cost_from_price_tables() -> None:
    known = response(RequestUsage(input_tokens=1200, output_tokens=300), "claude-sonnet-4-5", "anthropic")
    assert usage_from_response(known).cost_usd is not None
    usage = usage_from_response(known, priced=False)
    assert usage.cost_usd is None and usage.unpriced_requests == 1 and usage.input_tokens == 1200
    reported = response(RequestUsage(input_tokens=1, output_tokens=1, cost=Decimal("0.25")), "m", "myproxy")
    assert usage_from_response(reported, priced=False).cost_usd == 0.25
