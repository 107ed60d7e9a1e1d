"""Session titles: the writer against scripted small models, the hook on real agent runs."""

from __future__ import annotations

import asyncio

import pytest
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo
from pydantic_ai.usage import RequestUsage

from nestor.core.events import SessionTitled
from nestor.runtime.features.titles import TitleHook, TitleWriter, clean_title, first_prompt
from nestor.testing import ScriptedModel, ScriptExhausted, Step, fail, reply
from tests.runtime.support import Harness


def writer_for(harness: Harness, model: ScriptedModel, *, timeout_s: float = 20.0) -> TitleWriter:
    return TitleWriter(model, sessions=harness.sessions, bus=harness.bus, priced=False, timeout_s=timeout_s)


def new_session(harness: Harness, title: str = "fix the bug") -> str:
    return harness.sessions.create(str(harness.root), title=title).id


def titled_events(harness: Harness) -> list[SessionTitled]:
    return [event for event in harness.events if isinstance(event, SessionTitled)]


def sent_text(model: ScriptedModel, index: int = 0) -> str:
    request = model.requests[index].messages[-1]
    assert isinstance(request, ModelRequest)
    return "\n".join(str(part.content) for part in request.parts if isinstance(part, UserPromptPart))


class Blocked:
    """A scripted step that never answers until released: a model request that hangs."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def step(self, messages: list[ModelMessage], info: AgentInfo) -> Step:
        self.entered.set()
        await self.release.wait()
        return reply("Too late")


async def test_title_is_stored_and_published(harness: Harness) -> None:
    model = ScriptedModel([reply("Fix the parser bug")])
    session_id = new_session(harness)
    title = await writer_for(harness, model).write(session_id, "fix the bug in parser.py", "Fixed it.")
    assert title == "Fix the parser bug"
    assert harness.sessions.get(session_id).title == "Fix the parser bug"
    assert [(e.agent_id, e.title) for e in titled_events(harness)] == [(session_id, "Fix the parser bug")]


async def test_the_small_model_gets_the_prompt_the_answer_and_short_instructions(harness: Harness) -> None:
    model = ScriptedModel([reply("Parser fix")])
    await writer_for(harness, model).write(new_session(harness), "fix the bug in parser.py", "Fixed it.")
    [request] = model.requests
    assert request.streamed is False
    text = sent_text(model)
    assert "fix the bug in parser.py" in text and "Fixed it." in text
    assert request.info.instructions is not None and "3 to 7 words" in request.info.instructions
    assert request.tool_names == []


async def test_long_prompt_and_answer_are_cut(harness: Harness) -> None:
    model = ScriptedModel([reply("Big input")])
    prompt, answer = "p" * 50_000, "a" * 50_000
    await writer_for(harness, model).write(new_session(harness), prompt, answer)
    text = sent_text(model)
    assert 1000 < text.count("p") < 10_000 and 1000 < text.count("a") < 10_000


@pytest.mark.parametrize(
    ("reply_text", "expected"),
    [
        ('"Fix the parser bug."', "Fix the parser bug"),
        ("Title: Fix the parser bug", "Fix the parser bug"),
        ('**Title:** "Fix the parser bug"', "Fix the parser bug"),
        ("# Fix the parser bug\n\nThis conversation is about a bug.", "Fix the parser bug"),
        ("```\nFix the parser bug\n```", "Fix the parser bug"),
        ("«Corriger le bug du parseur»", "Corriger le bug du parseur"),
        ("Port the parser to C#", "Port the parser to C#"),
        ("Why does login fail?", "Why does login fail?"),
        ("  many   spaces\there  ", "many spaces here"),
    ],
)
def test_clean_title(reply_text: str, expected: str) -> None:
    assert clean_title(reply_text) == expected


def test_clean_title_caps_an_overlong_title_at_a_word() -> None:
    title = clean_title("word " * 40)
    assert len(title) <= 80 and title.endswith("...")
    assert title.removesuffix("...").split() == ["word"] * len(title.removesuffix("...").split())


@pytest.mark.parametrize("empty", ["", "   \n\n", '""', "Title:", "..."])
def test_clean_title_of_nothing_is_empty(empty: str) -> None:
    assert clean_title(empty) == ""


@pytest.mark.parametrize(
    ("steps", "error_type"),
    [
        ([fail(RuntimeError("provider down"))], RuntimeError),
        ([], ScriptExhausted),
        ([reply("")], ValueError),
        ([reply('""')], ValueError),
    ],
)
async def test_a_failed_title_leaves_the_first_line_title(
    harness: Harness, steps: list[Step], error_type: type[Exception]
) -> None:
    writer = writer_for(harness, ScriptedModel(steps))
    session_id = new_session(harness)
    task = writer.start(session_id, "fix the bug\nin parser.py", "Done.")
    await writer.wait()
    assert task.done() and not task.cancelled() and task.exception() is None
    assert task.result() is None
    assert isinstance(writer.last_error, error_type)
    assert harness.sessions.get(session_id).title == "fix the bug"
    assert titled_events(harness) == []


async def test_a_title_request_that_hangs_times_out(harness: Harness) -> None:
    blocked = Blocked()
    writer = writer_for(harness, ScriptedModel([blocked.step]), timeout_s=0.05)
    session_id = new_session(harness)
    assert await writer.write(session_id, "fix the bug", "Done.") is None
    assert isinstance(writer.last_error, TimeoutError)
    assert harness.sessions.get(session_id).title == "fix the bug"
    assert titled_events(harness) == []


async def test_the_title_request_usage_joins_the_session_totals_and_rolls_up(harness: Harness) -> None:
    parent = new_session(harness, "parent")
    child = harness.sessions.create(str(harness.root), parent_id=parent).id
    model = ScriptedModel([reply("Child title", usage=RequestUsage(input_tokens=120, output_tokens=8))])
    await writer_for(harness, model).write(child, "do the sub-task", "Done.")
    for session_id in (child, parent):
        usage = harness.sessions.get(session_id).usage
        assert (usage.requests, usage.input_tokens, usage.output_tokens) == (1, 120, 8)


async def test_usage_is_counted_even_when_the_reply_is_no_title(harness: Harness) -> None:
    model = ScriptedModel([reply("", usage=RequestUsage(input_tokens=50, output_tokens=1))])
    session_id = new_session(harness)
    assert await writer_for(harness, model).write(session_id, "hi", "hello") is None
    assert harness.sessions.get(session_id).usage.input_tokens == 50


async def test_wait_returns_at_its_timeout_and_cancel_stops_the_request(harness: Harness) -> None:
    blocked = Blocked()
    writer = writer_for(harness, ScriptedModel([blocked.step]))
    session_id = new_session(harness)
    task = writer.start(session_id, "fix the bug", "Done.")
    await blocked.entered.wait()
    await writer.wait(timeout=0.01)
    assert writer.pending == 1
    writer.cancel()
    await writer.wait()
    assert task.cancelled() and writer.pending == 0
    assert harness.sessions.get(session_id).title == "fix the bug"
    assert titled_events(harness) == []


async def test_hook_titles_a_new_session_after_its_first_run_only(harness: Harness) -> None:
    title_model = ScriptedModel([reply("Parser bug fixed")])
    writer = writer_for(harness, title_model)
    hook = TitleHook(writer, harness.messages)
    agent = harness.agent(
        ScriptedModel([reply("I fixed the parser."), reply("Anything else?")]), hooks=[hook]
    )
    harness.sessions.set_title(agent.session_id, "fix the parser")
    await agent.run("fix the parser")
    await writer.wait()
    assert harness.sessions.get(agent.session_id).title == "Parser bug fixed"
    text = sent_text(title_model)
    assert "fix the parser" in text and "I fixed the parser." in text

    await agent.run("thanks")
    await writer.wait()
    assert len(title_model.requests) == 1 and writer.last_error is None
    assert harness.sessions.get(agent.session_id).title == "Parser bug fixed"
    assert len(titled_events(harness)) == 1


async def test_hook_waits_for_a_run_that_does_not_end_in_an_error(harness: Harness) -> None:
    title_model = ScriptedModel([reply("Second try title")])
    writer = writer_for(harness, title_model)
    hook = TitleHook(writer, harness.messages)
    agent = harness.agent(
        ScriptedModel([fail(ValueError("bad request")), reply("Now it works.")]), hooks=[hook]
    )
    failed = await agent.run("first prompt")
    assert failed.is_error
    await writer.wait()
    assert title_model.requests == [] and not hook.started

    await agent.run("second prompt")
    await writer.wait()
    assert harness.sessions.get(agent.session_id).title == "Second try title"
    # The session's first prompt names it, whichever run got the title written.
    assert "first prompt" in sent_text(title_model) and "Now it works." in sent_text(title_model)


def test_first_prompt_is_the_first_user_prompt() -> None:
    messages: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart("the first one")]),
        ModelResponse(parts=[TextPart("answer")]),
        ModelRequest(parts=[UserPromptPart("the second one")]),
    ]
    assert first_prompt(messages) == "the first one"
    assert (
        first_prompt([ModelRequest(parts=[UserPromptPart(["part one", "part two"])])]) == "part one\npart two"
    )
    assert first_prompt([]) == ""
