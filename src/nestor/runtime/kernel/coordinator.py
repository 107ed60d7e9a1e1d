"""The coordinator owns live agents: it starts runs, queues prompts sent while busy, cancels.

UIs talk to the coordinator, never to a loop directly: ``submit`` starts a run in a task (or
queues the prompt when the agent is busy), ``cancel`` stops the agent's current run, and
``wait`` returns the result of the run in progress.
"""

from __future__ import annotations

import asyncio

from nestor.core.prompts import UserPrompt
from nestor.runtime.kernel.loop import SessionAgent
from nestor.runtime.kernel.setup import RunResult


class Coordinator:
    """Runs prompts on live agents, one run at a time per agent."""

    def __init__(self) -> None:
        self._agents: dict[str, SessionAgent] = {}
        self._runs: dict[str, asyncio.Task[RunResult]] = {}

    def add(self, agent: SessionAgent) -> None:
        """Make ``agent`` live under its session id."""
        self._agents[agent.session_id] = agent

    def remove(self, agent_id: str) -> None:
        """Forget an agent that has no run in progress (cancel it first)."""
        if self.busy(agent_id):
            raise RuntimeError(f"agent {agent_id} is running; cancel it before removing it")
        self._agents.pop(agent_id, None)
        self._runs.pop(agent_id, None)

    def agent(self, agent_id: str) -> SessionAgent:
        """Return the live agent with ``agent_id``."""
        return self._agents[agent_id]

    def submit(self, agent_id: str, prompt: UserPrompt | None) -> asyncio.Task[RunResult] | None:
        """Start a run of ``prompt``; when the agent is busy, queue it and return None.

        ``None`` runs on what the agent has pending (background notices); ignored while busy.
        """
        agent = self._agents[agent_id]
        running = self._runs.get(agent_id)
        if running is not None and not running.done():
            if prompt is not None:
                agent.enqueue(prompt)
            return None
        task = asyncio.create_task(agent.run(prompt), name=f"run {agent_id}")
        self._runs[agent_id] = task
        return task

    def busy(self, agent_id: str) -> bool:
        """True while the agent has a run in progress."""
        running = self._runs.get(agent_id)
        return running is not None and not running.done()

    def cancel(self, agent_id: str) -> bool:
        """Cancel the agent's current run; returns False when it had none."""
        if not self.busy(agent_id):
            return False
        self._agents[agent_id].cancel()
        return True

    async def wait(self, agent_id: str) -> RunResult | None:
        """Wait for the agent's current run to end and return its result (None if none ran)."""
        running = self._runs.get(agent_id)
        if running is None:
            return None
        return await running

    async def run(self, agent_id: str, prompt: UserPrompt | None) -> RunResult:
        """Submit ``prompt`` and wait for the run that takes it to end."""
        task = self.submit(agent_id, prompt)
        if task is None:
            result = await self.wait(agent_id)
            assert result is not None
            return result
        return await task
