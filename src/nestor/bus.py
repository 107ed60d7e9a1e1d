"""In-process event bus: every agent publishes here, every UI subscribes here.

Two kinds of subscriber:

- a *handler* (:meth:`EventBus.subscribe`) is called synchronously, in order, for every event; it
  must be quick (the CLI's printers, the store's bookkeeping);
- a *stream* (:meth:`EventBus.stream`) is an async iterator with a bounded buffer for consumers
  that may lag (a TUI). When its buffer is full, lossy events (text deltas) are dropped while
  must-deliver events (tool, permission, agent lifecycle) are always kept: the final message
  carries the text anyway, but a missed ``tool_finished`` would leave a UI wrong forever.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable

from nestor.core.events import LOSSY_EVENT_TYPES, Event

EventHandler = Callable[[Event], None]


class EventStream:
    """A buffered subscription; iterate it with ``async for``. Close it with :meth:`close`."""

    def __init__(self, bus: EventBus, max_lossy: int) -> None:
        self._bus = bus
        self._max_lossy = max_lossy
        self._buffer: deque[Event] = deque()
        self._lossy_count = 0
        self._ready = asyncio.Event()
        self._closed = False
        self.dropped = 0

    def _offer(self, event: Event) -> None:
        if event.type in LOSSY_EVENT_TYPES:
            if self._lossy_count >= self._max_lossy:
                self.dropped += 1
                return
            self._lossy_count += 1
        self._buffer.append(event)
        self._ready.set()

    def close(self) -> None:
        """Stop receiving events; iteration ends once the buffer is drained."""
        self._closed = True
        self._bus._streams.discard(self)
        self._ready.set()

    def __aiter__(self) -> AsyncIterator[Event]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[Event]:
        while True:
            while self._buffer:
                event = self._buffer.popleft()
                if event.type in LOSSY_EVENT_TYPES:
                    self._lossy_count -= 1
                yield event
            if self._closed:
                return
            self._ready.clear()
            await self._ready.wait()


class EventBus:
    """Fans events out to handlers and streams."""

    def __init__(self) -> None:
        self._handlers: list[EventHandler] = []
        self._streams: set[EventStream] = set()

    def subscribe(self, handler: EventHandler) -> Callable[[], None]:
        """Call ``handler`` for every event from now on; returns a function that unsubscribes."""
        self._handlers.append(handler)

        def unsubscribe() -> None:
            if handler in self._handlers:
                self._handlers.remove(handler)

        return unsubscribe

    def stream(self, *, max_lossy: int = 1000) -> EventStream:
        """Return a buffered async subscription keeping at most ``max_lossy`` undelivered deltas."""
        stream = EventStream(self, max_lossy)
        self._streams.add(stream)
        return stream

    def publish(self, event: Event) -> None:
        """Deliver ``event`` to every handler (in subscription order) and every stream."""
        for handler in self._handlers:
            handler(event)
        for stream in self._streams:
            stream._offer(event)
