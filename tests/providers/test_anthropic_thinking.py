"""Anthropic's thinking budget within ``max_tokens``, in the body a loopback Anthropic server receives."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from nestor.config.sections import ModelConfig
from nestor.config.settings import Settings
from nestor.core.errors import ConfigError
from nestor.providers.build import build_model
from nestor.runtime.kernel.loop import SessionAgent
from nestor.testing import AnthropicReply, ScriptedAnthropicServer
from tests.runtime.support import Harness

BUDGET_MODEL = "claude-sonnet-4-5"  # thinks within budget_tokens (newer models think adaptively)


@pytest.fixture
async def http_client() -> AsyncIterator[httpx2.AsyncClient]:
    async with httpx2.AsyncClient() as client:
        yield client


async def request_body(tmp_path: Path, client: httpx2.AsyncClient, **config: Any) -> dict[str, Any]:
    """Run one turn on a built Anthropic model and return the body of the request it sent."""
    with ScriptedAnthropicServer([AnthropicReply(text="ok")]) as server:
        settings = Settings(project_root=tmp_path, data_dir=tmp_path / "data")
        env = {"ANTHROPIC_API_KEY": "test", "ANTHROPIC_BASE_URL": server.base_url}
        model_config = ModelConfig.model_validate({"model": f"anthropic:{BUDGET_MODEL}", **config})
        built = build_model(model_config, settings, env=env, http_client=client)
        harness = Harness(tmp_path)
        plain = harness.agent(built.model, [], model_name=built.name)
        agent = SessionAgent(
            plain.session_id, dataclasses.replace(plain.setup, model_settings=built.settings)
        )
        result = await agent.run("hi")
        assert result.text == "ok", result.text
        [body] = server.requests
    return body


def assert_valid_thinking(body: dict[str, Any]) -> None:
    budget = body["thinking"]["budget_tokens"]
    assert 1024 <= budget < body["max_tokens"], body["thinking"]


async def test_a_high_budget_is_clamped_below_max_tokens(
    tmp_path: Path, http_client: httpx2.AsyncClient
) -> None:
    body = await request_body(tmp_path, http_client, thinking="high", max_tokens=16_000)
    assert body["max_tokens"] == 16_000 and body["thinking"]["type"] == "enabled"
    assert_valid_thinking(body)
    assert body["thinking"]["budget_tokens"] == 16_000 - 4096  # room is left for the answer


@pytest.mark.parametrize(("thinking", "max_tokens"), [("max", 2000), (True, 3000), ("minimal", 1025)])
async def test_every_budget_fits_a_small_max_tokens(
    thinking: Any, max_tokens: int, tmp_path: Path, http_client: httpx2.AsyncClient
) -> None:
    assert_valid_thinking(await request_body(tmp_path, http_client, thinking=thinking, max_tokens=max_tokens))


async def test_a_budget_that_fits_is_sent_unchanged(tmp_path: Path, http_client: httpx2.AsyncClient) -> None:
    body = await request_body(tmp_path, http_client, thinking="low", max_tokens=16_000)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}


async def test_without_max_tokens_pydantic_ai_makes_room(
    tmp_path: Path, http_client: httpx2.AsyncClient
) -> None:
    assert_valid_thinking(await request_body(tmp_path, http_client, thinking="max"))


def test_max_tokens_too_small_for_any_thinking_is_a_config_error(tmp_path: Path) -> None:
    settings = Settings(project_root=tmp_path, data_dir=tmp_path / "data")
    config = ModelConfig.model_validate(
        {"model": f"anthropic:{BUDGET_MODEL}", "thinking": "minimal", "max_tokens": 1024}
    )
    with pytest.raises(ConfigError) as caught:
        build_model(config, settings, env={"ANTHROPIC_API_KEY": "test"})
    assert "max_tokens" in caught.value.message and "1024" in caught.value.message
    assert caught.value.hint and "thinking" in caught.value.hint
