"""The UI facade on a real app: permission questions as events answered by id, runs to completion."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic_ai.messages import BinaryContent

from nestor.app import App
from nestor.config import Settings, load_settings
from nestor.core.errors import NestorError
from nestor.core.events import Event, PermissionAsked, PermissionRequested, PermissionWithdrawn
from nestor.testing import ScriptedOpenAIServer, ServerReply, ServerToolCall, ServerUsage
from tests.providers.local.gguf_writer import write_chat_gguf

WRITE = ServerReply(tool_calls=(ServerToolCall("write", {"path": "notes.txt", "content": "hi\n"}),))


def settings_for(root: Path, base_url: str, extra: str = "") -> Settings:
    """A trusted project on the scripted server; ``extra`` is more of its ``nestor.toml``."""
    project = root / "project"
    project.mkdir(exist_ok=True)
    config = '[models]\nlarge = "scripted:large-model"\n\n[providers.scripted]\ntype = "openai"\n'
    config += f'base_url = "{base_url}"\n{extra}'
    (project / "nestor.toml").write_text(config, encoding="utf-8")
    env = {"NESTOR_HOME": str(root / "home"), "HOME": str(root)}
    return load_settings(project, env=env, user_config_path=root / "no-user-config.toml", trusted=True)


@pytest.fixture
def events() -> list[Event]:
    return []


@pytest.fixture
def server_and_app(tmp_path: Path, request: pytest.FixtureRequest, events: list[Event]) -> Iterator[App]:
    script: list[ServerReply] = request.param
    with ScriptedOpenAIServer(script) as server:
        app = App.open(settings_for(tmp_path, server.base_url))
        app.subscribe(events.append)
        try:
            yield app
        finally:
            app.close()


async def next_question(events: list[Event]) -> PermissionRequested:
    async with asyncio.timeout(10):  # only stops a hung test
        while not any(isinstance(event, PermissionRequested) for event in events):  # noqa: ASYNC110
            await asyncio.sleep(0.01)
    return next(event for event in events if isinstance(event, PermissionRequested))


@pytest.mark.parametrize("server_and_app", [[WRITE, ServerReply(text="Written.")]], indirect=True)
async def test_a_permission_question_is_an_event_the_ui_answers_by_its_id(
    server_and_app: App, events: list[Event]
) -> None:
    app = server_and_app
    conversation = await app.conversation(interactive=True, env={})
    run = conversation.submit("write notes")
    assert run is not None

    question = await next_question(events)
    assert question.agent_id == conversation.session_id
    assert question.request.tool_name == "write" and question.request.action == "write"
    assert question.choices == ("once", "session", "deny")
    assert conversation.waiting(question.request_id)
    assert not conversation.answer("perm_unknown", "once")
    assert conversation.answer(question.request_id, "once")
    assert not conversation.answer(question.request_id, "deny")  # answered already

    result = await run
    assert result.stop_reason == "completed" and result.text == "Written."
    assert (app.settings.project_root / "notes.txt").read_text() == "hi\n"
    asked = [event for event in events if isinstance(event, PermissionAsked)]
    assert [event.decision for event in asked] == [None, "allow"]


@pytest.mark.parametrize("server_and_app", [[WRITE, ServerReply(text="Stopped.")]], indirect=True)
async def test_a_question_is_withdrawn_when_its_run_is_stopped(
    server_and_app: App, events: list[Event]
) -> None:
    conversation = await server_and_app.conversation(interactive=True, env={})
    run = conversation.submit("write notes")
    assert run is not None
    question = await next_question(events)

    assert conversation.cancel()
    result = await run
    assert result.stop_reason == "cancelled"
    withdrawn = [event for event in events if isinstance(event, PermissionWithdrawn)]
    assert [event.request_id for event in withdrawn] == [question.request_id]
    assert not conversation.waiting(question.request_id)
    assert not (server_and_app.settings.project_root / "notes.txt").exists()


@pytest.mark.parametrize("server_and_app", [[WRITE, ServerReply(text="Could not write.")]], indirect=True)
async def test_a_headless_conversation_denies_without_asking(
    server_and_app: App, events: list[Event]
) -> None:
    conversation = await server_and_app.conversation(interactive=False, first_prompt="write notes", env={})
    outcome = await conversation.run_to_completion("write notes")

    assert outcome.text == "Could not write." and outcome.stop_reason == "completed"
    assert not any(isinstance(event, PermissionRequested) for event in events)
    denied = [event for event in events if isinstance(event, PermissionAsked)]
    assert [event.decision for event in denied] == ["deny"]
    assert server_and_app.sessions.get(conversation.session_id).title == "write notes"


TASK = {"description": "look around", "prompt": "list the files", "subagent_type": "general"}


@pytest.mark.parametrize(
    "server_and_app",
    [
        [
            ServerReply(tool_calls=(ServerToolCall("task", TASK),), usage=ServerUsage(100, 10)),
            ServerReply(text="Two files.", usage=ServerUsage(40, 5)),
            ServerReply(text="There are two files.", usage=ServerUsage(120, 8)),
        ]
    ],
    indirect=True,
)
async def test_the_outcome_counts_the_whole_tree_and_the_main_agent_apart(server_and_app: App) -> None:
    conversation = await server_and_app.conversation(interactive=False, first_prompt="what is here?", env={})
    outcome = await conversation.run_to_completion("what is here?")

    assert outcome.text == "There are two files." and outcome.session_id == conversation.session_id
    assert outcome.model == conversation.model and outcome.num_turns == 2
    assert (outcome.main_usage.input_tokens, outcome.main_usage.requests) == (220, 2)
    assert (outcome.usage.input_tokens, outcome.usage.requests) == (260, 3)


PNG = BinaryContent(data=b"\x89PNG\r\n\x1a\n-a-tiny-image-", media_type="image/png")


async def test_a_prompt_with_an_image_reaches_the_provider_as_an_image_part(tmp_path: Path) -> None:
    with ScriptedOpenAIServer([ServerReply(text="A tiny PNG.")]) as server:
        app = App.open(settings_for(tmp_path, server.base_url))
        try:
            conversation = await app.conversation(interactive=False, first_prompt="what is this?", env={})
            outcome = await conversation.run_to_completion(["what is this?", PNG])
        finally:
            app.close()
    assert outcome.text == "A tiny PNG." and outcome.stop_reason == "completed"
    [user] = [message for message in server.requests[0]["messages"] if message["role"] == "user"]
    assert user["content"][1] == {
        "type": "image_url",
        "image_url": {"url": f"data:image/png;base64,{PNG.base64}"},
    }


async def test_a_model_that_takes_no_images_refuses_an_image_prompt_before_anything_is_stored(
    tmp_path: Path,
) -> None:
    gguf = write_chat_gguf(tmp_path / "models" / "coder.gguf")  # the embedded engine reads text only
    project = tmp_path / "project"
    project.mkdir()
    (project / "nestor.toml").write_text(f'[models]\nlarge = "local:{gguf}"\n', encoding="utf-8")
    env = {"NESTOR_HOME": str(tmp_path / "home"), "HOME": str(tmp_path)}
    settings = load_settings(project, env=env, user_config_path=tmp_path / "none.toml", trusted=True)
    app = App.open(settings)
    try:
        conversation = await app.conversation(interactive=True, env=env)
        with pytest.raises(NestorError) as caught:
            await conversation.run_to_completion(["what is on this screenshot?", PNG])
        assert caught.value.message == f"the model local:{gguf} does not take images"
        assert app.messages.list(conversation.session_id) == [] and not conversation.busy
        assert app.sessions.get(conversation.session_id).title == ""  # the refused prompt named nothing
    finally:
        app.close()
