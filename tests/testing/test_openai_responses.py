from __future__ import annotations

import time

from pydantic_ai.direct import model_request, model_request_stream
from pydantic_ai.messages import ModelMessage, ModelRequest, TextPart, ToolCallPart
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.models.openai import OpenAIResponsesModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import ToolDefinition

from nestor.testing import ScriptedOpenAIServer, ServerReply, ServerToolCall, ServerUsage

NO_RETRIES: ModelSettings = {"max_retries": 0}
READ_TOOL = ToolDefinition(
    name="read",
    description="Read a file.",
    parameters_json_schema={"type": "object", "properties": {"path": {"type": "string"}}},
)
PARAMETERS = ModelRequestParameters(function_tools=[READ_TOOL], allow_text_output=True)
PROMPT: list[ModelMessage] = [ModelRequest.user_text_prompt("what is in a.py?")]


def _model(server: ScriptedOpenAIServer) -> OpenAIResponsesModel:
    return OpenAIResponsesModel("gpt-test", provider=OpenAIProvider(base_url=server.base_url, api_key="k"))


async def test_streamed_text_and_tool_call_reach_the_responses_client() -> None:
    step = ServerReply(
        text="Looking.", tool_calls=(ServerToolCall("read", {"path": "a.py"}),), chunks=3, args_chunks=2
    )
    with ScriptedOpenAIServer([step]) as server:
        async with model_request_stream(
            _model(server), PROMPT, model_settings=NO_RETRIES, model_request_parameters=PARAMETERS
        ) as stream:
            async for _event in stream:
                pass
            response = stream.get()
    texts = [part.content for part in response.parts if isinstance(part, TextPart)]
    calls = [part for part in response.parts if isinstance(part, ToolCallPart)]
    assert texts == ["Looking."]
    assert [(call.tool_name, call.args_as_dict()) for call in calls] == [("read", {"path": "a.py"})]
    assert server.requests[0]["tools"][0]["name"] == "read"
    assert server.requests[0]["stream"] is True


async def test_non_streamed_response_carries_the_scripted_usage() -> None:
    step = ServerReply(text="ok", usage=ServerUsage(prompt_tokens=120, completion_tokens=7))
    with ScriptedOpenAIServer([step]) as server:
        response = await model_request(
            _model(server), PROMPT, model_settings=NO_RETRIES, model_request_parameters=PARAMETERS
        )
    assert [part.content for part in response.parts if isinstance(part, TextPart)] == ["ok"]
    assert (response.usage.input_tokens, response.usage.output_tokens) == (120, 7)


async def test_each_request_records_when_it_arrived() -> None:
    with ScriptedOpenAIServer([ServerReply(text="a"), ServerReply(text="b")]) as server:
        before = time.time()
        await model_request(_model(server), PROMPT, model_settings=NO_RETRIES)
        between = time.time()
        await model_request(_model(server), PROMPT, model_settings=NO_RETRIES)
        after = time.time()
    first, second = server.request_times
    assert before <= first <= between <= second <= after
    assert len(server.request_times) == len(server.requests)
