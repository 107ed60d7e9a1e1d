"""Idle sub-agents kept for reuse: specs with ``persist: true`` (after CodeAlly's agent pool, seed 001).

A pooled agent keeps its session and history between tasks; its system prompt is regenerated for
each task. It is reused only by a task with the same key: the same parent, spec name, prompt
(with its rules and skills), tool set, MCP servers and model, so a spec file edited since never gets a stale
agent. The pool is bounded (least recently used first out) and idle agents expire.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nestor.runtime.kernel.loop import SessionAgent


@dataclass(frozen=True, slots=True)
class PoolKey:
    """What must match for an idle agent to take a task."""

    parent_id: str
    agent_type: str
    prompt_hash: str
    tools_hash: str
    model: str
    mcp_servers: str = ""
    """The agent's MCP servers (named and its own): the tools they bring are only known once started."""


class AgentPool:
    """Idle sub-agents by key, least recently used first out.

    Args:
        size: The most idle agents kept; 0 keeps none.
        idle_s: Seconds an agent may stay idle before it is dropped.
        clock: Monotonic seconds; tests pass a fake one.

    """

    def __init__(
        self, size: int = 8, idle_s: float = 600.0, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.size = size
        self.idle_s = idle_s
        self._clock = clock
        self._idle: OrderedDict[str, tuple[PoolKey, SessionAgent, float]] = OrderedDict()

    def configure(self, *, size: int, idle_s: float) -> None:
        """Change the bounds (applies from the next call)."""
        self.size = size
        self.idle_s = idle_s

    def __len__(self) -> int:
        return len(self._idle)

    def put(self, key: PoolKey, agent: SessionAgent) -> list[SessionAgent]:
        """Keep ``agent`` idle under ``key``; return the agents dropped to stay within bounds."""
        self._idle.pop(agent.session_id, None)
        self._idle[agent.session_id] = (key, agent, self._clock())
        dropped = self.expire()
        while len(self._idle) > self.size:
            _, (_, oldest, _) = self._idle.popitem(last=False)
            dropped.append(oldest)
        return dropped

    def take(self, key: PoolKey) -> SessionAgent | None:
        """Remove and return the most recently used idle agent with ``key`` (call :meth:`expire` first)."""
        for agent_id in reversed(self._idle):
            entry_key, agent, _ = self._idle[agent_id]
            if entry_key == key:
                del self._idle[agent_id]
                return agent
        return None

    def take_by_id(self, agent_id: str) -> SessionAgent | None:
        """Remove and return the idle agent with ``agent_id`` (a resumed pooled agent), if any."""
        entry = self._idle.pop(agent_id, None)
        return entry[1] if entry else None

    def expire(self) -> list[SessionAgent]:
        """Drop agents idle for longer than ``idle_s``; return them."""
        now = self._clock()
        stale = [agent_id for agent_id, (_, _, since) in self._idle.items() if now - since > self.idle_s]
        return [self._idle.pop(agent_id)[1] for agent_id in stale]

    def agents(self) -> list[SessionAgent]:
        """The idle agents, least recently used first."""
        return [agent for _, agent, _ in self._idle.values()]
