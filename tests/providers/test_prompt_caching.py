"""Prompt caching end to end: a built Anthropic model, a real agent turn, a loopback Anthropic server."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import genai_prices
import httpx2
import pytest
from pydantic_ai.messages import ModelResponse

from nestor.config.sections import ModelConfig, NamedProviderConfig
from nestor.config.settings import Settings
from nestor.providers.build import BuiltModel, build_model
from nestor.runtime.kernel.loop import SessionAgent
from nestor.testing import AnthropicReply, AnthropicUsage, ScriptedAnthropicServer, ServerToolCall
from tests.runtime.support import EchoTool, Harness

MODEL = "claude-sonnet-4-6"
FIRST_USAGE = AnthropicUsage(input_tokens=50, output_tokens=20, cache_creation_input_tokens=3000)
SECOND_USAGE = AnthropicUsage(
    input_tokens=30, output_tokens=10, cache_read_input_tokens=3000, cache_creation_input_tokens=80
)
STEPS = [
    AnthropicReply(tool_calls=(ServerToolCall("echo", {"text": "hi"}, id="toolu_1"),), usage=FIRST_USAGE),
    AnthropicReply(text="The echo said hi.", usage=SECOND_USAGE),
    AnthropicReply(text="Still here.", usage=AnthropicUsage(input_tokens=5, output_tokens=3)),
]


@pytest.fixture
def server() -> Iterator[ScriptedAnthropicServer]:
    with ScriptedAnthropicServer(STEPS) as server:
        yield server


@pytest.fixture
async def http_client() -> AsyncIterator[httpx2.AsyncClient]:
    async with httpx2.AsyncClient() as client:
        yield client


def build_builtin(tmp_path: Path, server: ScriptedAnthropicServer, client: httpx2.AsyncClient) -> BuiltModel:
    settings = Settings(project_root=tmp_path, data_dir=tmp_path / "data")
    env = {"ANTHROPIC_API_KEY": "test", "ANTHROPIC_BASE_URL": server.base_url}
    return build_model(ModelConfig(model=f"anthropic:{MODEL}"), settings, env=env, http_client=client)


def build_named(tmp_path: Path, server: ScriptedAnthropicServer, client: httpx2.AsyncClient) -> BuiltModel:
    gateway = NamedProviderConfig(type="anthropic", base_url=server.base_url)
    settings = Settings(project_root=tmp_path, data_dir=tmp_path / "data", providers={"gateway": gateway})
    return build_model(ModelConfig(model=f"gateway:{MODEL}"), settings, env={}, http_client=client)


def agent_on(harness: Harness, built: BuiltModel) -> SessionAgent:
    """An agent with a system prompt and a tool, sending what the app sends: the built settings."""
    plain = harness.agent(built.model, [EchoTool()], model_name=built.name)
    setup = dataclasses.replace(plain.setup, model_settings=built.settings, priced=built.priced)
    return SessionAgent(plain.session_id, setup)


def cache_controls(value: Any) -> list[dict[str, Any]]:
    """Every ``cache_control`` object anywhere in a request body."""
    if isinstance(value, dict):
        found = [value["cache_control"]] if "cache_control" in value else []
        return found + [c for item in value.values() for c in cache_controls(item)]
    if isinstance(value, list):
        return [c for item in value for c in cache_controls(item)]
    return []


@pytest.mark.parametrize("build", [build_builtin, build_named], ids=["anthropic", "named-anthropic"])
async def test_every_request_carries_breakpoints_on_system_tools_and_last_turn(
    tmp_path: Path, server: ScriptedAnthropicServer, http_client: httpx2.AsyncClient, build: Any
) -> None:
    agent = agent_on(Harness(tmp_path), build(tmp_path, server, http_client))

    first = await agent.run("Echo hi, please.")
    second = await agent.run("Are you still there?")

    assert (first.text, second.text) == ("The echo said hi.", "Still here.")
    assert len(server.requests) == 3
    for body in server.requests:
        assert body["system"][-1]["text"] == "You are a test agent."
        assert body["system"][-1]["cache_control"]["type"] == "ephemeral"
        assert [tool["name"] for tool in body["tools"]] == ["echo"]
        assert body["tools"][-1]["cache_control"]["type"] == "ephemeral"
        assert body["messages"][-1]["content"][-1]["cache_control"]["type"] == "ephemeral"
        # Exactly these three (Anthropic allows at most four), and no top-level automatic
        # breakpoint, which Anthropic-compatible gateways may reject.
        assert len(cache_controls(body)) == 3
        assert "cache_control" not in body
    # The message breakpoint moves with the conversation: a tool result, then the next prompt.
    assert server.requests[1]["messages"][-1]["content"][-1]["type"] == "tool_result"
    assert server.requests[2]["messages"][-1]["content"][-1]["text"] == "Are you still there?"


def expected_cost(usage: AnthropicUsage, *, with_cache: bool = True) -> float:
    """genai-prices' price of one response; without the cache, every input token at the input rate."""
    read = usage.cache_read_input_tokens or 0
    write = usage.cache_creation_input_tokens or 0
    tokens = genai_prices.Usage(
        input_tokens=usage.input_tokens + read + write,
        cache_read_tokens=read if with_cache else None,
        cache_write_tokens=write if with_cache else None,
        output_tokens=usage.output_tokens,
    )
    return float(genai_prices.calc_price(tokens, MODEL, provider_id="anthropic").total_price)


async def test_cache_tokens_reach_usage_session_totals_and_cost(
    tmp_path: Path, server: ScriptedAnthropicServer, http_client: httpx2.AsyncClient
) -> None:
    harness = Harness(tmp_path)
    agent = agent_on(harness, build_builtin(tmp_path, server, http_client))

    result = await agent.run("Echo hi, please.")

    assert result.usage.cache_read_tokens == 3000
    assert result.usage.cache_write_tokens == 3080
    assert result.usage.input_tokens == 50 + 3000 + 30 + 3000 + 80
    assert result.usage.output_tokens == 30
    stored = harness.sessions.get(agent.session_id).usage
    assert (stored.cache_read_tokens, stored.cache_write_tokens) == (3000, 3080)
    assert stored.input_tokens == result.usage.input_tokens
    with_cache = expected_cost(FIRST_USAGE) + expected_cost(SECOND_USAGE)
    without_cache = expected_cost(FIRST_USAGE, with_cache=False) + expected_cost(
        SECOND_USAGE, with_cache=False
    )
    assert result.usage.cost_usd == pytest.approx(with_cache)
    assert stored.cost_usd == pytest.approx(with_cache)
    assert with_cache != pytest.approx(without_cache)
    # Worked by hand from the per-million-token prices ($3 in, $15 out, $0.30 read, $3.75 write).
    assert with_cache == pytest.approx((80 * 3 + 30 * 15 + 3000 * 0.30 + 3080 * 3.75) / 1e6)


async def test_stored_responses_keep_the_cache_usage(
    tmp_path: Path, server: ScriptedAnthropicServer, http_client: httpx2.AsyncClient
) -> None:
    harness = Harness(tmp_path)
    agent = agent_on(harness, build_builtin(tmp_path, server, http_client))

    await agent.run("Echo hi, please.")

    responses = [m for m in harness.messages.list(agent.session_id) if isinstance(m, ModelResponse)]
    assert [(r.usage.cache_write_tokens, r.usage.cache_read_tokens) for r in responses] == [
        (3000, 0),
        (80, 3000),
    ]


@pytest.mark.parametrize(
    "model",
    [
        "openai:gpt-5",
        "openai-chat:gpt-4o",
        "google:gemini-2.5-flash",
        "openrouter:anthropic/claude-sonnet-4.5",
    ],
)
def test_other_providers_get_no_anthropic_settings(tmp_path: Path, model: str) -> None:
    keys = {"OPENAI_API_KEY": "k", "GOOGLE_API_KEY": "k", "OPENROUTER_API_KEY": "k"}
    settings = Settings(project_root=tmp_path, data_dir=tmp_path / "data")

    built = build_model(ModelConfig(model=model), settings, env=keys)

    assert built.settings == {"max_retries": 0}
    assert not [key for key in built.model.settings or {} if key.startswith("anthropic_")]


def test_named_openai_provider_gets_no_anthropic_settings(tmp_path: Path) -> None:
    vllm = NamedProviderConfig(type="openai", base_url="http://127.0.0.1:9/v1")
    settings = Settings(project_root=tmp_path, data_dir=tmp_path / "data", providers={"vllm": vllm})

    built = build_model(ModelConfig(model=f"vllm:{MODEL}"), settings, env={})

    assert not [key for key in built.settings if key.startswith("anthropic_")]


def test_anthropic_settings_enable_explicit_breakpoints_only(tmp_path: Path) -> None:
    settings = Settings(project_root=tmp_path, data_dir=tmp_path / "data")
    built = build_model(ModelConfig(model=f"anthropic:{MODEL}"), settings, env={"ANTHROPIC_API_KEY": "k"})

    cache_settings = {key: value for key, value in built.settings.items() if key.startswith("anthropic_")}

    assert cache_settings == {
        "anthropic_cache_instructions": True,
        "anthropic_cache_tool_definitions": True,
        "anthropic_cache_messages": True,
    }
    assert built.model.settings == built.settings
