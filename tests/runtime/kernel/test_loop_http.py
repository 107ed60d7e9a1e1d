"""The loop's retries over real HTTP: the real openai provider against the scripted loopback server."""

from __future__ import annotations

import httpx2

from nestor.core.events import Retrying
from nestor.testing import HTTPErrorReply, ScriptedOpenAIServer, ServerReply, ServerToolCall
from tests.runtime.support import EchoTool, Harness, openai_model


async def test_rate_limit_server_error_and_dropped_stream_are_retried(
    harness: Harness, client: httpx2.AsyncClient
) -> None:
    script = [
        HTTPErrorReply(429, headers={"Retry-After": "3"}),
        HTTPErrorReply(500),
        ServerReply(text="partial answer that will be cut", chunks=6, drop_after_chunks=2),
        ServerReply(text="complete answer", chunks=3),
    ]
    with ScriptedOpenAIServer(script) as server:
        agent = harness.agent(openai_model(server, client))
        agent.setup.model_settings = {"max_retries": 0}
        result = await agent.run("hello")
        assert len(server.requests) == 4
    assert result.text == "complete answer" and not result.is_error
    retries = [event for event in harness.events if isinstance(event, Retrying)]
    assert [r.attempt for r in retries] == [1, 2, 3]
    assert harness.sleeps[0] == 3.0  # Retry-After honoured
    assert "429" in retries[0].reason and "500" in retries[1].reason
    # Only the complete response is stored.
    assert len(harness.messages.list(agent.session_id)) == 2


async def test_tool_round_trip_and_usage_over_http(harness: Harness, client: httpx2.AsyncClient) -> None:
    script = [
        ServerReply(tool_calls=(ServerToolCall("echo", {"text": "ping"}),), args_chunks=4),
        ServerReply(text="pong"),
    ]
    with ScriptedOpenAIServer(script) as server:
        agent = harness.agent(openai_model(server, client), [EchoTool()])
        agent.setup.model_settings = {"max_retries": 0}
        result = await agent.run("ping it")
        tool_message = next(m for m in server.requests[1]["messages"] if m["role"] == "tool")
    assert tool_message["content"] == "echo: ping"
    assert result.text == "pong" and result.num_turns == 2
    assert result.usage.requests == 2 and result.usage.input_tokens > 0
    assert result.usage.cost_usd is not None  # gpt-4o has a known price


async def test_errors_that_cannot_succeed_are_reported_without_retrying(
    harness: Harness, client: httpx2.AsyncClient
) -> None:
    script = [HTTPErrorReply(401, body={"error": {"message": "Incorrect API key provided", "type": "auth"}})]
    with ScriptedOpenAIServer(script) as server:
        agent = harness.agent(openai_model(server, client))
        agent.setup.model_settings = {"max_retries": 0}
        result = await agent.run("hello")
    assert result.is_error and "Incorrect API key provided" in result.text and "401" in result.text
    assert harness.sleeps == []
    assert result.hint is not None and "API key" in result.hint


async def test_a_stream_that_stalls_is_given_up_after_the_idle_timeout_and_retried(
    harness: Harness, client: httpx2.AsyncClient
) -> None:
    script = [
        ServerReply(text="the start of an answer that stalls", chunks=6, stall_after_chunks=2),
        ServerReply(text="complete answer", chunks=3),
    ]
    with ScriptedOpenAIServer(script) as server:
        agent = harness.agent(openai_model(server, client))
        agent.setup.model_settings = {"max_retries": 0}
        agent.setup.stream_idle_timeout_s = 0.3
        result = await agent.run("hello")
        assert len(server.requests) == 2
    assert result.text == "complete answer" and not result.is_error
    [retry] = [event for event in harness.events if isinstance(event, Retrying)]
    assert "no data for 0.3 s" in retry.reason


async def test_a_stream_that_stalls_twice_ends_the_run_with_one_clear_line(
    harness: Harness, client: httpx2.AsyncClient
) -> None:
    stall = ServerReply(text="never finished", chunks=4, stall_after_chunks=1)
    with ScriptedOpenAIServer([stall, stall, ServerReply(text="not asked")]) as server:
        agent = harness.agent(openai_model(server, client))
        agent.setup.model_settings = {"max_retries": 0}
        agent.setup.stream_idle_timeout_s = 0.3
        result = await agent.run("hello")
        assert len(server.requests) == 2
    assert result.is_error and result.stop_reason == "error"
    assert result.text == "the stream from openai:gpt-4o sent no data for 0.3 s, twice"
    assert result.hint is not None and "stream_idle_timeout_s" in result.hint
