from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from pydantic_ai.direct import model_request, model_request_stream
from pydantic_ai.exceptions import ModelAPIError, ModelHTTPError, ModelRateLimitError
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
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import ToolDefinition

from nestor.testing import (
    HTTPErrorReply,
    ScriptedOpenAIServer,
    ServerReply,
    ServerStep,
    ServerStepSource,
    ServerToolCall,
    ServerUsage,
    first_user_text,
    load_script,
    step_from_json,
    step_to_json,
)

NO_RETRIES: ModelSettings = {"max_retries": 0}
READ_TOOL = ToolDefinition(
    name="read",
    description="Read a file.",
    parameters_json_schema={"type": "object", "properties": {"path": {"type": "string"}}},
)
PARAMETERS = ModelRequestParameters(function_tools=[READ_TOOL], allow_text_output=True)
PROMPT: list[ModelMessage] = [ModelRequest.user_text_prompt("what is in a.py?")]


Serve = Callable[..., ScriptedOpenAIServer]


@pytest.fixture
def serve() -> Iterator[Serve]:
    """Start a server on the given steps; every server started is stopped after the test."""
    servers: list[ScriptedOpenAIServer] = []

    def start(*steps: ServerStepSource) -> ScriptedOpenAIServer:
        servers.append(ScriptedOpenAIServer(steps).start())
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


Connect = Callable[[str], OpenAIChatModel]


@pytest.fixture
async def connect() -> AsyncIterator[Connect]:
    """Build real OpenAI chat models talking to a server, over one HTTP client closed after the test."""
    # httpx2 is what the openai SDK itself uses; pydantic-ai deprecates passing an httpx client.
    async with httpx2.AsyncClient() as client:

        def model_for(base_url: str) -> OpenAIChatModel:
            provider = OpenAIProvider(base_url=base_url, api_key="x", http_client=client)
            return OpenAIChatModel("local-model", provider=provider)

        yield model_for


async def stream(
    model: OpenAIChatModel, messages: list[ModelMessage] = PROMPT
) -> tuple[list[ModelResponseStreamEvent], ModelResponse]:
    async with model_request_stream(
        model, messages, model_settings=NO_RETRIES, model_request_parameters=PARAMETERS
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


def raw_stream(server: ScriptedOpenAIServer, body: dict[str, Any]) -> list[dict[str, Any]]:
    """POST a streamed request with plain httpx and return the parsed SSE chunks (checking ``[DONE]``)."""
    response = httpx.post(f"{server.base_url}/chat/completions", json=body)
    events = [line.removeprefix("data: ") for line in response.text.split("\n\n") if line]
    assert events[-1] == "[DONE]"
    return [json.loads(event) for event in events[:-1]]


async def test_text_streams_over_several_chunks(serve: Serve, connect: Connect) -> None:
    server = serve(ServerReply(text="hello world", chunks=3))

    events, response = await stream(connect(server.base_url))

    assert text_deltas(events) == ["hell", "o wo", "rld"]
    assert response.parts == [TextPart("hello world")]
    assert response.model_name == "local-model"  # echoed from the request
    assert response.finish_reason == "stop"


async def test_split_tool_call_arguments_reassemble_into_parallel_calls(
    serve: Serve, connect: Connect
) -> None:
    calls = (
        ServerToolCall("read", {"path": "a.py"}, id="call_a"),
        ServerToolCall("read", {"path": "b/c.py"}),
    )
    server = serve(ServerReply(text="Reading both.", tool_calls=calls, args_chunks=4))

    events, response = await stream(connect(server.base_url))

    argument_deltas = [
        e for e in events if isinstance(e, PartDeltaEvent) and isinstance(e.delta, ToolCallPartDelta)
    ]
    assert len(argument_deltas) == 6  # 3 follow-up fragments per call
    assert [(c.tool_name, c.args_as_dict(), c.tool_call_id) for c in tool_calls(response)] == [
        ("read", {"path": "a.py"}, "call_a"),
        ("read", {"path": "b/c.py"}, "call_1_1"),
    ]
    assert response.finish_reason == "tool_call"


def test_stream_chunks_follow_the_openai_shape(serve: Serve, connect: Connect) -> None:
    step = ServerReply(tool_calls=(ServerToolCall("read", {"path": "a.py"}, id="c1"),), args_chunks=2)
    server = serve(step, step)

    chunks = raw_stream(server, {"model": "m", "stream": True, "messages": []})
    with_usage = raw_stream(server, {"model": "m", "stream": True, "stream_options": {"include_usage": True}})

    first, second = (chunk["choices"][0]["delta"] for chunk in chunks[:2])
    assert first["role"] == "assistant"
    assert first["tool_calls"] == [
        {"index": 0, "id": "c1", "type": "function", "function": {"name": "read", "arguments": '{"path":'}}
    ]
    assert second["tool_calls"] == [{"index": 0, "function": {"arguments": ' "a.py"}'}}]
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
    assert all("usage" not in chunk for chunk in chunks)
    assert with_usage[-1]["choices"] == [] and with_usage[-1]["usage"]["total_tokens"] > 0


async def test_usage_maps_into_the_response_usage(serve: Serve, connect: Connect) -> None:
    usage = ServerUsage(prompt_tokens=1200, completion_tokens=80, cached_tokens=1000, reasoning_tokens=30)
    server = serve(ServerReply(text="ok", usage=usage))

    _, response = await stream(connect(server.base_url))

    assert response.usage.input_tokens == 1200
    assert response.usage.output_tokens == 80
    assert response.usage.cache_read_tokens == 1000
    assert response.usage.output_reasoning_tokens == 30


async def test_non_streamed_reply_with_a_tool_call_and_usage(serve: Serve, connect: Connect) -> None:
    step = ServerReply(
        text="Reading.", tool_calls=(ServerToolCall("read", {"path": "a.py"}),), usage=ServerUsage(7, 3)
    )
    server = serve(step)

    response = await model_request(
        connect(server.base_url), PROMPT, model_settings=NO_RETRIES, model_request_parameters=PARAMETERS
    )

    assert response.parts[0] == TextPart("Reading.")
    assert tool_calls(response)[0].args_as_dict() == {"path": "a.py"}
    assert (response.usage.input_tokens, response.usage.output_tokens) == (7, 3)
    assert server.requests[0]["stream"] is False


async def test_rate_limit_surfaces_with_retry_after(serve: Serve, connect: Connect) -> None:
    server = serve(HTTPErrorReply(429, headers={"Retry-After": "1"}))

    with pytest.raises(ModelRateLimitError) as raised:
        await stream(connect(server.base_url))

    assert isinstance(raised.value, ModelHTTPError)
    assert raised.value.status_code == 429
    assert raised.value.retry_after == 1
    assert len(server.requests) == 1  # no hidden SDK retry


@pytest.mark.parametrize("status", [500, 503])
async def test_server_errors_surface_with_their_status_and_body(
    serve: Serve, connect: Connect, status: int
) -> None:
    body = {"error": {"message": "overloaded", "type": "server_error"}}
    server = serve(HTTPErrorReply(status, body=body))

    with pytest.raises(ModelHTTPError) as raised:
        await stream(connect(server.base_url))

    assert raised.value.status_code == status
    assert "overloaded" in str(raised.value.body)


async def test_dropped_stream_raises_after_the_first_chunks(serve: Serve, connect: Connect) -> None:
    server = serve(ServerReply(text="abcdefghij", chunks=5, drop_after_chunks=2))
    received: list[ModelResponseStreamEvent] = []

    with pytest.raises(ModelAPIError):
        async with model_request_stream(
            connect(server.base_url), PROMPT, model_settings=NO_RETRIES, model_request_parameters=PARAMETERS
        ) as streamed:
            async for event in streamed:
                received.append(event)

    assert text_deltas(received) == ["ab", "cd"]


async def test_dropped_non_streamed_response_raises(serve: Serve, connect: Connect) -> None:
    server = serve(ServerReply(text="never whole", drop_after_chunks=0))

    with pytest.raises(ModelAPIError):
        await model_request(connect(server.base_url), PROMPT, model_settings=NO_RETRIES)


async def test_requests_record_messages_tools_and_headers(serve: Serve, connect: Connect) -> None:
    server = serve(ServerReply(text="ok"))

    await stream(connect(server.base_url))

    [body] = server.requests
    assert body["model"] == "local-model"
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["messages"] == [{"role": "user", "content": "what is in a.py?"}]
    assert [tool["function"]["name"] for tool in body["tools"]] == ["read"]
    assert body["tools"][0]["function"]["description"] == "Read a file."
    assert server.request_headers[0]["authorization"] == "Bearer x"


async def test_step_function_echoes_the_tool_result(serve: Serve, connect: Connect) -> None:
    def echo(request: dict[str, Any]) -> ServerStep:
        results = [m["content"] for m in request["messages"] if m["role"] == "tool"]
        return ServerReply(text=f"the file says: {results[-1]}")

    server = serve(echo)
    messages: list[ModelMessage] = [
        *PROMPT,
        ModelResponse(parts=[ToolCallPart("read", {"path": "a.py"}, "c1")]),
        ModelRequest(parts=[ToolReturnPart("read", "print('hi')", "c1")]),
    ]

    _, response = await stream(connect(server.base_url), messages)

    assert response.parts == [TextPart("the file says: print('hi')")]


async def test_exhausted_script_answers_500_and_records_it(serve: Serve, connect: Connect) -> None:
    server = serve(ServerReply(text="only one"))
    await stream(connect(server.base_url))

    with pytest.raises(ModelHTTPError, match="script exhausted at request #2") as raised:
        await stream(connect(server.base_url))

    assert raised.value.status_code == 500
    assert server.unscripted_requests == [server.requests[1]]
    assert server.remaining == 0


async def test_step_function_that_raises_answers_500_and_records_the_traceback(
    serve: Serve, connect: Connect
) -> None:
    def broken(request: dict[str, Any]) -> ServerStep:
        raise KeyError("no such message")

    server = serve(broken)

    with pytest.raises(ModelHTTPError, match="step function raised"):
        await stream(connect(server.base_url))

    assert "KeyError: 'no such message'" in server.errors[0]


def test_models_endpoint_lists_the_model_ids() -> None:
    with ScriptedOpenAIServer([], model_ids=["small", "large"]) as server:
        listed = httpx.get(f"{server.base_url}/models").json()

    assert [model["id"] for model in listed["data"]] == ["small", "large"]


def test_delay_holds_the_response_back(serve: Serve, connect: Connect) -> None:
    server = serve(HTTPErrorReply(503, delay=30))

    with pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{server.base_url}/chat/completions", json={"model": "m"}, timeout=0.2)


def test_error_body_can_be_plain_text(serve: Serve, connect: Connect) -> None:
    server = serve(HTTPErrorReply(502, body="Bad Gateway", headers={"X-Upstream": "down"}))

    response = httpx.post(f"{server.base_url}/chat/completions", json={"model": "m"})

    assert (response.status_code, response.text, response.headers["x-upstream"]) == (
        502,
        "Bad Gateway",
        "down",
    )


async def test_a_content_filter_finish_reason_and_a_refusal_reach_the_client_as_pydantic_ai_reads_them(
    serve: Serve, connect: Connect
) -> None:
    refusal = "I'm sorry, I can't help with that."
    server = serve(
        ServerReply(text="partial", finish_reason="content_filter"),
        ServerReply(refusal=refusal, chunks=3),
        ServerReply(refusal=refusal),
    )
    model = connect(server.base_url)

    _, filtered = await stream(model)
    events, refused = await stream(model)
    whole = await model_request(model, PROMPT, model_settings=NO_RETRIES, model_request_parameters=PARAMETERS)

    assert filtered.finish_reason == "content_filter" and filtered.parts == [TextPart("partial")]
    for response in (refused, whole):
        assert response.finish_reason == "content_filter" and response.parts == []
        assert (response.provider_details or {})["refusal"] == refusal
    assert text_deltas(events) == []
    chunks = raw_stream(serve(ServerReply(refusal=refusal, chunks=3)), {"stream": True, "messages": []})
    assert [chunk["choices"][0]["delta"].get("refusal") for chunk in chunks[:3]] == [
        refusal[:12],
        refusal[12:23],
        refusal[23:],
    ]


def test_first_user_text_reads_the_text_parts_of_a_prompt_with_an_image() -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    body = {
        "messages": [
            {"role": "system", "content": "be brief"},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "USER: what is"},
                    image,
                    {"type": "text", "text": "this?"},
                ],
            },
            {"role": "user", "content": "later"},
        ]
    }
    assert first_user_text(body) == "USER: what is\nthis?"
    assert first_user_text({"messages": [{"role": "user", "content": "plain"}]}) == "plain"
    assert first_user_text({"messages": []}) == ""


def test_steps_round_trip_through_json(tmp_path: Path) -> None:
    steps: list[ServerStep] = [
        ServerReply(refusal="no", finish_reason="content_filter"),
        ServerReply(
            text="hi",
            tool_calls=(ServerToolCall("read", {"path": "a"}, id="c1"), ServerToolCall("bad", '{"x":')),
            usage=ServerUsage(10, 2, cached_tokens=4),
            chunks=3,
            drop_after_chunks=1,
        ),
        HTTPErrorReply(429, headers={"Retry-After": "2"}, delay=0.5),
    ]
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [step_to_json(step) for step in steps]}))

    assert load_script(script) == steps
    with pytest.raises(ValueError, match="invalid script step"):
        step_from_json({"txt": "typo"})


async def test_separate_process_serves_a_script_file(tmp_path: Path, connect: Connect) -> None:
    script, port_file, requests_file = (
        tmp_path / "script.json",
        tmp_path / "port",
        tmp_path / "requests.jsonl",
    )
    script.write_text(json.dumps([{"text": "from another process", "chunks": 2}]))
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        *("-m", "nestor.testing.openai_server", "--script", str(script), "--port-file", str(port_file)),
        *("--requests-file", str(requests_file)),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        port = await wait_for_port(port_file, process)
        events, _ = await stream(connect(f"http://127.0.0.1:{port}/v1"))
    finally:
        if process.returncode is None:
            process.terminate()
        _, stderr = await process.communicate()

    assert text_deltas(events) == ["from anoth", "er process"]
    assert process.returncode == 0, stderr.decode()  # SIGTERM is a clean stop
    [recorded] = [json.loads(line) for line in requests_file.read_text().splitlines()]
    assert recorded["tools"][0]["function"]["name"] == "read"


async def wait_for_port(port_file: Path, process: asyncio.subprocess.Process) -> int:
    for _ in range(1500):
        with contextlib.suppress(FileNotFoundError):
            return int(await asyncio.to_thread(port_file.read_text))
        if process.returncode is not None:
            break
        await asyncio.sleep(0.02)
    raise AssertionError("the server process did not write its port file")


async def test_server_module_imports_without_pydantic_ai() -> None:
    check = "import sys, nestor.testing.openai_server; print('pydantic_ai' in sys.modules)"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", check, stdout=asyncio.subprocess.PIPE
    )
    stdout, _ = await process.communicate()

    assert stdout.decode().strip() == "False"
