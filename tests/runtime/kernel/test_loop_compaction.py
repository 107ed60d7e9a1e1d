"""The loop compacts its history: at the threshold, on a context overflow, on demand; and resumes after it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx2
import pytest
from pydantic import BaseModel
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ToolReturnPart, UserPromptPart
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.usage import RequestUsage

from nestor.core.events import Compacted, CompactionStarted, ErrorEvent
from nestor.runtime.features.compaction import SUMMARY_INSTRUCTIONS, SummaryModel
from nestor.runtime.kernel.context import ContextPolicy
from nestor.runtime.kernel.history import compaction_mark
from nestor.runtime.kernel.loop import SessionAgent
from nestor.testing import (
    HTTPErrorReply,
    ScriptedModel,
    ScriptedOpenAIServer,
    ServerReply,
    ServerToolCall,
    call,
    fail,
    reply,
)
from nestor.tools.base import Tool, ToolContext
from tests.runtime.support import EchoTool, Harness

# Threshold 8,500 tokens; recent turns keep up to 2,000. Each blob result adds ~3,000 tokens, so with
# the usage scripted below the request after the third (or second) blob passes the threshold.
WINDOW = 10_000


class BlobParams(BaseModel):
    name: str


class BlobTool(Tool[BlobParams]):
    """Returns 12,000 characters (~3,000 tokens) tagged with the name asked for."""

    name = "blob"
    params_model = BlobParams
    read_only = True

    @property
    def description(self) -> str:
        return "Return a big blob."

    async def run(self, params: BlobParams, ctx: ToolContext) -> str:
        return f"blob {params.name}\n" + "z" * 12_000


def used(input_tokens: int) -> RequestUsage:
    return RequestUsage(input_tokens=input_tokens, output_tokens=50)


def summarizer(*steps: object) -> tuple[ScriptedModel, SummaryModel]:
    model = ScriptedModel(list(steps))  # pyright: ignore[reportArgumentType]
    return model, SummaryModel(
        model=model, name="test:summarizer", settings=None, priced=False, context_window=WINDOW
    )


def first_text(message: ModelMessage) -> str:
    assert isinstance(message, ModelRequest)
    part = message.parts[0]
    assert isinstance(part, UserPromptPart)
    return str(part.content)


async def test_a_long_session_compacts_at_the_threshold_and_continues_on_the_summary(
    harness: Harness,
) -> None:
    main = ScriptedModel(
        [
            call("blob", {"name": "one"}, usage=used(1_000)),
            call("blob", {"name": "two"}, usage=used(4_100)),
            call("blob", {"name": "three"}, usage=used(7_200)),
            reply("all done", usage=used(4_000)),
        ]
    )
    summary_model, summary = summarizer(
        reply("## Goal\nSUMMARY-XYZ", usage=RequestUsage(input_tokens=5_000, output_tokens=300))
    )
    agent = harness.agent(
        main, [BlobTool()], context=ContextPolicy(context_window=WINDOW), summarizer=summary
    )

    result = await agent.run("read the three blobs")

    assert result.text == "all done" and not result.is_error
    # The fourth request starts with the summary, then the kept turn: the last call and its result.
    sent = main.requests[3].messages
    assert "SUMMARY-XYZ" in first_text(sent[0]) and compaction_mark(sent[0]) is not None
    assert isinstance(sent[1], ModelResponse) and sent[1].parts[0].tool_name == "blob"  # pyright: ignore[reportAttributeAccessIssue]
    assert isinstance(sent[2], ModelRequest) and isinstance(sent[2].parts[0], ToolReturnPart)
    assert "blob three" in str(sent[2].parts[0].content)
    assert len(sent) == 3 and all("blob one" not in str(m) for m in sent)
    # The summariser saw the older part, with its instructions, and not the kept turn.
    request = summary_model.requests[0]
    assert request.info.instructions == SUMMARY_INSTRUCTIONS
    transcript = first_text(request.messages[0])
    assert "read the three blobs" in transcript and "blob one" in transcript and "blob two" in transcript
    assert "blob three" not in transcript
    # Events say when and how much.
    started = [e for e in harness.events if isinstance(e, CompactionStarted)]
    done = [e for e in harness.events if isinstance(e, Compacted)]
    assert [e.trigger for e in started] == ["threshold"] and started[0].context_tokens > 8_500
    assert done[0].summarized_messages == 5 and done[0].kept_messages == 2
    assert done[0].tokens_after < done[0].tokens_before
    # The store keeps everything, with the summary as a marked message of its own and its cost counted.
    stored = harness.messages.list(agent.session_id)
    assert len(stored) == 9 and compaction_mark(stored[7]) is not None
    totals = harness.sessions.get(agent.session_id).usage
    assert totals.input_tokens == 1_000 + 4_100 + 7_200 + 4_000 + 5_000
    assert result.usage.requests == 5  # the summary request is part of the run's spending


async def test_a_resumed_session_sees_the_compacted_history(harness: Harness) -> None:
    main = ScriptedModel(
        [
            call("blob", {"name": "one"}, usage=used(1_000)),
            call("blob", {"name": "two"}, usage=used(7_200)),
            reply("first run done", usage=used(3_000)),
        ]
    )
    _, summary = summarizer(reply("SUMMARY-RESUME"))
    agent = harness.agent(
        main, [BlobTool()], context=ContextPolicy(context_window=WINDOW), summarizer=summary
    )
    await agent.run("go")

    later = ScriptedModel([reply("second run done", usage=used(3_500))])
    resumed = harness.agent(
        later, [BlobTool()], session_id=agent.session_id, context=ContextPolicy(context_window=WINDOW)
    )
    assert resumed.history == agent.history
    # Usage reported before the compaction is not trusted; the last response's is.
    assert 3_000 <= resumed.context_tokens() < 4_000
    await resumed.run("and now?")
    sent = later.requests[0].messages
    assert "SUMMARY-RESUME" in first_text(sent[0])
    assert first_text(sent[-1]) == "and now?"


async def test_compaction_on_demand_uses_the_focus_and_needs_an_idle_agent(harness: Harness) -> None:
    main = ScriptedModel([call("echo", {"text": "a"}), reply("first"), reply("second")])
    summary_model, summary = summarizer(reply("SUMMARY-MANUAL"))
    agent = harness.agent(main, [EchoTool()], summarizer=summary)  # no automatic compaction
    await agent.run("start")

    event = await agent.compact("the parser work")

    assert event is not None and event.trigger == "manual"
    assert "focus on: the parser work" in first_text(summary_model.requests[0].messages[0])
    assert "SUMMARY-MANUAL" in first_text(agent.history[0])
    await agent.run("continue")
    assert "SUMMARY-MANUAL" in first_text(main.requests[-1].messages[0])


async def test_compaction_with_nothing_to_summarise_does_nothing(harness: Harness) -> None:
    agent = harness.agent(ScriptedModel([]))
    assert await agent.compact() is None
    assert not any(isinstance(e, CompactionStarted) for e in harness.events)


async def test_a_failed_summary_at_the_threshold_is_reported_and_the_run_goes_on(harness: Harness) -> None:
    main = ScriptedModel(
        [
            call("blob", {"name": "one"}, usage=used(1_000)),
            call("blob", {"name": "two"}, usage=used(7_200)),
            reply("done anyway", usage=used(9_000)),
        ]
    )
    _, summary = summarizer(fail(RuntimeError("summariser exploded")))
    agent = harness.agent(
        main, [BlobTool()], context=ContextPolicy(context_window=WINDOW), summarizer=summary
    )

    result = await agent.run("go")

    assert result.text == "done anyway" and not result.is_error
    errors = [e for e in harness.events if isinstance(e, ErrorEvent)]
    assert len(errors) == 1 and "compaction failed" in errors[0].message
    assert all(compaction_mark(m) is None for m in harness.messages.list(agent.session_id))


class HugeTool(BlobTool):
    """Returns ~10,000 tokens: one result alone passes the threshold."""

    name = "huge"

    async def run(self, params: BlobParams, ctx: ToolContext) -> str:
        return f"huge {params.name}\n" + "h" * 40_000


async def test_a_compaction_that_cannot_get_under_the_threshold_is_not_repeated_at_once(
    harness: Harness,
) -> None:
    main = ScriptedModel(
        [
            call("huge", {"name": "one"}, usage=used(1_000)),
            call("huge", {"name": "two"}, usage=used(12_000)),
            reply("done", usage=used(22_000)),
        ]
    )
    # One summary only: a second compaction would find the script exhausted and report an error.
    _, summary = summarizer(reply("SUMMARY-ONCE"))
    agent = harness.agent(
        main, [HugeTool()], context=ContextPolicy(context_window=WINDOW), summarizer=summary
    )

    result = await agent.run("go")

    assert result.text == "done" and not result.is_error
    compactions = [e for e in harness.events if isinstance(e, Compacted)]
    assert len(compactions) == 1 and compactions[0].tokens_after > 8_500  # the kept result is too big
    assert not any(isinstance(e, ErrorEvent) for e in harness.events)


async def test_cancelling_during_compaction_keeps_the_history_as_it_was(harness: Harness) -> None:
    main = ScriptedModel(
        [call("blob", {"name": "one"}, usage=used(1_000)), call("blob", {"name": "two"}, usage=used(7_200))]
    )
    _, summary = summarizer(reply("never used", delay=30))
    agent = harness.agent(
        main, [BlobTool()], context=ContextPolicy(context_window=WINDOW), summarizer=summary
    )
    compacting = asyncio.Event()
    harness.bus.subscribe(lambda e: compacting.set() if isinstance(e, CompactionStarted) else None)

    task = asyncio.create_task(agent.run("go"))
    async with asyncio.timeout(10):
        await compacting.wait()
    agent.cancel()
    result = await task

    assert result.stop_reason == "cancelled"
    stored = harness.messages.list(agent.session_id)
    assert all(compaction_mark(m) is None for m in stored)
    assert agent.history == stored


# -- over real HTTP: a provider's context-overflow error -------------------------------------------

OVERFLOW = HTTPErrorReply(
    400,
    body={
        "error": {
            "message": "This model's maximum context length is 128000 tokens. However, you requested 131000.",
            "type": "invalid_request_error",
            "code": "context_length_exceeded",
        }
    },
)


@pytest.fixture
async def client() -> AsyncIterator[httpx2.AsyncClient]:
    async with httpx2.AsyncClient() as http:
        yield http


def http_agent(
    harness: Harness, server: ScriptedOpenAIServer, client: httpx2.AsyncClient, **options: object
) -> SessionAgent:
    provider = OpenAIProvider(base_url=server.base_url, api_key="test", http_client=client)
    agent = harness.agent(
        OpenAIChatModel("gpt-4o", provider=provider),
        [EchoTool()],
        context=ContextPolicy(context_window=128_000, **options),  # pyright: ignore[reportArgumentType]
    )
    agent.setup.model_settings = {"max_retries": 0}
    return agent


async def test_an_overflow_error_compacts_and_retries_once(
    harness: Harness, client: httpx2.AsyncClient
) -> None:
    script = [
        ServerReply(tool_calls=(ServerToolCall("echo", {"text": "ping"}),)),
        OVERFLOW,
        ServerReply(text="SUMMARY-OVERFLOW"),  # the summary request, to the same model
        ServerReply(text="answered after compaction"),
    ]
    with ScriptedOpenAIServer(script) as server:
        agent = http_agent(harness, server, client)
        result = await agent.run("ping it")
        requests = server.requests

    assert result.text == "answered after compaction" and not result.is_error
    assert len(requests) == 4
    assert SUMMARY_INSTRUCTIONS.splitlines()[0] in requests[2]["messages"][0]["content"]
    retried = requests[3]["messages"]
    roles = [m["role"] for m in retried]
    assert roles == ["system", "user", "assistant", "tool"]
    assert "SUMMARY-OVERFLOW" in retried[1]["content"] and retried[3]["content"] == "echo: ping"
    assert [e.trigger for e in harness.events if isinstance(e, Compacted)] == ["overflow"]


async def test_a_second_overflow_fails_the_run_with_a_hint(
    harness: Harness, client: httpx2.AsyncClient
) -> None:
    script = [
        ServerReply(tool_calls=(ServerToolCall("echo", {"text": "ping"}),)),
        OVERFLOW,
        ServerReply(text="SUMMARY"),
        OVERFLOW,
    ]
    with ScriptedOpenAIServer(script) as server:
        agent = http_agent(harness, server, client)
        result = await agent.run("ping it")
        assert len(server.requests) == 4

    assert result.is_error and "maximum context length" in result.text
    assert result.hint is not None and "/compact" in result.hint


async def test_without_auto_compaction_an_overflow_fails_at_once(
    harness: Harness, client: httpx2.AsyncClient
) -> None:
    script = [ServerReply(tool_calls=(ServerToolCall("echo", {"text": "ping"}),)), OVERFLOW]
    with ScriptedOpenAIServer(script) as server:
        agent = http_agent(harness, server, client, auto_compact=False)
        result = await agent.run("ping it")
        assert len(server.requests) == 2

    assert result.is_error and result.hint is not None and "/compact" in result.hint
    assert not any(isinstance(e, CompactionStarted) for e in harness.events)
