from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import httpx2
import pytest
from pydantic_ai.direct import model_request, model_request_stream
from pydantic_ai.exceptions import (
    ModelAPIError,
    ModelContextWindowExceededError,
    ModelHTTPError,
    ModelOverloadedError,
    ModelRateLimitError,
)
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ModelResponseStreamEvent,
    PartDeltaEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    ToolCallPart,
    ToolCallPartDelta,
    ToolReturnPart,
)
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import ToolDefinition

from nestor.testing import (
    AnthropicReply,
    AnthropicStep,
    AnthropicStepSource,
    AnthropicUsage,
    HTTPErrorReply,
    ScriptedAnthropicServer,
    ServerToolCall,
    anthropic_error,
    prompt_too_long,
)

# A small max_tokens: above ~21000 the SDK streams even a non-streamed request behind the scenes.
SETTINGS: ModelSettings = {"max_retries": 0, "max_tokens": 1024}
READ_TOOL = ToolDefinition(
    name="read",
    description="Read a file.",
    parameters_json_schema={"type": "object", "properties": {"path": {"type": "string"}}},
)
PARAMETERS = ModelRequestParameters(function_tools=[READ_TOOL], allow_text_output=True)
PROMPT: list[ModelMessage] = [ModelRequest.user_text_prompt("what is in a.py?")]


Serve = Callable[..., ScriptedAnthropicServer]


@pytest.fixture
def serve() -> Iterator[Serve]:
    """Start a server on the given steps; every server started is stopped after the test."""
    servers: list[ScriptedAnthropicServer] = []

    def start(*steps: AnthropicStepSource) -> ScriptedAnthropicServer:
        servers.append(ScriptedAnthropicServer(steps).start())
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


Connect = Callable[[str], AnthropicModel]


@pytest.fixture
async def connect() -> AsyncIterator[Connect]:
    """Build real Anthropic models talking to a server, over one HTTP client closed after the test."""
    async with httpx2.AsyncClient() as client:

        def model_for(base_url: str) -> AnthropicModel:
            provider = AnthropicProvider(api_key="x", base_url=base_url, http_client=client)
            return AnthropicModel("claude-sonnet-4-6", provider=provider)

        yield model_for


async def stream(
    model: AnthropicModel, messages: list[ModelMessage] = PROMPT
) -> tuple[list[ModelResponseStreamEvent], ModelResponse]:
    async with model_request_stream(
        model, messages, model_settings=SETTINGS, model_request_parameters=PARAMETERS
    ) as streamed:
        events = [event async for event in streamed]
        return events, streamed.get()


def text_deltas(events: list[ModelResponseStreamEvent]) -> list[str]:
    deltas: list[str] = []
    for event in events:
        if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
            deltas.append(event.part.content)
        elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
            deltas.append(event.delta.content_delta)
    return deltas


def tool_calls(response: ModelResponse) -> list[ToolCallPart]:
    return [part for part in response.parts if isinstance(part, ToolCallPart)]


def raw_events(server: ScriptedAnthropicServer, body: dict[str, Any]) -> list[tuple[str, str]]:
    """POST with plain httpx and return the (event name, data) pairs of the stream."""
    response = httpx.post(f"{server.base_url}/v1/messages", json=body)
    pairs: list[tuple[str, str]] = []
    for block in response.text.split("\n\n"):
        if block:
            name, data = block.split("\n")
            pairs.append((name.removeprefix("event: "), data.removeprefix("data: ")))
    return pairs


async def test_text_streams_over_several_deltas(serve: Serve, connect: Connect) -> None:
    server = serve(AnthropicReply(text="hello world", chunks=3))

    events, response = await stream(connect(server.base_url))

    assert text_deltas(events) == ["hell", "o wo", "rld"]
    assert response.parts == [TextPart("hello world")]
    assert response.model_name == "claude-sonnet-4-6"  # echoed from the request
    assert response.provider_response_id == "msg_scripted_1"
    assert response.finish_reason == "stop"


async def test_split_tool_inputs_reassemble_into_parallel_calls(serve: Serve, connect: Connect) -> None:
    calls = (
        ServerToolCall("read", {"path": "a.py"}, id="toolu_a"),
        ServerToolCall("read", {"path": "b/c.py"}),
    )
    server = serve(AnthropicReply(text="Reading both.", tool_calls=calls, args_chunks=4))

    events, response = await stream(connect(server.base_url))

    argument_deltas = [
        e for e in events if isinstance(e, PartDeltaEvent) and isinstance(e.delta, ToolCallPartDelta)
    ]
    assert len(argument_deltas) == 8  # every piece of the input arrives as a delta
    assert response.parts[0] == TextPart("Reading both.")
    assert [(c.tool_name, c.args_as_dict(), c.tool_call_id) for c in tool_calls(response)] == [
        ("read", {"path": "a.py"}, "toolu_a"),
        ("read", {"path": "b/c.py"}, "toolu_scripted_1_1"),
    ]
    assert response.finish_reason == "tool_call"


def test_stream_events_follow_the_anthropic_shape(serve: Serve) -> None:
    step = AnthropicReply(
        tool_calls=(ServerToolCall("read", {"path": "a.py"}, id="t1"),),
        args_chunks=2,
        usage=AnthropicUsage(12, 7, cache_read_input_tokens=100),
    )
    server = serve(step)

    events = raw_events(server, {"model": "m", "stream": True, "messages": []})

    assert [name for name, _ in events] == [
        "message_start",
        "ping",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    data = [json.loads(payload) for _, payload in events]
    assert data[0]["message"]["usage"] == {
        "input_tokens": 12,
        "output_tokens": 1,
        "cache_read_input_tokens": 100,
    }
    assert data[2]["content_block"] == {"type": "tool_use", "id": "t1", "name": "read", "input": {}}
    assert [d["delta"] for d in data[3:5]] == [
        {"type": "input_json_delta", "partial_json": '{"path":'},
        {"type": "input_json_delta", "partial_json": ' "a.py"}'},
    ]
    assert data[6]["delta"]["stop_reason"] == "tool_use"
    assert data[6]["usage"]["output_tokens"] == 7


async def test_cache_tokens_map_into_the_response_usage(serve: Serve, connect: Connect) -> None:
    usage = AnthropicUsage(40, 80, cache_read_input_tokens=1000, cache_creation_input_tokens=300)
    server = serve(AnthropicReply(text="ok", usage=usage), AnthropicReply(text="ok", usage=usage))

    _, streamed = await stream(connect(server.base_url))
    whole = await model_request(connect(server.base_url), PROMPT, model_settings=SETTINGS)

    for response in (streamed, whole):
        assert response.usage.input_tokens == 1340  # pydantic-ai counts cache tokens as input
        assert response.usage.output_tokens == 80
        assert response.usage.cache_read_tokens == 1000
        assert response.usage.cache_write_tokens == 300


async def test_non_streamed_reply_with_a_tool_call_and_usage(serve: Serve, connect: Connect) -> None:
    step = AnthropicReply(
        text="Reading.",
        tool_calls=(ServerToolCall("read", {"path": "a.py"}),),
        usage=AnthropicUsage(7, 3),
    )
    server = serve(step)

    response = await model_request(
        connect(server.base_url), PROMPT, model_settings=SETTINGS, model_request_parameters=PARAMETERS
    )

    assert response.parts[0] == TextPart("Reading.")
    assert tool_calls(response)[0].args_as_dict() == {"path": "a.py"}
    assert (response.usage.input_tokens, response.usage.output_tokens) == (7, 3)
    assert response.finish_reason == "tool_call"
    assert not server.requests[0].get("stream")


async def test_large_max_tokens_streams_behind_the_scenes(serve: Serve, connect: Connect) -> None:
    server = serve(AnthropicReply(text="long answer", chunks=4, tool_calls=(ServerToolCall("read"),)))

    response = await model_request(
        connect(server.base_url),
        PROMPT,
        model_settings={"max_retries": 0, "max_tokens": 64_000},
        model_request_parameters=PARAMETERS,
    )

    assert server.requests[0]["stream"] is True  # the SDK's own stream accumulator read our events
    assert response.parts[0] == TextPart("long answer")
    assert tool_calls(response)[0].args_as_dict() == {}


async def test_rate_limit_surfaces_with_retry_after(serve: Serve, connect: Connect) -> None:
    server = serve(anthropic_error(429, "slow down", headers={"Retry-After": "1"}))

    with pytest.raises(ModelRateLimitError) as raised:
        await stream(connect(server.base_url))

    assert isinstance(raised.value, ModelHTTPError)
    assert raised.value.status_code == 429
    assert raised.value.retry_after == 1
    assert raised.value.body == {
        "type": "error",
        "error": {"type": "rate_limit_error", "message": "slow down"},
    }
    assert len(server.requests) == 1  # no hidden SDK retry


async def test_default_error_body_has_the_type_of_the_status(serve: Serve, connect: Connect) -> None:
    server = serve(HTTPErrorReply(529, headers={"Retry-After": "2"}))

    with pytest.raises(ModelOverloadedError) as raised:
        await stream(connect(server.base_url))

    assert raised.value.body == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "scripted HTTP 529"},
    }
    assert raised.value.retry_after == 2


@pytest.mark.parametrize("status", [500, 503])
async def test_server_errors_surface_with_their_status_and_body(
    serve: Serve, connect: Connect, status: int
) -> None:
    server = serve(anthropic_error(status, "internal trouble", error_type="api_error"))

    with pytest.raises(ModelHTTPError) as raised:
        await stream(connect(server.base_url))

    assert raised.value.status_code == status
    assert "internal trouble" in str(raised.value.body)


async def test_prompt_too_long_is_a_context_window_error(serve: Serve, connect: Connect) -> None:
    server = serve(prompt_too_long(tokens=250_123, maximum=200_000))

    with pytest.raises(ModelContextWindowExceededError) as raised:
        await stream(connect(server.base_url))

    assert isinstance(raised.value, ModelHTTPError)
    assert raised.value.status_code == 400
    assert raised.value.body == {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "prompt is too long: 250123 tokens > 200000 maximum",
        },
    }


async def test_dropped_stream_raises_after_the_first_deltas(serve: Serve, connect: Connect) -> None:
    server = serve(AnthropicReply(text="abcdefghij", chunks=5, drop_after_chunks=2))
    received: list[ModelResponseStreamEvent] = []

    with pytest.raises(ModelAPIError):
        async with model_request_stream(
            connect(server.base_url), PROMPT, model_settings=SETTINGS, model_request_parameters=PARAMETERS
        ) as streamed:
            async for event in streamed:
                received.append(event)

    assert text_deltas(received) == ["ab", "cd"]


async def test_dropped_non_streamed_response_raises(serve: Serve, connect: Connect) -> None:
    server = serve(AnthropicReply(text="never whole", drop_after_chunks=0))

    with pytest.raises(ModelAPIError):
        await model_request(connect(server.base_url), PROMPT, model_settings=SETTINGS)


async def test_requests_record_system_messages_tools_and_headers(serve: Serve, connect: Connect) -> None:
    server = serve(AnthropicReply(text="ok"))
    parameters = ModelRequestParameters(
        function_tools=[READ_TOOL], allow_text_output=True, instruction_parts=None
    )
    messages: list[ModelMessage] = [ModelRequest.user_text_prompt("hi", instructions="Be brief.")]

    async with model_request_stream(
        connect(server.base_url), messages, model_settings=SETTINGS, model_request_parameters=parameters
    ) as streamed:
        async for _ in streamed:
            pass

    [body] = server.requests
    assert body["model"] == "claude-sonnet-4-6"
    assert body["stream"] is True and body["max_tokens"] == 1024
    assert body["system"][-1] == {"type": "text", "text": "Be brief."}
    assert "cache_control" not in json.dumps(body)  # only when the settings ask for it
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    assert [tool["name"] for tool in body["tools"]] == ["read"]
    assert body["tools"][0]["input_schema"] == READ_TOOL.parameters_json_schema
    headers = server.request_headers[0]
    assert "x" in (headers.get("x-api-key"), headers.get("authorization", "").removeprefix("Bearer "))
    assert "anthropic-version" in headers


async def test_step_function_echoes_the_tool_result(serve: Serve, connect: Connect) -> None:
    def echo(request: dict[str, Any]) -> AnthropicStep:
        blocks = [b for m in request["messages"] if m["role"] == "user" for b in m["content"]]
        results = [c["text"] for b in blocks if b["type"] == "tool_result" for c in b["content"]]
        return AnthropicReply(text=f"the file says: {results[-1]}")

    server = serve(echo)
    messages: list[ModelMessage] = [
        *PROMPT,
        ModelResponse(parts=[ToolCallPart("read", {"path": "a.py"}, "toolu_1")]),
        ModelRequest(parts=[ToolReturnPart("read", "print('hi')", "toolu_1")]),
    ]

    _, response = await stream(connect(server.base_url), messages)

    assert response.parts == [TextPart("the file says: print('hi')")]


async def test_exhausted_script_answers_500_and_records_it(serve: Serve, connect: Connect) -> None:
    server = serve(AnthropicReply(text="only one"))
    await stream(connect(server.base_url))

    with pytest.raises(ModelHTTPError, match="script exhausted at request #2") as raised:
        await stream(connect(server.base_url))

    assert raised.value.status_code == 500
    assert isinstance(raised.value.body, dict) and raised.value.body["type"] == "error"
    assert server.unscripted_requests == [server.requests[1]]
    assert server.remaining == 0


async def test_step_function_that_raises_answers_500_and_records_the_traceback(
    serve: Serve, connect: Connect
) -> None:
    def broken(request: dict[str, Any]) -> AnthropicStep:
        raise KeyError("no such message")

    server = serve(broken)

    with pytest.raises(ModelHTTPError, match="step function raised"):
        await stream(connect(server.base_url))

    assert "KeyError: 'no such message'" in server.errors[0]


def test_models_endpoint_lists_the_model_ids() -> None:
    with ScriptedAnthropicServer([], model_ids=["claude-small", "claude-large"]) as server:
        listed = httpx.get(f"{server.base_url}/v1/models").json()
        missing = httpx.post(f"{server.base_url}/v1/complete", json={})

    assert [model["id"] for model in listed["data"]] == ["claude-small", "claude-large"]
    assert missing.status_code == 404
    assert missing.json()["error"]["type"] == "not_found_error"


async def test_server_module_imports_without_pydantic_ai() -> None:
    check = "import sys, nestor.testing.anthropic_server; print('pydantic_ai' in sys.modules)"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", check, stdout=asyncio.subprocess.PIPE
    )
    stdout, _ = await process.communicate()

    assert stdout.decode().strip() == "False"
