from __future__ import annotations

import asyncio

from nestor.bus import EventBus
from nestor.core.events import AgentFinished, Event, TextDelta, ToolStarted


def test_handlers_get_every_event_in_order_and_can_unsubscribe() -> None:
    bus = EventBus()
    seen: list[Event] = []
    unsubscribe = bus.subscribe(seen.append)
    bus.publish(TextDelta(agent_id="a", text="1"))
    bus.publish(ToolStarted(agent_id="a", tool_call_id="c", tool_name="ls"))
    unsubscribe()
    bus.publish(TextDelta(agent_id="a", text="2"))
    assert [e.type for e in seen] == ["text_delta", "tool_started"]


async def test_stream_drops_deltas_when_full_but_keeps_must_deliver_events() -> None:
    bus = EventBus()
    stream = bus.stream(max_lossy=3)
    for index in range(10):
        bus.publish(TextDelta(agent_id="a", text=str(index)))
    bus.publish(ToolStarted(agent_id="a", tool_call_id="c", tool_name="ls"))
    bus.publish(AgentFinished(agent_id="a", stop_reason="completed", result="done"))
    stream.close()
    received = [event async for event in stream]
    assert [e.text for e in received if isinstance(e, TextDelta)] == ["0", "1", "2"]
    assert [e.type for e in received][-2:] == ["tool_started", "agent_finished"]
    assert stream.dropped == 7


async def test_stream_delivers_while_iterating() -> None:
    bus = EventBus()
    stream = bus.stream()
    got: list[str] = []

    async def consume() -> None:
        async for event in stream:
            got.append(event.type)
            if event.type == "agent_finished":
                return

    consumer = asyncio.create_task(consume())
    await asyncio.sleep(0)
    bus.publish(TextDelta(agent_id="a", text="x"))
    bus.publish(AgentFinished(agent_id="a", stop_reason="completed", result=""))
    await asyncio.wait_for(consumer, timeout=5)
    assert got == ["text_delta", "agent_finished"]
