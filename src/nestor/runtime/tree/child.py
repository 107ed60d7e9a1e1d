"""A sub-agent made for one task: what tracks it, its pool key, and its result for the parent."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nestor.agents.spec import AgentSpec
from nestor.core.usage import Usage
from nestor.runtime.kernel.loop import SessionAgent
from nestor.runtime.kernel.setup import RunResult
from nestor.runtime.tree.mcp_tools import servers_key
from nestor.runtime.tree.pool import PoolKey
from nestor.runtime.tree.services import TaskRequest
from nestor.runtime.tree.subagent_result import SubAgentResult, ToolTracker, task_stop_reason


@dataclass
class Child:
    """A sub-agent made for one task: the agent, what tracks it, and where it came from."""

    agent: SessionAgent
    spec: AgentSpec
    tracker: ToolTracker
    pool_key: PoolKey | None
    resumed: bool = False


def pool_key(parent_id: str, spec: AgentSpec, tool_names: Sequence[str], model: str) -> PoolKey:
    """What a pooled agent must match to take a new task: parent, spec (its files' text), tools, model.

    Its MCP servers too: its own servers' tools are not among ``tool_names``.
    """
    digest = hashlib.sha256(spec.prompt.encode())
    for path in (*spec.rule_files, *spec.skill_files):
        try:
            digest.update(path.read_bytes())
        except OSError:
            digest.update(str(path).encode())
    tools = hashlib.sha256("\n".join(sorted(tool_names)).encode()).hexdigest()[:16]
    return PoolKey(parent_id, spec.name, digest.hexdigest()[:16], tools, model, servers_key(spec))


def tracker_of(agent: SessionAgent) -> ToolTracker:
    """The tool tracker among a sub-agent's hooks (a pooled agent keeps its own)."""
    for hook in agent.setup.hooks:
        if isinstance(hook, ToolTracker):
            return hook
    raise RuntimeError("a pooled agent lost its tool tracker")


def task_result(
    child: Child, request: TaskRequest, run: RunResult, usage: Usage, elapsed: float
) -> SubAgentResult:
    """The result of a task for its parent: the child's report, or why there is none."""
    summary = run.text.strip()
    stop = task_stop_reason(run.stop_reason)
    error = run.error
    if not error and stop != "completed":
        error = f"stopped: {stop}"
    if not summary and not run.is_error:
        error = "the sub-agent ended without a report (an empty final message)"
    return SubAgentResult(
        success=not run.is_error and stop == "completed" and bool(summary),
        agent_type=child.spec.name,
        agent_id=child.agent.session_id,
        description=request.description,
        summary=summary,
        files_explored=list(child.tracker.files),
        tools_used=dict(child.tracker.tools_used),
        num_turns=run.num_turns,
        execution_time=elapsed,
        usage=usage.to_dict(),
        cost_usd=usage.cost_usd,
        stop_reason=stop if summary or run.is_error else "error",
        error=error,
    )


async def wait_ignoring_cancel(task: asyncio.Task[Any]) -> None:
    """Wait for ``task`` to end even if the waiter is cancelled again meanwhile (no orphans)."""
    while not task.done():
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError:
            continue
    if not task.cancelled():
        task.exception()  # retrieved: no "exception was never retrieved" warning
