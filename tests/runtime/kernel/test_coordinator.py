from __future__ import annotations

import asyncio

import pytest

from nestor.runtime.kernel.coordinator import Coordinator
from tests.runtime.support import BarrierTool, Harness, scripted


async def test_submit_runs_then_queues_while_busy(harness: Harness) -> None:
    barrier = BarrierTool(parties=1)
    agent = harness.agent(scripted([[("barrier", {"seconds": 0.05})], "both"]), [barrier])
    coordinator = Coordinator()
    coordinator.add(agent)
    task = coordinator.submit(agent.session_id, "first")
    assert task is not None
    await asyncio.wait_for(barrier.started.wait(), timeout=5)
    assert coordinator.busy(agent.session_id)
    assert coordinator.submit(agent.session_id, "second") is None  # queued
    result = await coordinator.wait(agent.session_id)
    assert result is not None and result.text == "both"
    assert not coordinator.busy(agent.session_id)


async def test_cancel_and_remove(harness: Harness) -> None:
    barrier = BarrierTool(parties=1)
    agent = harness.agent(scripted([[("barrier", {"seconds": 30})]]), [barrier])
    coordinator = Coordinator()
    coordinator.add(agent)
    assert coordinator.cancel(agent.session_id) is False  # nothing running
    coordinator.submit(agent.session_id, "go")
    await asyncio.wait_for(barrier.started.wait(), timeout=5)
    with pytest.raises(RuntimeError):
        coordinator.remove(agent.session_id)
    assert coordinator.cancel(agent.session_id) is True
    result = await coordinator.wait(agent.session_id)
    assert result is not None and result.stop_reason == "cancelled"
    coordinator.remove(agent.session_id)
    with pytest.raises(KeyError):
        coordinator.agent(agent.session_id)
