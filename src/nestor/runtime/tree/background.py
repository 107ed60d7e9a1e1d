"""Background sub-agents: started by ``task`` with ``run_in_background``, tracked until they end.

The parent gets the agent id at once and carries on. ``task_status``, ``task_output`` and
``task_cancel`` look at, wait for and stop them. When one ends, a notice
(``[Background sub-agent ID (TYPE) STATUS] Summary: ...``) goes into its parent's next model
request (at once if the parent is mid-run, else with its next prompt) and is published for the UI.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nestor.bus import EventBus
from nestor.core.errors import ToolError
from nestor.core.events import BackgroundNotice

if TYPE_CHECKING:
    from nestor.runtime.kernel.loop import SessionAgent
    from nestor.runtime.tree.subagent_result import SubAgentResult


@dataclass
class BackgroundRecord:
    """One background sub-agent: what it is doing and, once ended, its result."""

    agent_id: str
    parent_id: str
    agent_type: str
    description: str
    started_at: float = field(default_factory=time.monotonic)
    ended_at: float | None = None
    result: SubAgentResult | None = None
    status: str = "running"
    task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        """True until the agent ended, whatever the outcome."""
        return self.status == "running"

    def describe(self) -> str:
        """One line for ``task_status``."""
        elapsed = (self.ended_at or time.monotonic()) - self.started_at
        line = f"{self.agent_id} ({self.agent_type}) {self.status}, {elapsed:.1f}s: {self.description}"
        if self.result is not None:
            tools = sum(self.result.tools_used.values())
            line += f" [{tools} tools, {self.result.num_turns} turns]"
        return line


class BackgroundAgents:
    """The background sub-agents of one agent tree."""

    def __init__(self) -> None:
        self._records: dict[str, BackgroundRecord] = {}

    def start(
        self,
        agent_id: str,
        *,
        parent: SessionAgent,
        agent_type: str,
        description: str,
        work: Coroutine[Any, Any, SubAgentResult],
        bus: EventBus,
    ) -> BackgroundRecord:
        """Run ``work`` (the sub-agent's task) in the background; its notice goes to ``parent``."""
        record = BackgroundRecord(agent_id, parent.session_id, agent_type, description)
        self._records[agent_id] = record
        record.task = asyncio.create_task(self._supervise(record, work, parent, bus), name=f"bg {agent_id}")
        return record

    async def _supervise(
        self,
        record: BackgroundRecord,
        work: Coroutine[Any, Any, SubAgentResult],
        parent: SessionAgent,
        bus: EventBus,
    ) -> None:
        summary = ""
        try:
            record.result = await work
            record.status = record.result.stop_reason if record.result.success else _failed(record.result)
            summary = record.result.report()
        except asyncio.CancelledError:
            record.status = "cancelled"
            summary = "Cancelled before it finished."
        except Exception as exc:  # a broken task is reported to the parent, never lost
            record.status = "error"
            summary = f"Failed to run: {exc}"
        record.ended_at = time.monotonic()
        header = f"[Background sub-agent {record.agent_id} ({record.agent_type}) {record.status}]"
        notice = f"{header} Summary: {summary}"
        parent.deliver(notice)
        bus.publish(
            BackgroundNotice(
                agent_id=record.parent_id,
                child_id=record.agent_id,
                child_type=record.agent_type,
                status=record.status,
                text=notice,
            )
        )

    def get(self, agent_id: str) -> BackgroundRecord:
        """The record of ``agent_id``.

        Raises:
            ToolError: No background agent has this id.

        """
        record = self._records.get(agent_id)
        if record is None:
            known = ", ".join(self._records) or "none"
            raise ToolError(f"no background agent {agent_id!r} (known: {known})")
        return record

    def running(self, agent_id: str) -> bool:
        """True while the background agent ``agent_id`` runs."""
        record = self._records.get(agent_id)
        return record is not None and record.running

    def of_parent(self, parent_id: str | None = None) -> list[BackgroundRecord]:
        """Every record (of one parent, when given), oldest first."""
        return [r for r in self._records.values() if parent_id is None or r.parent_id == parent_id]

    def any_running(self) -> bool:
        """True while any background agent runs."""
        return any(record.running for record in self._records.values())

    async def wait(self, agent_id: str, timeout: float | None) -> BackgroundRecord:
        """Wait up to ``timeout`` seconds (None: no limit) for ``agent_id`` to end; return its record."""
        record = self.get(agent_id)
        if record.task is not None and not record.task.done():
            await asyncio.wait({record.task}, timeout=timeout)
        return record

    async def wait_all(self) -> None:
        """Wait until every background agent ended and delivered its notice (also those started meanwhile)."""
        while True:
            tasks = [r.task for r in self._records.values() if r.task is not None and not r.task.done()]
            if not tasks:
                return
            await asyncio.wait(tasks)

    def cancel(self, agent_id: str) -> bool:
        """Cancel a running background agent; False when it is not running."""
        record = self._records.get(agent_id)
        if record is None or not record.running or record.task is None:
            return False
        record.task.cancel()
        return True

    def cancel_all(self) -> None:
        """Cancel every running background agent."""
        for agent_id in list(self._records):
            self.cancel(agent_id)


def _failed(result: SubAgentResult) -> str:
    if result.stop_reason == "completed":
        return "error"
    return result.stop_reason
