"""The todo_write tool and the todo list it keeps."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from nestor.core.events import Event, TodosUpdated
from nestor.tools.base import ToolContext
from nestor.tools.catalogue import ToolCatalogue
from nestor.tools.todo import TodoItem, TodoList, TodoWriteParams, TodoWriteTool


def items(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"content": content, "status": status} for content, status in pairs]


def params(*pairs: tuple[str, str]) -> TodoWriteParams:
    return TodoWriteParams.model_validate({"todos": items(*pairs)})


class Recorder:
    """Records what the tool emits and reports."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.changes: list[list[TodoItem]] = []


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def todo_ctx(ctx: ToolContext, recorder: Recorder) -> ToolContext:
    ctx.session_id = "session-1"
    ctx.emit = recorder.events.append
    return ctx


async def test_a_write_replaces_the_list_and_shows_it_back(todo_ctx: ToolContext, recorder: Recorder) -> None:
    todos = TodoList()
    tool = TodoWriteTool(todos, on_change=recorder.changes.append)

    result = await tool.run(
        params(("Read the parser", "completed"), ("Fix the bug", "in_progress"), ("Add a test", "pending")),
        todo_ctx,
    )

    assert not result.is_error
    assert result.content == (
        "Todo list updated.\n\n"
        "<todo-state>\n"
        "Tasks: 1 completed, 1 in progress, 1 pending\n"
        "  1. ✅ Read the parser\n"
        "  2. 🔄 Fix the bug\n"
        "  3. ⬚ Add a test\n"
        "</todo-state>"
    )
    assert [item.content for item in todos.items] == ["Read the parser", "Fix the bug", "Add a test"]
    assert [item.content for item in todos.unfinished()] == ["Fix the bug", "Add a test"]


async def test_a_change_is_emitted_and_reported_to_the_runtime(
    todo_ctx: ToolContext, recorder: Recorder
) -> None:
    todos = TodoList()
    tool = TodoWriteTool(todos, on_change=recorder.changes.append)

    await tool.run(params(("Fix the bug", "in_progress")), todo_ctx)
    await tool.run(params(("Fix the bug", "completed")), todo_ctx)

    assert recorder.events == [
        TodosUpdated(
            agent_id="session-1",
            todos=items(("Fix the bug", "in_progress")),
            timestamp=recorder.events[0].timestamp,
        ),
        TodosUpdated(
            agent_id="session-1",
            todos=items(("Fix the bug", "completed")),
            timestamp=recorder.events[1].timestamp,
        ),
    ]
    assert [[item.status for item in change] for change in recorder.changes] == [
        ["in_progress"],
        ["completed"],
    ]


async def test_the_same_list_again_changes_nothing(todo_ctx: ToolContext, recorder: Recorder) -> None:
    tool = TodoWriteTool(TodoList(), on_change=recorder.changes.append)
    await tool.run(params(("Fix the bug", "pending")), todo_ctx)

    result = await tool.run(params(("Fix the bug", "pending")), todo_ctx)

    assert result.content.startswith("Todo list unchanged.\n\n<todo-state>\n")
    assert len(recorder.events) == 1 and len(recorder.changes) == 1
    assert result.metadata == {"todos": items(("Fix the bug", "pending")), "changed": False}


async def test_an_empty_list_clears_it(todo_ctx: ToolContext, recorder: Recorder) -> None:
    todos = TodoList([TodoItem(content="Fix the bug", status="pending")])
    tool = TodoWriteTool(todos, on_change=recorder.changes.append)

    result = await tool.run(params(), todo_ctx)

    assert len(todos) == 0 and recorder.changes == [[]]
    assert result.content == (
        "Todo list updated.\n\n<todo-state>\nTasks: 0 completed, 0 in progress, 0 pending\n</todo-state>"
    )


async def test_works_without_an_on_change_callback(todo_ctx: ToolContext, recorder: Recorder) -> None:
    todos = TodoList()
    await TodoWriteTool(todos).run(params(("Fix the bug", "pending")), todo_ctx)
    assert len(todos) == 1 and len(recorder.events) == 1


def test_content_is_kept_on_one_line() -> None:
    parsed = params(("  Fix the\n  parser  ", "pending"))
    assert parsed.todos[0].content == "Fix the parser"


@pytest.mark.parametrize(
    ("todos", "message"),
    [
        (items(("   ", "pending")), "at least 1 character"),
        (items(("Fix it", "done")), "'pending', 'in_progress' or 'completed'"),
        (items(("Fix it", "pending"), ("Fix  it", "completed")), "appears twice"),
        ([{"content": "Fix it"}], "Field required"),
    ],
)
def test_invalid_lists_are_refused(todos: list[dict[str, Any]], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        TodoWriteParams.model_validate({"todos": todos})


def test_the_list_round_trips_through_json() -> None:
    todos = TodoList(
        [TodoItem(content="Read", status="completed"), TodoItem(content="Write", status="in_progress")]
    )
    data = todos.to_json()
    assert data == items(("Read", "completed"), ("Write", "in_progress"))
    assert TodoList.from_json(data).items == todos.items


@pytest.mark.parametrize("data", [None, "oops", {"content": "x"}, 3])
def test_from_json_of_something_else_is_an_empty_list(data: object) -> None:
    assert len(TodoList.from_json(data)) == 0


def test_from_json_drops_damaged_entries_and_keeps_the_rest() -> None:
    data = [
        {"content": "Read", "status": "completed"},
        {"content": "", "status": "pending"},
        "junk",
        {"x": 1},
    ]
    assert [item.content for item in TodoList.from_json(data).items] == ["Read"]


def test_replace_says_whether_it_changed_the_list() -> None:
    todos = TodoList()
    first = [TodoItem(content="Read", status="pending")]
    assert todos.replace(first) is True
    assert todos.replace(list(first)) is False
    assert todos.replace([TodoItem(content="Read", status="completed")]) is True
    assert todos.count("completed") == 1 and todos.count("pending") == 0


def test_the_tool_is_read_only_needs_no_permission_and_says_when_to_use_it(todo_ctx: ToolContext) -> None:
    tool = TodoWriteTool(TodoList())
    assert tool.name == "todo_write" and ToolCatalogue().has(tool.name, "read_only")
    assert tool.permission(params(("Read", "pending")), todo_ctx) is None
    description = tool.description
    assert "3 or more" in description and "in_progress" in description and "WHOLE list" in description
    schema = tool.parameters_schema()
    assert schema["required"] == ["todos"]
