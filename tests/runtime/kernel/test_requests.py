"""Requests over real HTTP: refusals end a run as ``refusal``; files a provider rejects are left out after."""

from __future__ import annotations

from typing import Any

import httpx2
from pydantic_ai.messages import BinaryContent, ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.providers.anthropic import AnthropicProvider

from nestor.core.events import TextDelta
from nestor.runtime.kernel.prompt_files import FILES_LEFT_OUT_HINT
from nestor.runtime.kernel.requests import REFUSAL_MESSAGE
from nestor.testing import HTTPErrorReply, ScriptedOpenAIServer, ServerReply
from nestor.testing.anthropic_server import AnthropicReply, ScriptedAnthropicServer
from tests.runtime.support import Harness, openai_model

PNG = BinaryContent(data=b"\x89PNG\r\n\x1a\n-a-tiny-image-", media_type="image/png")
PNG_URL = "data:image/png;base64," + PNG.base64


def user_parts(body: dict[str, Any]) -> list[Any]:
    """The content of each user message of a chat-completions body."""
    return [message["content"] for message in body["messages"] if message["role"] == "user"]


async def test_an_image_goes_to_the_server_as_an_image_url_part_with_its_data_url(
    harness: Harness, client: httpx2.AsyncClient
) -> None:
    with ScriptedOpenAIServer([ServerReply(text="A tiny PNG.")]) as server:
        agent = harness.agent(openai_model(server, client))
        result = await agent.run(["what is this?", PNG])
    assert result.text == "A tiny PNG."
    [content] = user_parts(server.requests[0])
    assert content == [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": PNG_URL}},
    ]


async def test_files_the_provider_rejects_fail_the_run_in_one_line_then_the_session_goes_on_without_them(
    harness: Harness, client: httpx2.AsyncClient
) -> None:
    rejected = HTTPErrorReply(
        400, body={"error": {"message": "image input is not supported by this model", "type": "invalid"}}
    )
    with ScriptedOpenAIServer([rejected, ServerReply(text="Happy to help with text.")]) as server:
        agent = harness.agent(openai_model(server, client))
        failed = await agent.run(["what is this?", PNG])
        after = await agent.run("then just tell me a joke")
    assert failed.is_error and failed.stop_reason == "error"
    assert "400" in failed.text and "image input is not supported" in failed.text
    assert "\n" not in failed.text and failed.hint == FILES_LEFT_OUT_HINT
    assert after.stop_reason == "completed" and after.text == "Happy to help with text."
    second = user_parts(server.requests[1])
    assert "image_url" not in str(second)
    assert second[0] == [
        {"type": "text", "text": "what is this?"},
        {"type": "text", "text": "[image/png left out: the model did not take it]"},
    ]
    [stored, *_] = [m for m in harness.messages.list(agent.session_id) if isinstance(m, ModelRequest)]
    prompt = stored.parts[0]
    assert isinstance(prompt, UserPromptPart) and not isinstance(prompt.content, str)
    assert any(isinstance(item, BinaryContent) for item in prompt.content)  # the store keeps the image


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
