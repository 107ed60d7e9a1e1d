"""The todo list at run level: where it is stored, and the check before an agent answers.

A session's todo list (:class:`~nestor.tools.todo.TodoList`) lives in its metadata under
:data:`TODOS_METADATA_KEY`, so a resumed session finds it again. Wiring, for one agent::

    todos = todo_list_from_metadata(sessions.get(session_id).metadata)
    tool = TodoWriteTool(todos, on_change=persist_todos(sessions, session_id))
    hook = CompletionCheckHook(todos)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from nestor.runtime.kernel.hooks import Hook, Remind, RunState
from nestor.store.sessions import SessionStore
from nestor.tools.todo import TodoItem, TodoList, render_items

if TYPE_CHECKING:
    from nestor.runtime.kernel.setup import RunResult

TODOS_METADATA_KEY = "todos"
"""The session metadata key holding the todo list (a list of ``{"content", "status"}``)."""


def todo_list_from_metadata(metadata: Mapping[str, Any]) -> TodoList:
    """The todo list stored in a session's ``metadata`` (empty when there is none)."""
    return TodoList.from_json(metadata.get(TODOS_METADATA_KEY))


def persist_todos(sessions: SessionStore, session_id: str) -> Callable[[list[TodoItem]], None]:
    """Return an ``on_change`` callback that stores a todo list in the session's metadata."""

    def store(items: list[TodoItem]) -> None:
        sessions.update_metadata(session_id, {TODOS_METADATA_KEY: TodoList(items).to_json()})

    return store


def unfinished_reminder(todos: TodoList) -> str | None:
    """The reminder about the unfinished tasks of ``todos``, or None when every task is done."""
    numbered = [(n, item) for n, item in enumerate(todos.items, start=1) if item.status != "completed"]
    if not numbered:
        return None
    count = len(numbered)
    noun = "todo" if count == 1 else "todos"
    lines = render_items([item for _, item in numbered], [n for n, _ in numbered])
    return "\n".join(
        [
            f"You still have {count} unfinished {noun}:",
            *lines,
            "Finish them, or update the list if they are no longer needed, before you answer.",
        ]
    )


class CompletionCheckHook(Hook):
    """Sends an agent that answers with unfinished todos back to work, once per run.

    The second answer goes through whatever the list says: the model may have good reasons
    (the user asked something else, a task is blocked), and a loop of reminders helps no one.
    """

    def __init__(self, todos: TodoList) -> None:
        self.todos = todos
        self._reminded = False

    async def before_finish(self, state: RunState, text: str) -> Remind | None:
        """Remind about the unfinished todos, the first time in this run the agent answers."""
        if self._reminded:
            return None
        reminder = unfinished_reminder(self.todos)
        if reminder is None:
            return None
        self._reminded = True
        return Remind(reminder)

    async def on_run_end(self, state: RunState, result: RunResult) -> None:
        """The next run may be reminded again."""
        self._reminded = False
