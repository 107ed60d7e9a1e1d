"""The chat-completions client that skips the SDK's walk of the body: the server receives the same request.

Each request is sent twice, over a stock ``AsyncOpenAI`` and over nestor's :class:`OpenAIClient`, to
the scripted server on 127.0.0.1; the bodies it received must be equal, whatever the messages hold
(text, images, audio, a PDF, thinking, tool calls, their returns and a retry) and the settings are.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolUnionParam
from pydantic_ai.direct import model_request, model_request_stream
from pydantic_ai.messages import (
    BinaryContent,
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIChatModelSettings
from pydantic_ai.providers.openai_compatible import OpenAICompatibleProvider
from pydantic_ai.tools import ToolDefinition

from nestor.config.sections import ModelConfig, NamedProviderConfig
from nestor.config.settings import Settings
from nestor.providers.build import build_model
from nestor.providers.openai_client import ChatCompletions, OpenAIClient, openai_client
from nestor.testing import ScriptedOpenAIServer, ServerReply

HISTORY: list[ModelMessage] = [
    ModelRequest(
        parts=[
            SystemPromptPart("You are terse."),
            UserPromptPart(
                [
                    "Look at these.",
                    ImageUrl(url="http://127.0.0.1:9/plot.png"),
                    BinaryContent(data=b"\x89PNG\r\n\x1a\nnot really", media_type="image/png"),
                    BinaryContent(data=b"RIFF....WAVEfmt ", media_type="audio/wav"),
                    BinaryContent(data=b"%PDF-1.4\n%\xe2\xe3", media_type="application/pdf"),
                ]
            ),
        ]
    ),
    ModelResponse(
        parts=[
            ThinkingPart("Let me search."),
            TextPart('Searching — ünïcödé, "quotes" and \\ backslashes.'),
            ToolCallPart("grep", {"pattern": "def (\\w+)", "paths": ["src", "tests"]}, tool_call_id="call_1"),
            ToolCallPart("view", '{"path": "a.py"}', tool_call_id="call_2"),
        ]
    ),
    ModelRequest(
        parts=[
            ToolReturnPart("grep", {"matches": [{"line": 3, "text": "def f():"}]}, tool_call_id="call_1"),
            ToolReturnPart("view", "path must be relative", tool_call_id="call_2", outcome="retried"),
        ]
    ),
    ModelResponse(parts=[TextPart("Found it.")]),
    ModelRequest(parts=[UserPromptPart("And now?")]),
]

TOOLS = [
    ToolDefinition(
        name="grep",
        description="Search files.",
        parameters_json_schema={
            "type": "object",
            "properties": {
                "pattern": {"type": "string"},
                "paths": {"type": "array", "items": {"type": "string"}},
                "mode": {"enum": ["regex", "literal"], "default": "regex"},
                "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            },
            "required": ["pattern"],
            "additionalProperties": False,
        },
    ),
    ToolDefinition(
        name="view",
        description="Show a file.",
        parameters_json_schema={
            "$defs": {"Range": {"type": "object", "properties": {"start": {"type": "integer"}}}},
            "type": "object",
            "properties": {"path": {"type": "string"}, "range": {"$ref": "#/$defs/Range"}},
            "required": ["path"],
        },
        strict=True,
    ),
]

SETTINGS_CASES: list[OpenAIChatModelSettings] = [
    {},
    {
        "temperature": 0.2,
        "seed": 7,
        "max_tokens": 300,
        "stop_sequences": ["\n\nUser:"],
        "parallel_tool_calls": False,
        "openai_user": "someone",
        "extra_body": {"top_k": 20, "chat_template_kwargs": {"enable_thinking": False}},
        "max_retries": 0,
    },
]


def _model(server: ScriptedOpenAIServer, *, ours: bool) -> OpenAIChatModel:
    if ours:
        client = openai_client(base_url=server.base_url, api_key="k", http_client=None)
        provider = OpenAICompatibleProvider("gateway", openai_client=client)
    else:
        provider = OpenAICompatibleProvider("gateway", base_url=server.base_url, api_key="k")
    return OpenAIChatModel("some-model", provider=provider)


async def _send(
    model: OpenAIChatModel, settings: OpenAIChatModelSettings, *, stream: bool, tools: bool
) -> None:
    parameters = ModelRequestParameters(function_tools=TOOLS if tools else [], allow_text_output=True)
    if stream:
        async with model_request_stream(
            model, HISTORY, model_settings=settings, model_request_parameters=parameters
        ) as response:
            async for _event in response:
                pass
    else:
        await model_request(model, HISTORY, model_settings=settings, model_request_parameters=parameters)


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("tools", [True, False])
@pytest.mark.parametrize("settings", SETTINGS_CASES)
async def test_the_server_receives_the_same_body_as_from_the_stock_client(
    stream: bool, tools: bool, settings: OpenAIChatModelSettings
) -> None:
    with ScriptedOpenAIServer([ServerReply(text="ok", chunks=2)] * 2) as server:
        await _send(_model(server, ours=False), settings, stream=stream, tools=tools)
        await _send(_model(server, ours=True), settings, stream=stream, tools=tools)
        stock, ours = server.requests
    assert ours == stock
    assert ("tools" in ours) is tools and len(ours["messages"]) == 7


async def test_messages_and_tools_go_around_the_sdks_walk_and_a_callers_extra_body_wins() -> None:
    client = openai_client(base_url="http://127.0.0.1:9/v1", api_key="k", http_client=None)
    messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hi"}]
    tools: list[ChatCompletionToolUnionParam] = [
        {"type": "function", "function": {"name": "grep", "parameters": {"type": "object"}}}
    ]
    completions = ChatCompletions(client)
    posted: list[tuple[Any, Any]] = []

    async def post(path: str, *, body: Any = None, options: Any = None, **rest: Any) -> str:
        posted.append((body, options))  # what the SDK's create sends: the walked body, the extra JSON
        return "posted"

    # The SDK's resources send through this attribute, copied from the client when they are made.
    completions._post = post  # pyright: ignore[reportAttributeAccessIssue]
    await completions.create(
        model="m", messages=messages, tools=tools, temperature=0.5, extra_body={"top_k": 3, "tools": []}
    )
    await completions.create(model="m", messages=iter(messages))
    (walked, options), (walked_plain, options_plain) = posted
    assert walked == {"model": "m", "messages": [], "temperature": 0.5}
    assert options["extra_json"] == {"messages": messages, "tools": [], "top_k": 3}
    assert walked_plain == {"model": "m", "messages": []}
    assert options_plain["extra_json"] == {"messages": messages}


def test_copies_of_the_client_keep_the_chat_completions_that_skip_the_walk() -> None:
    # pydantic-ai sends each request through client.with_options(max_retries=...), a copy.
    client = openai_client(base_url="http://127.0.0.1:9/v1", api_key="k", http_client=None)
    copy = client.with_options(max_retries=0)
    assert isinstance(copy, OpenAIClient)
    assert isinstance(copy.chat.completions, ChatCompletions)
    assert copy.chat.completions is copy.chat.completions  # cached, as the SDK's are


def _built_client(
    tmp_path: Path, config: ModelConfig, providers: dict[str, Any], env: dict[str, str]
) -> object:
    settings = Settings(project_root=tmp_path, data_dir=tmp_path / "data", providers=providers)
    model = build_model(config, settings, env=env).model
    assert isinstance(model, OpenAIChatModel)
    return model.client


def test_every_chat_completions_model_built_uses_the_client_that_skips_the_walk(tmp_path: Path) -> None:
    gateway = NamedProviderConfig(type="openai", base_url="http://127.0.0.1:9/v1")
    assert isinstance(
        _built_client(tmp_path, ModelConfig(model="gw:some-model"), {"gw": gateway}, {}), OpenAIClient
    )
    chat = ModelConfig(model="openai-chat:gpt-4.1")
    assert isinstance(_built_client(tmp_path, chat, {}, {"OPENAI_API_KEY": "k"}), OpenAIClient)
    ollama = ModelConfig(model="ollama:qwen3")
    assert isinstance(_built_client(tmp_path, ollama, {}, {}), OpenAIClient)
