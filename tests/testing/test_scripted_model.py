from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic_ai.direct import model_request, model_request_stream
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
from pydantic_ai.models.function import AgentInfo
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.usage import RequestUsage

from nestor.testing import (
    Script,
    ScriptedModel,
    ScriptExhausted,
    Step,
    ToolCall,
    call,
    fail,
    last_tool_results,
    reply,
)

PARAMETERS = ModelRequestParameters(
    function_tools=[
        ToolDefinition(name="read", parameters_json_schema={"type": "object"}),
        ToolDefinition(name="grep", parameters_json_schema={"type": "object"}),
    ],
    allow_text_output=True,
)
PROMPT: list[ModelMessage] = [ModelRequest.user_text_prompt("fix the bug")]


async def stream(
    model: ScriptedModel, messages: list[ModelMessage] = PROMPT
) -> tuple[list[ModelResponseStreamEvent], ModelResponse]:
    async with model_request_stream(model, messages, model_request_parameters=PARAMETERS) as streamed:
        events = [event async for event in streamed]
        return events, streamed.get()


async def request(model: ScriptedModel, messages: list[ModelMessage] = PROMPT) -> ModelResponse:
    return await model_request(model, messages, model_request_parameters=PARAMETERS)


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


def with_tool_results(*results: tuple[str, str, Any]) -> list[ModelMessage]:
    calls = [ToolCallPart(name, {}, call_id) for name, call_id, _ in results]
    returns = [ToolReturnPart(name, content, call_id) for name, call_id, content in results]
    return [*PROMPT, ModelResponse(parts=calls), ModelRequest(parts=returns)]


async def test_text_streams_in_the_requested_number_of_chunks() -> None:
    model = ScriptedModel([reply("hello world", chunks=3)])

    events, response = await stream(model)

    assert text_deltas(events) == ["hell", "o wo", "rld"]
    assert response.parts == [TextPart("hello world")]
    assert response.model_name == "scripted"


async def test_text_reply_without_streaming() -> None:
    model = ScriptedModel([reply("done")], model_name="fake-model")

    response = await request(model)

    assert response.parts == [TextPart("done")]
    assert response.model_name == "fake-model"


@pytest.mark.parametrize("streamed", [True, False])
async def test_one_tool_call_with_its_id(streamed: bool) -> None:
    model = ScriptedModel([call("read", {"path": "a.py"}, id="call-7")])

    response = (await stream(model))[1] if streamed else await request(model)

    [tool_call] = tool_calls(response)
    assert (tool_call.tool_name, tool_call.args_as_dict(), tool_call.tool_call_id) == (
        "read",
        {"path": "a.py"},
        "call-7",
    )


@pytest.mark.parametrize("streamed", [True, False])
async def test_text_then_two_parallel_calls_get_distinct_generated_ids(streamed: bool) -> None:
    model = ScriptedModel(
        [reply("Looking.") + call("read", {"path": "a.py"}) + call("grep", {"pattern": "bug"})]
    )

    response = (await stream(model))[1] if streamed else await request(model)

    assert response.parts[0] == TextPart("Looking.")
    assert [(c.tool_name, c.args_as_dict(), c.tool_call_id) for c in tool_calls(response)] == [
        ("read", {"path": "a.py"}, "scripted-call-1"),
        ("grep", {"pattern": "bug"}, "scripted-call-2"),
    ]


async def test_tool_call_arguments_stream_in_several_chunks_and_reassemble() -> None:
    model = ScriptedModel([call("read", {"path": "src/app.py", "limit": 20}, args_chunks=4)])

    events, response = await stream(model)

    argument_deltas = [
        e for e in events if isinstance(e, PartDeltaEvent) and isinstance(e.delta, ToolCallPartDelta)
    ]
    assert len(argument_deltas) == 3  # the first fragment arrives with the part start
    assert tool_calls(response)[0].args_as_dict() == {"path": "src/app.py", "limit": 20}


async def test_malformed_arguments_are_passed_through_as_text() -> None:
    model = ScriptedModel([call("read", '{"path": ')])

    _, response = await stream(model)

    assert tool_calls(response)[0].args == '{"path": '


@pytest.mark.parametrize("streamed", [True, False])
async def test_step_usage_is_reported(streamed: bool) -> None:
    usage = RequestUsage(input_tokens=1200, output_tokens=34, cache_read_tokens=1000)
    model = ScriptedModel([reply("hi", chunks=2, usage=usage)])

    response = (await stream(model))[1] if streamed else await request(model)

    assert response.usage == usage


@pytest.mark.parametrize("streamed", [True, False])
async def test_model_usage_applies_to_steps_without_their_own(streamed: bool) -> None:
    default = RequestUsage(input_tokens=10, output_tokens=2)
    model = ScriptedModel([reply("a"), reply("b", usage=RequestUsage(input_tokens=99))], usage=default)

    first = (await stream(model))[1] if streamed else await request(model)
    second = (await stream(model))[1] if streamed else await request(model)

    assert first.usage == default
    assert second.usage == RequestUsage(input_tokens=99)


async def test_exhausted_script_raises_with_the_last_request() -> None:
    model = ScriptedModel([reply("only one")])
    await stream(model)

    with pytest.raises(ScriptExhausted, match=r"request #2 .*fix the bug"):
        await stream(model)
    with pytest.raises(AssertionError, match="1 steps were scripted"):
        await request(model)
    assert len(model.requests) == 3


@pytest.mark.parametrize("streamed", [True, False])
async def test_error_step_raises_when_the_request_opens(streamed: bool) -> None:
    model = ScriptedModel([fail(ConnectionError("provider down")), reply("recovered")])

    with pytest.raises(ConnectionError, match="provider down"):
        if streamed:
            async with model_request_stream(model, PROMPT, model_request_parameters=PARAMETERS):
                pytest.fail("the stream opened")
        else:
            await request(model)
    assert (await request(model)).parts == [TextPart("recovered")]


async def test_error_step_with_text_breaks_the_stream_after_the_text() -> None:
    model = ScriptedModel([reply("partial answer", chunks=2) + fail(TimeoutError("stream cut"))])
    received: list[ModelResponseStreamEvent] = []

    with pytest.raises(TimeoutError, match="stream cut"):
        async with model_request_stream(model, PROMPT, model_request_parameters=PARAMETERS) as streamed:
            async for event in streamed:
                received.append(event)

    assert "".join(text_deltas(received)) == "partial answer"


@pytest.mark.parametrize("streamed", [True, False])
async def test_step_function_echoes_the_tool_results(streamed: bool) -> None:
    def echo(messages: list[ModelMessage], info: AgentInfo) -> Step:
        return reply(f"results: {last_tool_results(messages)}")

    model = ScriptedModel([echo])
    messages = with_tool_results(("read", "c1", "file text"), ("grep", "c2", "3 matches"))

    response = (await stream(model, messages))[1] if streamed else await request(model, messages)

    assert response.parts == [TextPart("results: ['file text', '3 matches']")]


async def test_async_step_function_sees_the_offered_tools() -> None:
    async def list_tools(messages: list[ModelMessage], info: AgentInfo) -> Step:
        await asyncio.sleep(0)
        return reply(",".join(tool.name for tool in info.function_tools))

    _, response = await stream(ScriptedModel([list_tools]))

    assert response.parts == [TextPart("read,grep")]


async def test_step_function_returning_a_non_step_is_a_type_error() -> None:
    model = ScriptedModel([lambda messages, info: "not a step"])  # type: ignore[list-item]

    with pytest.raises(TypeError, match="not a Step"):
        await request(model)


async def test_requests_are_recorded_with_messages_tools_and_mode() -> None:
    model = ScriptedModel([reply("one"), reply("two")])
    messages = list(PROMPT)

    await stream(model, messages)
    messages.append(ModelRequest.user_text_prompt("and now?"))
    await request(model, messages)

    first, second = model.requests
    assert (first.streamed, second.streamed) == (True, False)
    assert first.tool_names == ["read", "grep"]
    assert len(first.messages) == 1  # a copy, not the caller's list that grew afterwards
    assert len(second.messages) == 2
    assert model.script.played == 2 and model.script.remaining == 0


async def test_delay_holds_the_response_back() -> None:
    model = ScriptedModel([reply("late", delay=30)])

    with pytest.raises(TimeoutError):
        await asyncio.wait_for(request(model), timeout=0.05)


async def test_chunk_delay_holds_later_chunks_back() -> None:
    model = ScriptedModel([Step(text="ab", text_chunks=2, chunk_delay=30)])

    async def next_text_delta(events: AsyncIterator[ModelResponseStreamEvent]) -> str:
        async for event in events:
            if deltas := text_deltas([event]):
                return deltas[0]
        raise AssertionError("the stream ended")

    async with model_request_stream(model, PROMPT, model_request_parameters=PARAMETERS) as streamed:
        events = aiter(streamed)
        assert await next_text_delta(events) == "a"
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(next_text_delta(events), timeout=0.05)


async def test_a_script_can_be_shared_and_resumed() -> None:
    script = Script([reply("first"), reply("second")])

    await request(ScriptedModel(script))
    response = await request(ScriptedModel(script))

    assert response.parts == [TextPart("second")]


def test_steps_add_up_text_calls_and_options() -> None:
    usage = RequestUsage(output_tokens=5)
    error = RuntimeError("x")

    step = (
        reply("a", chunks=2) + reply("b", usage=usage) + call("read", {"p": 1}, args_chunks=3) + fail(error)
    )

    assert step == Step(
        text="ab",
        calls=(ToolCall("read", {"p": 1}),),
        usage=usage,
        text_chunks=2,
        args_chunks=3,
        error=error,
    )


def test_last_tool_results_reads_only_the_last_request() -> None:
    messages = with_tool_results(("read", "c1", "old"))
    messages += [ModelResponse(parts=[TextPart("ok")]), ModelRequest.user_text_prompt("next")]

    assert last_tool_results(with_tool_results(("read", "c1", {"lines": 3}))) == [{"lines": 3}]
    assert last_tool_results(messages) == []
    assert last_tool_results([]) == []
