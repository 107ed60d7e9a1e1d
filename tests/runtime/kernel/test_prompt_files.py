"""Prompts with images through the loop: sent, stored, reloaded; models that take none; the harness's text."""

from __future__ import annotations

import pytest
from pydantic_ai.messages import BinaryContent, ModelMessage, ModelRequest, ModelResponse, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from nestor.core.errors import NestorError
from nestor.core.events import PromptQueued
from nestor.runtime.kernel.driver import HarnessHost
from nestor.runtime.kernel.loop import SessionAgent
from nestor.runtime.kernel.prompt_files import check_prompt_files, leave_out_files
from tests.runtime.support import Harness, scripted

PNG = BinaryContent(data=b"\x89PNG\r\n\x1a\n-a-tiny-image-", media_type="image/png")


def user_contents(messages: list[ModelMessage]) -> list[object]:
    """Each user prompt's content, an image as its media type and bytes (a reloaded one is a subclass)."""

    def shape(item: object) -> object:
        return (item.media_type, item.data) if isinstance(item, BinaryContent) else item

    return [
        part.content if isinstance(part.content, str) else [shape(item) for item in part.content]
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, UserPromptPart)
    ]


IMAGE = (PNG.media_type, PNG.data)


async def test_an_image_prompt_reaches_the_model_is_stored_and_comes_back_on_reload(harness: Harness) -> None:
    requests: list[list[ModelMessage]] = []
    agent = harness.agent(scripted(["A red square.", "Still a red square."], requests=requests))

    result = await agent.run(["what is this?", PNG])

    assert result.stop_reason == "completed" and result.text == "A red square."
    [sent] = user_contents(requests[0])
    assert sent == ["what is this?", IMAGE]
    assert user_contents(harness.messages.list(agent.session_id)) == [["what is this?", IMAGE]]
    reloaded = SessionAgent(agent.session_id, agent.setup)  # a resumed session reads the store
    await reloaded.run("and now?")
    assert user_contents(requests[1]) == [["what is this?", IMAGE], "and now?"]


async def test_a_queued_image_prompt_is_announced_by_its_text_and_sent_whole(harness: Harness) -> None:
    requests: list[list[ModelMessage]] = []
    agent = harness.agent(scripted(["seen both"], requests=requests))
    agent.enqueue(["and this one", PNG])

    await agent.run("first")

    [queued] = [event for event in harness.events if isinstance(event, PromptQueued)]
    assert queued.prompt == "and this one\n[image/png]"
    assert user_contents(requests[0]) == [["and this one", IMAGE], "first"]


class RecordingHarness:
    """A harness that records the prompt text it is given and answers at once."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    async def run_turn(self, host: HarnessHost, prompt: str) -> str | None:
        self.prompts.append(prompt)
        return "done"


async def test_the_small_model_harness_gets_the_text_of_a_prompt_with_an_image(harness: Harness) -> None:
    agent = harness.agent(scripted([]))
    recording = RecordingHarness()
    agent.setup.harness = recording

    result = await agent.run(["rename foo to bar", PNG, "in src/app.py"])

    assert result.text == "done"
    assert recording.prompts == ["rename foo to bar\nin src/app.py"]


def refusing_images() -> FunctionModel:
    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:  # never called
        raise AssertionError("a prompt the model cannot take was sent")

    return FunctionModel(answer, model_name="text-only", profile={"supports_image_input": False})


def test_a_model_whose_profile_takes_no_images_refuses_an_image_prompt_in_one_line() -> None:
    model = refusing_images()
    check_prompt_files(model, "test:text-only", "just text")  # text is fine
    with pytest.raises(NestorError) as caught:
        check_prompt_files(model, "test:text-only", ["look", PNG])
    assert caught.value.message == "the model test:text-only does not take images"
    assert caught.value.hint is not None and "switch to a model that takes images" in caught.value.hint
    check_prompt_files(scripted([]), "test:scripted", ["look", PNG])  # the default profile takes them


def test_leaving_out_files_replaces_them_by_a_note_and_keeps_the_text() -> None:
    history: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart(["look", PNG])]),
        ModelRequest(parts=[UserPromptPart("plain")]),
    ]
    plain = history[1]

    assert leave_out_files(history) is True

    assert user_contents(history) == [["look", "[image/png left out: the model did not take it]"], "plain"]
    assert history[1] is plain  # messages without files stay as they were
    assert leave_out_files(history) is False
