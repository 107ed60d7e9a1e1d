"""The todo list at run level: persistence in session metadata and the check before answering."""

from __future__ import annotations

from pydantic_ai.messages import ModelMessage, ModelRequest, UserPromptPart

from nestor.core.events import TodosUpdated
from nestor.runtime.features.todos import (
    TODOS_METADATA_KEY,
    CompletionCheckHook,
    persist_todos,
    todo_list_from_metadata,
    unfinished_reminder,
)
from nestor.runtime.kernel.loop import SessionAgent
from nestor.testing import ScriptedModel, call, reply
from nestor.tools.todo import TodoItem, TodoList, TodoWriteTool
from tests.runtime.support import Harness


def write(*pairs: tuple[str, str]) -> dict[str, list[dict[str, str]]]:
    return {"todos": [{"content": content, "status": status} for content, status in pairs]}


def user_prompts(messages: list[ModelMessage]) -> list[str]:
    return [
        part.content
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, UserPromptPart) and isinstance(part.content, str)
    ]


def reminders(messages: list[ModelMessage]) -> list[str]:
    return [prompt for prompt in user_prompts(messages) if prompt.startswith("<system-reminder>")]


def todo_agent(
    harness: Harness, model: ScriptedModel, session_id: str | None = None
) -> tuple[SessionAgent, TodoList]:
    """An agent wired the way the runtime wires one: list from metadata, persisted, checked."""
    if session_id is None:
        session_id = harness.sessions.create(str(harness.root), model="test:scripted-model").id
    todos = todo_list_from_metadata(harness.sessions.get(session_id).metadata)
    tool = TodoWriteTool(todos, on_change=persist_todos(harness.sessions, session_id))
    agent = harness.agent(model, [tool], hooks=[CompletionCheckHook(todos)], session_id=session_id)
    return agent, todos


async def test_an_agent_answering_with_unfinished_todos_is_reminded_once_then_completes(
    harness: Harness,
) -> None:
    model = ScriptedModel(
        [
            call(
                "todo_write",
                write(
                    ("Read the parser", "completed"),
                    ("Fix the bug", "in_progress"),
                    ("Add a test", "pending"),
                ),
            ),
            reply("I fixed it."),
            call(
                "todo_write",
                write(
                    ("Read the parser", "completed"),
                    ("Fix the bug", "completed"),
                    ("Add a test", "completed"),
                ),
            ),
            reply("Fixed, with a test."),
        ]
    )
    agent, todos = todo_agent(harness, model)

    result = await agent.run("fix the parser")

    assert result.stop_reason == "completed" and result.text == "Fixed, with a test."
    assert len(model.requests) == 4
    expected = (
        "<system-reminder>You still have 2 unfinished todos:\n"
        "  2. 🔄 Fix the bug\n"
        "  3. ⬚ Add a test\n"
        "Finish them, or update the list if they are no longer needed, before you answer.</system-reminder>"
    )
    assert reminders(model.requests[2].messages) == [expected]
    assert reminders(harness.messages.list(agent.session_id)) == [expected]
    assert todos.unfinished() == []
    stored = harness.sessions.get(agent.session_id).metadata[TODOS_METADATA_KEY]
    assert [entry["status"] for entry in stored] == ["completed"] * 3
    updates = [event for event in harness.events if isinstance(event, TodosUpdated)]
    assert [event.agent_id for event in updates] == [agent.session_id] * 2
    assert updates[-1].todos == stored


async def test_a_second_answer_with_unfinished_todos_is_let_through(harness: Harness) -> None:
    model = ScriptedModel(
        [
            call("todo_write", write(("Fix the bug", "in_progress"))),
            reply("Done, I think."),
            reply("The bug is blocked on a missing fixture; leaving it open."),
        ]
    )
    agent, _ = todo_agent(harness, model)

    result = await agent.run("fix it")

    assert result.stop_reason == "completed"
    assert result.text == "The bug is blocked on a missing fixture; leaving it open."
    assert len(model.requests) == 3
    assert len(reminders(harness.messages.list(agent.session_id))) == 1


async def test_each_run_may_be_reminded_again(harness: Harness) -> None:
    model = ScriptedModel(
        [
            call("todo_write", write(("Fix the bug", "pending"))),
            reply("Later."),
            reply("Still later."),
            reply("Not now."),
            reply("Really not now."),
        ]
    )
    agent, _ = todo_agent(harness, model)

    await agent.run("plan it")
    result = await agent.run("and now?")

    assert result.text == "Really not now."
    assert len(reminders(harness.messages.list(agent.session_id))) == 2
    assert "1 unfinished todo:" in reminders(model.requests[4].messages)[-1]


async def test_no_reminder_without_todos_or_with_every_todo_completed(harness: Harness) -> None:
    model = ScriptedModel(
        [reply("Nothing to plan."), call("todo_write", write(("Fix it", "completed"))), reply("Done.")]
    )
    agent, _ = todo_agent(harness, model)

    first = await agent.run("hello")
    second = await agent.run("fix it")

    assert (first.text, second.text) == ("Nothing to plan.", "Done.")
    assert len(model.requests) == 3
    assert reminders(harness.messages.list(agent.session_id)) == []


async def test_a_resumed_session_finds_its_todos_and_is_reminded_of_them(harness: Harness) -> None:
    first_model = ScriptedModel(
        [
            call("todo_write", write(("Fix the bug", "in_progress"))),
            reply("Stopping."),
            reply("Stopping anyway."),
        ]
    )
    first_agent, _ = todo_agent(harness, first_model)
    await first_agent.run("fix it")

    resumed_model = ScriptedModel([reply("Resumed."), reply("Resumed anyway.")])
    resumed_agent, todos = todo_agent(harness, resumed_model, session_id=first_agent.session_id)
    result = await resumed_agent.run("go on")

    assert todos.items == [TodoItem(content="Fix the bug", status="in_progress")]
    assert result.text == "Resumed anyway."
    assert "1. 🔄 Fix the bug" in reminders(resumed_model.requests[1].messages)[-1]


def test_persist_todos_writes_the_list_and_keeps_other_metadata(harness: Harness) -> None:
    session_id = harness.sessions.create(str(harness.root), metadata={"other": 1}).id
    store = persist_todos(harness.sessions, session_id)

    store([TodoItem(content="Read", status="completed"), TodoItem(content="Write", status="pending")])

    metadata = harness.sessions.get(session_id).metadata
    assert metadata == {
        "other": 1,
        "todos": [{"content": "Read", "status": "completed"}, {"content": "Write", "status": "pending"}],
    }
    store([])
    assert harness.sessions.get(session_id).metadata == {"other": 1, "todos": []}


def test_a_list_from_metadata_without_todos_is_empty() -> None:
    assert len(todo_list_from_metadata({})) == 0
    assert len(todo_list_from_metadata({"todos": "damaged"})) == 0


def test_the_reminder_names_only_unfinished_todos_with_their_numbers() -> None:
    todos = TodoList(
        [
            TodoItem(content="Read", status="completed"),
            TodoItem(content="Write", status="pending"),
            TodoItem(content="Test", status="completed"),
        ]
    )
    reminder = unfinished_reminder(todos)
    assert reminder is not None
    assert reminder.splitlines()[:2] == ["You still have 1 unfinished todo:", "  2. ⬚ Write"]
    assert unfinished_reminder(TodoList([TodoItem(content="Read", status="completed")])) is None
