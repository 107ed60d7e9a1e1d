from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from nestor.testing import (
    HTTPErrorReply,
    ScriptedGeminiServer,
    ServerReply,
    ServerStepSource,
    ServerToolCall,
    ServerUsage,
)

MODEL = "gemini-test"
GENERATE = f"/v1beta/models/{MODEL}:generateContent"
STREAM = f"/v1beta/models/{MODEL}:streamGenerateContent?alt=sse"
TOOLS = [{"functionDeclarations": [{"name": "read_file", "parameters": {"type": "object"}}]}]
BODY: dict[str, Any] = {
    "contents": [{"role": "user", "parts": [{"text": "what is in a.py?"}]}],
    "systemInstruction": {"parts": [{"text": "You are a test."}]},
    "tools": TOOLS,
}

Serve = Callable[..., ScriptedGeminiServer]


@pytest.fixture
def serve() -> Iterator[Serve]:
    """Start a server on the given steps; every server started is stopped after the test."""
    servers: list[ScriptedGeminiServer] = []

    def start(*steps: ServerStepSource) -> ScriptedGeminiServer:
        servers.append(ScriptedGeminiServer(steps).start())
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


def sse_chunks(response: httpx.Response) -> list[dict[str, Any]]:
    """The JSON chunks of a server-sent-event stream, checking each event is one ``data:`` line."""
    assert response.headers["content-type"] == "text/event-stream"
    events = response.text.split("\n\n")
    assert events[-1] == ""
    assert all(event.startswith("data: ") and "\n" not in event for event in events[:-1])
    return [json.loads(event.removeprefix("data: ")) for event in events[:-1]]


def parts_of(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [part for chunk in chunks for part in chunk["candidates"][0]["content"]["parts"]]


def test_generate_content_answers_text_with_finish_reason_and_usage(serve: Serve) -> None:
    server = serve(ServerReply(text="hello", usage=ServerUsage(prompt_tokens=12, completion_tokens=3)))

    response = httpx.post(server.base_url + GENERATE, json=BODY)

    assert response.status_code == 200
    body = response.json()
    candidate = body["candidates"][0]
    assert candidate["content"] == {"role": "model", "parts": [{"text": "hello"}]}
    assert candidate["finishReason"] == "STOP"
    assert body["usageMetadata"] == {"promptTokenCount": 12, "candidatesTokenCount": 3, "totalTokenCount": 15}
    assert body["modelVersion"] == MODEL
    assert server.requests == [BODY]
    assert len(server.request_times) == 1


def test_generate_content_sends_function_calls_with_object_args(serve: Serve) -> None:
    calls = (
        ServerToolCall("read_file", {"path": "a.py"}),
        ServerToolCall("glob", '{"pattern": "*.py"}', id="call-7"),
    )
    server = serve(ServerReply(text="Reading.", tool_calls=calls))

    parts = httpx.post(server.base_url + GENERATE, json=BODY).json()["candidates"][0]["content"]["parts"]

    assert parts == [
        {"text": "Reading."},
        {"functionCall": {"name": "read_file", "args": {"path": "a.py"}}},
        {"functionCall": {"name": "glob", "args": {"pattern": "*.py"}, "id": "call-7"}},
    ]


def test_stream_splits_text_into_sse_chunks_and_finishes_the_last(serve: Serve) -> None:
    server = serve(ServerReply(text="hello world", chunks=3))

    chunks = sse_chunks(httpx.post(server.base_url + STREAM, json=BODY))

    assert "".join(part["text"] for part in parts_of(chunks)) == "hello world"
    assert len(chunks) == 3
    assert [chunk["candidates"][0].get("finishReason") for chunk in chunks] == [None, None, "STOP"]
    assert all(chunk["usageMetadata"]["promptTokenCount"] > 0 for chunk in chunks)
    assert server.requests == [BODY]


def test_stream_sends_a_function_call_in_its_last_chunk(serve: Serve) -> None:
    usage = ServerUsage(prompt_tokens=100, completion_tokens=30, cached_tokens=40, reasoning_tokens=20)
    call = ServerToolCall("read_file", {"path": "a.py"})
    server = serve(ServerReply(text="Let me look.", tool_calls=(call,), usage=usage))

    chunks = sse_chunks(httpx.post(server.base_url + STREAM, json=BODY))

    assert parts_of(chunks) == [
        {"text": "Let me look."},
        {"functionCall": {"name": "read_file", "args": {"path": "a.py"}}},
    ]
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"
    assert chunks[-1]["usageMetadata"] == {
        "promptTokenCount": 100,
        "candidatesTokenCount": 10,
        "totalTokenCount": 130,
        "cachedContentTokenCount": 40,
        "thoughtsTokenCount": 20,
    }


def test_an_empty_reply_still_streams_one_finished_chunk(serve: Serve) -> None:
    server = serve(ServerReply(finish_reason="MAX_TOKENS"))

    chunks = sse_chunks(httpx.post(server.base_url + STREAM, json=BODY))

    assert parts_of(chunks) == [{"text": ""}]
    assert chunks[0]["candidates"][0]["finishReason"] == "MAX_TOKENS"


def test_count_tokens_answers_without_taking_a_step(serve: Serve) -> None:
    server = serve(ServerReply(text="ok"))

    bare = httpx.post(
        f"{server.base_url}/v1beta/models/{MODEL}:countTokens", json={"contents": BODY["contents"]}
    )
    wrapped = httpx.post(
        f"{server.base_url}/v1beta/models/{MODEL}:countTokens", json={"generateContentRequest": BODY}
    )

    assert bare.status_code == wrapped.status_code == 200
    assert 0 < bare.json()["totalTokens"] < wrapped.json()["totalTokens"]
    assert server.requests == []
    assert server.remaining == 1


def test_errors_carry_googles_body_and_headers(serve: Serve) -> None:
    server = serve(HTTPErrorReply(429, headers={"Retry-After": "2"}))

    response = httpx.post(server.base_url + STREAM, json=BODY)

    assert response.status_code == 429
    assert response.headers["retry-after"] == "2"
    assert response.json() == {
        "error": {"code": 429, "message": "scripted HTTP 429", "status": "RESOURCE_EXHAUSTED"}
    }


def test_exhausted_script_answers_500_and_records_it(serve: Serve) -> None:
    server = serve()

    response = httpx.post(server.base_url + GENERATE, json=BODY)

    assert response.status_code == 500
    assert response.json()["error"]["status"] == "INTERNAL"
    assert server.unscripted_requests == [BODY]


def test_a_dropped_stream_ends_after_the_first_chunks(serve: Serve) -> None:
    server = serve(ServerReply(text="abcdef", chunks=3, drop_after_chunks=1))

    with pytest.raises(httpx.RemoteProtocolError):
        httpx.post(server.base_url + STREAM, json=BODY)


def test_models_are_listed_and_unknown_paths_are_404() -> None:
    with ScriptedGeminiServer([], model_ids=["gemini-small", "gemini-large"]) as server:
        listed = httpx.get(f"{server.base_url}/v1beta/models").json()
        unknown_get = httpx.get(f"{server.base_url}/v1beta/cachedContents")
        unknown_post = httpx.post(f"{server.base_url}/v1beta/models/{MODEL}:embedContent", json={})
        chat = httpx.post(f"{server.base_url}/v1/chat/completions", json={})

    assert [model["name"] for model in listed["models"]] == ["models/gemini-small", "models/gemini-large"]
    for response in (unknown_get, unknown_post, chat):
        assert response.status_code == 404
        assert response.json()["error"]["status"] == "NOT_FOUND"
    assert server.requests == []


async def test_googles_own_client_reads_the_stream_and_the_calls(serve: Serve) -> None:
    from google.genai import Client
    from google.genai.types import HttpOptions

    call = ServerToolCall("read_file", {"path": "a.py"})
    server = serve(ServerReply(text="hello there", chunks=2), ServerReply(tool_calls=(call,)))
    client = Client(api_key="test", http_options=HttpOptions(base_url=server.base_url))

    streamed = [
        chunk.text or ""
        async for chunk in await client.aio.models.generate_content_stream(model=MODEL, contents="hi")
    ]
    answer = await client.aio.models.generate_content(model=MODEL, contents="read a.py")

    assert "".join(streamed) == "hello there"
    assert [(c.name, c.args) for c in answer.function_calls or []] == [("read_file", {"path": "a.py"})]
    assert [request["contents"][0]["parts"][0]["text"] for request in server.requests] == ["hi", "read a.py"]
    assert server.request_headers[0]["x-goog-api-key"] == "test"


async def test_server_module_imports_without_pydantic_ai() -> None:
    check = "import sys, nestor.testing.gemini_server; print('pydantic_ai' in sys.modules)"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", check, stdout=asyncio.subprocess.PIPE
    )
    stdout, _ = await process.communicate()

    assert stdout.decode().strip() == "False"
