"""One chat-completions request's CPU in this process: the OpenAI SDK's stock client against nestor's.

The same pydantic-ai model and history (a conversation of tool calls and their results, 11 tools)
sent over each client in turn, to the scripted server on 127.0.0.1 in a process of its own (it
answers at once, a short streamed text): CPU seconds of this process per request, the median of
interleaved batches, at 30 and at 300 messages. nestor's client sends the messages and tools
around the SDK's walk of the request body (``nestor.providers.openai_client``); the ratio is what
that saves each request of each agent, time during which the event loop runs nothing else.
"""

from __future__ import annotations

import asyncio
import statistics
import time

from pydantic_ai.direct import model_request_stream
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai_compatible import OpenAICompatibleProvider
from pydantic_ai.tools import ToolDefinition

from nestor.providers.openai_client import openai_client
from tui import Provider  # the scripted server in a process of its own

BATCHES = 7
PER_BATCH = 10
TOOLS = [
    ToolDefinition(
        name=f"tool_{i}",
        description="Does one thing to the files of the project, described at some length. " * 3,
        parameters_json_schema={
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "A path in the project."},
                "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                "mode": {"enum": ["a", "b", "c"]},
            },
            "required": ["path"],
        },
    )
    for i in range(11)
]


def history(messages: int) -> list[ModelMessage]:
    """``messages`` messages: a prompt, then calls of ``grep`` and their results, and a last prompt."""
    turns: list[ModelMessage] = [ModelRequest.user_text_prompt("Find where the parser breaks.")]
    for index in range((messages - 2) // 2):
        call = ToolCallPart("tool_0", {"path": f"src/module_{index}.py"}, tool_call_id=f"call_{index}")
        turns.append(ModelResponse(parts=[TextPart("Looking at the next module."), call]))
        result = "\n".join(f"{line}: def function_{line}(argument):" for line in range(20))
        turns.append(ModelRequest(parts=[ToolReturnPart("tool_0", result, tool_call_id=f"call_{index}")]))
    turns.append(ModelRequest.user_text_prompt("And now?"))
    return turns


async def cpu_per_request(model: OpenAIChatModel, messages: list[ModelMessage]) -> float:
    """CPU seconds of this process per streamed request, over a batch."""
    parameters = ModelRequestParameters(function_tools=TOOLS, allow_text_output=True)
    started = time.process_time()
    for _ in range(PER_BATCH):
        async with model_request_stream(model, messages, model_request_parameters=parameters) as stream:
            async for _event in stream:
                pass
    return (time.process_time() - started) / PER_BATCH


async def measure(base_url: str, size: int) -> tuple[float, float]:
    """Median CPU per request with the stock client and with nestor's, interleaved batches."""
    stock = OpenAIChatModel("m", provider=OpenAICompatibleProvider("bench", base_url=base_url, api_key="k"))
    ours_client = openai_client(base_url=base_url, api_key="k", http_client=None)
    ours = OpenAIChatModel("m", provider=OpenAICompatibleProvider("bench", openai_client=ours_client))
    messages = history(size)
    await cpu_per_request(stock, messages)  # warm-up: imports, connections
    await cpu_per_request(ours, messages)
    stock_runs: list[float] = []
    ours_runs: list[float] = []
    for _ in range(BATCHES):
        stock_runs.append(await cpu_per_request(stock, messages))
        ours_runs.append(await cpu_per_request(ours, messages))
    return statistics.median(stock_runs), statistics.median(ours_runs)


def main() -> None:
    """Print CPU per request for both clients at two history sizes."""
    provider = Provider(0.0)
    try:
        print("OpenAI chat request: CPU of this process per request, the SDK's client / nestor's")
        print(f"  (11 tools, a streamed reply; median of {BATCHES} interleaved batches of {PER_BATCH})")
        for size in (30, 300):
            stock, ours = asyncio.run(measure(provider.base_url, size))
            print(
                f"  {size:4d} messages   {stock * 1000:6.1f} ms / {ours * 1000:6.1f} ms   "
                f"({stock / ours:.1f}x less CPU)"
            )
    finally:
        provider.close()


if __name__ == "__main__":
    main()
