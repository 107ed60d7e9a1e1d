"""The updates of one ACP session, sent in order by one task.

Events arrive on the bus synchronously, faster than a pipe takes them; they wait here. Two kinds
of waiting update are merged, so a slow client gets fewer, fuller messages and nothing stale:
adjacent message (or thought) chunks join into one, and a keyed update (a ``task`` card's rolling
progress) replaces the one of the same key still waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from acp.schema import AgentMessageChunk, AgentThoughtChunk, TextContentBlock

Send = Callable[[Any], Awaitable[None]]


class Outbox:
    """A queue of session updates with one sender task; :meth:`flush` waits until all were sent.

    Args:
        send: Sends one update to the client (``session/update``).
        on_error: Told when sending fails (the client went away); the update is dropped.

    """

    def __init__(self, send: Send, on_error: Callable[[BaseException], None] = lambda _exc: None) -> None:
        self._send = send
        self._on_error = on_error
        self._waiting: list[list[Any]] = []  # [update, key]
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    def put(self, update: Any, key: str | None = None) -> None:
        """Queue ``update``; a waiting update of the same ``key`` is replaced (dropped once closed)."""
        if self._closed:
            return
        if key is not None:
            for entry in self._waiting:
                if entry[1] == key:
                    entry[0] = update
                    return
        elif self._waiting and _merge(self._waiting[-1], update):
            return
        self._waiting.append([update, key])
        self._idle.clear()
        self._wake.set()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="acp-outbox")

    async def flush(self) -> None:
        """Wait until every queued update was sent."""
        await self._idle.wait()

    async def close(self) -> None:
        """Send what waits, then stop the sender; later updates are dropped."""
        await self.flush()
        self._closed = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._waiting:
                update, _key = self._waiting.pop(0)
                try:
                    await self._send(update)
                except Exception as exc:  # the client is gone or refused it: later updates still go
                    self._on_error(exc)
            self._idle.set()


def _merge(entry: list[Any], update: Any) -> bool:
    """Join ``update`` onto the waiting ``entry`` when both are plain chunks of the same stream."""
    last = entry[0]
    for kind in (AgentMessageChunk, AgentThoughtChunk):
        if (
            isinstance(last, kind)
            and isinstance(update, kind)
            and entry[1] is None
            and isinstance(last.content, TextContentBlock)
            and isinstance(update.content, TextContentBlock)
            and last.field_meta == update.field_meta
        ):
            entry[0] = last.model_copy(
                update={
                    "content": TextContentBlock(type="text", text=last.content.text + update.content.text)
                }
            )
            return True
    return False
