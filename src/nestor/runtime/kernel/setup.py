"""What an agent is made of (:class:`AgentSetup`) and what a run gives back (:class:`RunResult`).

Also the two parts the kernel is given rather than knows: compaction and a turn-driving harness.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings

from nestor.bus import EventBus
from nestor.core.errors import ModelRequestError
from nestor.core.events import AgentFinished, Compacted, ErrorEvent
from nestor.core.usage import Usage
from nestor.permissions import PermissionPolicy
from nestor.providers.build import BuiltModel
from nestor.providers.retry import RetryPolicy
from nestor.runtime.kernel.compaction_mark import CompactionTrigger
from nestor.runtime.kernel.context import ContextPolicy
from nestor.runtime.kernel.hooks import Budgets, Hook, RunState, StopReason, TreeBudget
from nestor.runtime.kernel.permission_gate import PermissionAsker
from nestor.store.messages import MessageStore
from nestor.store.sessions import SessionStore
from nestor.tools.base import Tool

if TYPE_CHECKING:
    from nestor.runtime.kernel.driver import HarnessHost
    from nestor.runtime.kernel.loop import SessionAgent


class Compactor(Protocol):
    """Makes one agent's history smaller by summarising its older part (one per agent)."""

    async def at_threshold(self, agent: SessionAgent, state: RunState) -> None:
        """Before a request: compact when the history passes the threshold (a failure is reported)."""
        ...

    async def on_overflow(self, agent: SessionAgent, state: RunState) -> bool:
        """The provider refused the request as too long: compact; True when the request may be retried."""
        ...

    async def compact(
        self,
        agent: SessionAgent,
        trigger: CompactionTrigger,
        *,
        state: RunState | None = None,
        instructions: str | None = None,
        keep_recent_tokens: int | None = None,
    ) -> Compacted | None:
        """Summarise the older history now; None when there was nothing to summarise."""
        ...


class Harness(Protocol):
    """Drives a whole turn instead of the open tool loop (the small-model harness)."""

    async def run_turn(self, host: HarnessHost, prompt: str) -> str | None:
        """Answer ``prompt`` with the host's tools and model; the answer's text, or None."""
        ...


@dataclass(slots=True)
class RunResult:
    """How a run ended and what it produced."""

    stop_reason: StopReason
    text: str
    usage: Usage
    num_turns: int
    duration_s: float
    is_error: bool = False
    error: str | None = None
    hint: str | None = None


@dataclass(slots=True)
class AgentSetup:
    """Everything a :class:`SessionAgent` needs besides its session id.

    Attributes:
        model: The pydantic-ai model to request.
        model_name: ``provider:model``, for events and the store.
        system_prompt: Sent as instructions with every request; never stored in the history, so a
            resumed session gets a fresh one (current date, git status).
        tools: The tools this agent may call.
        sessions: Session rows (status, usage roll-up).
        messages: Message rows.
        bus: Where events go.
        policy: Permission rules and grants.
        asker: Asks the user; None in headless runs (then "ask" means "deny").
        project_root: Working directory of tools.
        scratch_dir: This session's directory for temporary files (large tool results, ...);
            tools may read it without asking. Created on first use.
        built: The model as built, with its facts (context window, pricing, profile): what a
            sub-agent that names no model of its own shares; None outside the factory.
        model_settings: Per-model options (max_tokens, temperature, thinking, ...).
        priced: Whether public price tables apply to this model (see ``BuiltModel.priced``).
        context: When to compact the history; None never compacts on its own (``compact()`` still
            works, with the default window).
        compactor: Summarises the older history (``features/compaction.py``); None never compacts
            (``compact()`` finds nothing to do).
        brief_tools: Describe tools in one line each and drop schema titles (small local models,
            where every prompt token costs time).
        hooks: Every hook the agent runs, in order: the agent recipe (``runtime/factory/recipe.py``)
            decides them, the budget hook and the loop guard included; the kernel adds none.
        budgets: Iteration, token and time limits of a run.
        tree_budget: The main agent's budgets, shared by every agent of its tree (the main agent
            starts it with each prompt); None for an agent outside a tree.
        retry: Retry policy for model requests.
        stream_idle_timeout_s: Give up (then retry once) a model stream silent for this many
            seconds; None waits as long as the provider's client (the in-process model, whose
            first token can take minutes on a long prompt).
        sleep: Waits between retries (tests inject a fast one).
        agent_type: The agent spec's name, for events.
        parent_id: Parent agent id, for sub-agents.
        depth: 0 for the main agent.
        description: What the agent was asked to do, in a few words (a sub-agent's task), for events.
        parent_tool_call_id: The parent's tool call that started the sub-agent's current run.
        harness: Drives each new prompt instead of the open tool loop (the small-model harness,
            ``features/small/harness.py``); None for capable models.

    """

    model: Model
    model_name: str
    system_prompt: str
    tools: Sequence[Tool[Any]]
    sessions: SessionStore
    messages: MessageStore
    bus: EventBus
    policy: PermissionPolicy
    asker: PermissionAsker | None
    project_root: Path
    scratch_dir: Path | None = None
    built: BuiltModel | None = None
    model_settings: ModelSettings | None = None
    priced: bool = True
    context: ContextPolicy | None = None
    compactor: Compactor | None = None
    brief_tools: bool = False
    hooks: Sequence[Hook] = ()
    budgets: Budgets = field(default_factory=Budgets)
    tree_budget: TreeBudget | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    stream_idle_timeout_s: float | None = None
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    agent_type: str = "coder"
    parent_id: str | None = None
    depth: int = 0
    description: str = ""
    parent_tool_call_id: str | None = None
    harness: Harness | None = None


async def finish_run(
    agent: SessionAgent,
    hooks: Sequence[Hook],
    state: RunState,
    stop: tuple[StopReason, str | None],
    error: BaseException | None,
) -> RunResult:
    """End a run: its result, the session's status, the hooks' ``on_run_end``, the event.

    The result's text is the last text with the stop's message after it, or the error.
    """
    stop_reason, stop_message = stop
    setup = agent.setup
    hint: str | None = getattr(error, "hint", None)
    text = state.last_text
    if stop_message and stop_reason != "completed":
        text = f"{text}\n\n[{stop_message}]" if text else f"[{stop_message}]"
    if error is not None:
        text = str(error) if isinstance(error, ModelRequestError) else f"{type(error).__name__}: {error}"
        setup.bus.publish(ErrorEvent(agent_id=agent.session_id, message=text, hint=hint))
    result = RunResult(
        stop_reason=stop_reason,
        text=text,
        usage=state.usage,
        num_turns=state.num_turns,
        duration_s=state.elapsed_s,
        is_error=error is not None,
        error=str(error) if error else None,
        hint=hint,
    )
    setup.sessions.set_status(agent.session_id, "idle" if stop_reason == "completed" else stop_reason)
    for hook in hooks:
        await hook.on_run_end(state, result)
    setup.bus.publish(
        AgentFinished(
            agent_id=agent.session_id,
            parent_id=setup.parent_id,
            depth=setup.depth,
            agent_type=setup.agent_type,
            description=setup.description,
            stop_reason=stop_reason,
            result=text,
            is_error=result.is_error,
            num_turns=state.num_turns,
            usage=state.usage.copy(),
            cost_usd=state.usage.cost_usd,
            duration_s=result.duration_s,
        )
    )
    return result
