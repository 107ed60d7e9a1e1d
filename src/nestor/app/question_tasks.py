"""Permission questions as a UI answers them in tasks of its own: each with the tool call it is about.

The gate announces the call a question is about (:class:`~nestor.core.events.PermissionAsked`,
no decision yet), then asks with no await between (:class:`~nestor.core.events.PermissionRequested`),
so the announcement of the same agent just before a question is its call's. A question nestor
withdraws (:class:`~nestor.core.events.PermissionWithdrawn`: its run stopped) stops its task.
``nestor acp`` (the editor answers) and the SDK (``permission_mode`` and ``can_use_tool``) follow
questions through this one class.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from nestor.core.events import Event, PermissionAsked, PermissionRequested, PermissionWithdrawn


class QuestionTasks:
    """One conversation's open permission questions and the tasks answering them."""

    def __init__(self) -> None:
        self._asked: dict[str, PermissionAsked] = {}
        self._waiting: dict[str, asyncio.Task[None]] = {}

    def follow(self, event: Event) -> tuple[PermissionRequested, PermissionAsked | None] | None:
        """Follow one event of the bus; a new question comes back with the call it is about (None: none).

        A question with no call announced before it is not a tool call's (a project's MCP server to
        approve, a yes/no question).
        """
        match event:
            case PermissionAsked(decision=None):
                self._asked[event.agent_id] = event
            case PermissionRequested():
                return event, self._asked.pop(event.agent_id, None)
            case PermissionWithdrawn():
                task = self._waiting.pop(event.request_id, None)
                if task is not None:
                    task.cancel()
            case _:
                pass
        return None

    def answer_in_task(self, request_id: str, answering: Coroutine[Any, Any, None], name: str) -> None:
        """Run ``answering`` for the question ``request_id``, stopped if nestor withdraws the question."""
        task = asyncio.get_running_loop().create_task(answering, name=name)
        self._waiting[request_id] = task
        task.add_done_callback(lambda _done: self._waiting.pop(request_id, None))

    def withdraw_all(self) -> None:
        """Stop every task still answering (a prompt cancelled, a client gone)."""
        for task in list(self._waiting.values()):
            task.cancel()
        self._waiting.clear()
