"""The ``todo_write`` tool: the agent's own task list for the work in progress.

The model sends the whole list at every call; the list lives in a :class:`TodoList` shared with
the runtime, which persists it in the session's metadata (``on_change``) and checks it before the
agent answers. Each result repeats the list in a ``<todo-state>`` block, so the model sees where
it stands right after changing it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from nestor.core.events import TodosUpdated
from nestor.tools.base import Tool, ToolContext, ToolResult

TodoStatus = Literal["pending", "in_progress", "completed"]

STATUS_ICONS: dict[TodoStatus, str] = {"pending": "⬚", "in_progress": "🔄", "completed": "✅"}
"""How each status shows in the ``<todo-state>`` block."""


def _one_line(value: object) -> object:
    """Collapse whitespace, so every task renders on one line (and blank content is caught as empty)."""
    return " ".join(value.split()) if isinstance(value, str) else value


class TodoItem(BaseModel):
    """One task of the list."""

    model_config = ConfigDict(frozen=True)

    content: Annotated[str, BeforeValidator(_one_line)] = Field(
        min_length=1, description="The task, in a few imperative words (e.g. 'Add tests for the parser')."
    )
    status: TodoStatus = Field(description="pending, in_progress (working on it now) or completed.")


class TodoList:
    """The todo list of one session, in memory; the runtime persists it through :meth:`to_json`."""

    def __init__(self, items: Iterable[TodoItem] = ()) -> None:
        self._items: list[TodoItem] = list(items)

    @property
    def items(self) -> list[TodoItem]:
        """The tasks, in order (a copy)."""
        return list(self._items)

    def __len__(self) -> int:
        """How many tasks there are."""
        return len(self._items)

    def replace(self, items: Iterable[TodoItem]) -> bool:
        """Make ``items`` the whole list; return True when that changed it."""
        new = list(items)
        changed = new != self._items
        self._items = new
        return changed

    def unfinished(self) -> list[TodoItem]:
        """The tasks not completed yet, in order."""
        return [item for item in self._items if item.status != "completed"]

    def count(self, status: TodoStatus) -> int:
        """How many tasks have ``status``."""
        return sum(1 for item in self._items if item.status == status)

    def to_json(self) -> list[dict[str, str]]:
        """The list as JSON-ready data (``content`` and ``status`` of each task), for session metadata."""
        return [{"content": item.content, "status": item.status} for item in self._items]

    @classmethod
    def from_json(cls, data: object) -> TodoList:
        """Rebuild a list from :meth:`to_json` data; entries that are not valid tasks are left out.

        Stored metadata outlives the code that wrote it, so a damaged entry costs that task, not
        the session.
        """
        if not isinstance(data, list):
            return cls()
        items: list[TodoItem] = []
        for entry in data:  # pyright: ignore[reportUnknownVariableType]
            try:
                items.append(TodoItem.model_validate(entry))
            except ValidationError:
                continue
        return cls(items)

    def render(self) -> str:
        """The list as the ``<todo-state>`` block the model sees."""
        return render_todo_state(self._items)


def render_todo_state(items: Sequence[TodoItem]) -> str:
    """Render ``items`` as a ``<todo-state>`` block: counts, then one numbered line per task."""
    counts = {status: sum(1 for item in items if item.status == status) for status in STATUS_ICONS}
    lines = [
        "<todo-state>",
        f"Tasks: {counts['completed']} completed, {counts['in_progress']} in progress, "
        f"{counts['pending']} pending",
        *render_items(items),
        "</todo-state>",
    ]
    return "\n".join(lines)


def render_items(items: Sequence[TodoItem], numbers: Sequence[int] | None = None) -> list[str]:
    """One line per task: ``  <number>. <icon> <content>``, numbered from 1 unless ``numbers`` says."""
    numbered = numbers if numbers is not None else range(1, len(items) + 1)
    return [
        f"  {n}. {STATUS_ICONS[item.status]} {item.content}" for n, item in zip(numbered, items, strict=True)
    ]


class TodoWriteParams(BaseModel):
    """Arguments of the ``todo_write`` tool."""

    todos: list[TodoItem] = Field(
        description="The WHOLE todo list, in order; it replaces the previous list. [] clears it."
    )

    @model_validator(mode="after")
    def _distinct(self) -> TodoWriteParams:
        seen: set[str] = set()
        for item in self.todos:
            if item.content in seen:
                raise ValueError(f"the task {item.content!r} appears twice; list each task once")
            seen.add(item.content)
        return self


class TodoWriteTool(Tool[TodoWriteParams]):
    """Replaces the session's todo list, tells the UI (``TodosUpdated``) and the runtime (``on_change``).

    Args:
        todos: The session's list, shared with the runtime.
        on_change: Called with the new items whenever a call changes the list (persistence).

    """

    name = "todo_write"
    params_model = TodoWriteParams

    def __init__(self, todos: TodoList, on_change: Callable[[list[TodoItem]], None] | None = None) -> None:
        self.todos = todos
        self.on_change = on_change

    async def run(self, params: TodoWriteParams, ctx: ToolContext) -> ToolResult:
        """Replace the list and show it back."""
        changed = self.todos.replace(params.todos)
        data = self.todos.to_json()
        if changed:
            ctx.emit(TodosUpdated(agent_id=ctx.session_id, todos=data))
            if self.on_change is not None:
                self.on_change(self.todos.items)
        headline = "Todo list updated." if changed else "Todo list unchanged."
        metadata: dict[str, Any] = {"todos": data, "changed": changed}
        return ToolResult(content=f"{headline}\n\n{self.todos.render()}", metadata=metadata)
