"""Permission questions as events: a question goes out on the bus, its answer comes back by id.

:class:`PermissionQuestions` is the permission asker of an interactive conversation: it publishes
:class:`~nestor.core.events.PermissionRequested` and waits until a UI calls :meth:`answer` with
the question's id. A run stopped while it waits withdraws the question
(:class:`~nestor.core.events.PermissionWithdrawn`), so the UI stops showing it.
"""

from __future__ import annotations

import asyncio

from nestor.bus import EventBus
from nestor.core.events import PermissionRequested, PermissionWithdrawn
from nestor.core.ids import new_id
from nestor.core.permission import PERMISSION_CHOICES, PermissionAnswer, PermissionRequest


class PermissionQuestions:
    """The questions of one agent tree waiting for the user, by id."""

    def __init__(self, bus: EventBus) -> None:
        self._bus = bus
        self._waiting: dict[str, asyncio.Future[PermissionAnswer]] = {}

    async def __call__(
        self,
        request: PermissionRequest,
        agent_id: str,
        *,
        choices: tuple[PermissionAnswer, ...] = PERMISSION_CHOICES,
    ) -> PermissionAnswer:
        """Ask about ``request`` for agent ``agent_id`` and wait for the answer.

        ``choices`` are the answers the UI offers: ``("once", "deny")`` makes it a yes/no question.
        """
        request_id = new_id("perm")
        answer: asyncio.Future[PermissionAnswer] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = answer
        try:
            self._bus.publish(
                PermissionRequested(
                    agent_id=agent_id, request_id=request_id, request=request, choices=choices
                )
            )
            return await answer
        except asyncio.CancelledError:
            self._bus.publish(PermissionWithdrawn(agent_id=agent_id, request_id=request_id))
            raise
        finally:
            del self._waiting[request_id]

    def answer(self, request_id: str, decision: PermissionAnswer) -> bool:
        """Answer the question ``request_id``; False when it is not waiting (answered, withdrawn, unknown)."""
        waiting = self._waiting.get(request_id)
        if waiting is None or waiting.done():
            return False
        waiting.set_result(decision)
        return True

    def waiting(self, request_id: str) -> bool:
        """True while the question ``request_id`` waits for an answer."""
        waiting = self._waiting.get(request_id)
        return waiting is not None and not waiting.done()
