"""Requests over real HTTP: refusals end a run as ``refusal``."""

from __future__ import annotations

import httpx2
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.providers.anthropic import AnthropicProvider

from nestor.core.events import TextDelta
from nestor.runtime.kernel.requests import REFUSAL_MESSAGE
from nestor.testing import ScriptedOpenAIServer, ServerReply
from nestor.testing.anthropic_server import AnthropicReply, ScriptedAnthropicServer
from tests.runtime.support import Harness, openai_model


async def test_a_content_filter_with_no_text_ends_the_run_as_a_refusal_without_asking_again(
    harness: Harness, client: httpx2.AsyncClient
) -> None:
    with ScriptedOpenAIServer([ServerReply(finish_reason="content_filter")]) as server:
        agent = harness.agent(openai_model(server, client))
        result = await agent.run("something the filter stops")
        assert len(server.requests) == 1  # not asked again as an empty reply would be
    assert result.stop_reason == "refusal" and not result.is_error
    assert result.text == f"[{REFUSAL_MESSAGE}]"
    assert harness.sessions.get(agent.session_id).status == "refusal"
    assert result.usage.requests == 1
    assert [m.kind for m in harness.messages.list(agent.session_id)] == ["request"]  # nothing empty kept


async def test_an_openai_refusal_is_the_answer_shown_and_kept_and_the_next_prompt_works(
    harness: Harness, client: httpx2.AsyncClient
) -> None:
    refusal = "I'm sorry, I can't help with that."
    script = [ServerReply(refusal=refusal, chunks=3), ServerReply(text="Sure, here is a haiku.")]
    with ScriptedOpenAIServer(script) as server:
        agent = harness.agent(openai_model(server, client))
        refused = await agent.run("something refused")
        after = await agent.run("a haiku instead")
        assistant = [m for m in server.requests[1]["messages"] if m["role"] == "assistant"]
    assert refused.stop_reason == "refusal"
    assert refused.text == f"{refusal}\n\n[{REFUSAL_MESSAGE}]"
    assert "".join(e.text for e in harness.events if isinstance(e, TextDelta)).startswith(refusal)
    stored = harness.messages.list(agent.session_id)[1]
    assert isinstance(stored, ModelResponse) and stored.parts == [TextPart(content=refusal)]
    assert assistant[0]["content"] == refusal
    assert after.stop_reason == "completed"


async def test_an_anthropic_refusal_keeps_its_text_and_ends_the_run_as_a_refusal(
    harness: Harness, client: httpx2.AsyncClient
) -> None:
    refused = AnthropicReply(text="I won't write that.", stop_reason="refusal")
    with ScriptedAnthropicServer([refused]) as server:
        provider = AnthropicProvider(api_key="x", base_url=server.base_url, http_client=client)
        agent = harness.agent(AnthropicModel("claude-sonnet-4-6", provider=provider))
        result = await agent.run("something refused")
    assert result.stop_reason == "refusal" and not result.is_error
    assert result.text == f"I won't write that.\n\n[{REFUSAL_MESSAGE}]"
