"""The agent tree: how a parent agent starts, resumes and reuses sub-agents.

One :class:`AgentTree` serves every agent under one root. For a ``task`` call it picks the spec
from the registry, asks the factory for the child's plan (its model, tools, prompt and budgets:
``runtime/factory/recipe.py`` decides them), takes an idle pooled agent that fits or opens a child
session and asks the factory for a new agent on it, and runs it. Every response of the child rolls its usage
up to every ancestor as it is stored, so totals are live; a failed or cancelled child still
counts what it spent.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart

from nestor.agents.listing import agent_names
from nestor.agents.spec import AgentSpec
from nestor.core.errors import DelegationError, NestorError, ToolError, UnknownAgentError
from nestor.core.events import ErrorEvent
from nestor.runtime.kernel.history import load_visible_history
from nestor.runtime.kernel.loop import SessionAgent
from nestor.runtime.tree.background import BackgroundAgents
from nestor.runtime.tree.child import Child, pool_key, task_result, tracker_of, wait_ignoring_cancel
from nestor.runtime.tree.pool import AgentPool, PoolKey
from nestor.runtime.tree.services import AgentPlan, ChildRequest, TaskRequest, TreeServices
from nestor.runtime.tree.subagent_result import SubAgentResult
from nestor.runtime.tree.tree_usage import TreeUsage


@dataclass
class AgentTree:
    """Starts, tracks, pools and cancels the sub-agents of one root agent."""

    services: TreeServices
    root_id: str = ""
    live: dict[str, SessionAgent] = field(default_factory=dict[str, SessionAgent])
    background: BackgroundAgents = field(default_factory=BackgroundAgents)
    pool: AgentPool = field(default_factory=AgentPool)
    _slots: dict[str, asyncio.Semaphore] = field(default_factory=dict[str, asyncio.Semaphore])
    _children_of: dict[str, set[str]] = field(default_factory=dict[str, set[str]])

    def __post_init__(self) -> None:
        config = self.services.config
        self.pool.configure(size=config.pool_size, idle_s=config.pool_idle_s)

    # -- agents of the tree -----------------------------------------------------------------

    def attach(self, agent: SessionAgent) -> None:
        """Make ``agent`` part of the tree: cancelling it cancels its descendants."""
        self.live[agent.session_id] = agent
        if not self.root_id:
            self.root_id = agent.session_id
        agent.add_cancel_listener(lambda: self.cancel_descendants(agent.session_id))

    def cancel_descendants(self, agent_id: str) -> None:
        """Cancel every running descendant of ``agent_id`` (foreground and background)."""
        for child_id in list(self._children_of.get(agent_id, ())):
            child = self.live.get(child_id)
            if child is not None:
                child.cancel()  # its own listener cancels its children
            self.background.cancel(child_id)

    def tree_cost(self) -> float | None:
        """The root session's total cost so far (its own and every descendant's)."""
        if not self.root_id:
            return None
        return TreeUsage(self.services.sessions).cost(self.root_id)

    def can_delegate(self, depth: int) -> bool:
        """True when an agent at ``depth`` may start sub-agents."""
        return depth < self.services.config.max_depth

    def check_task(self, args: dict[str, object], depth: int) -> str | None:
        """Why a ``task`` call with ``args`` from an agent at ``depth`` cannot run (None when it can).

        The delegation guard asks before the call runs; :meth:`run_task` and
        :meth:`start_background` refuse a call that skipped it by the same depth and agent rules,
        in the same words.
        """
        prompt = args.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            return "The task prompt is empty. Say what the sub-agent should do, with the context it needs."
        if (too_deep := self._too_deep(depth)) is not None:
            return too_deep
        if args.get("resume"):
            return None
        spec = self._delegable(str(args.get("subagent_type") or "general"))
        return spec if isinstance(spec, str) else None

    def _too_deep(self, depth: int) -> str | None:
        """Why an agent at ``depth`` may not delegate (None when it may)."""
        if self.can_delegate(depth):
            return None
        limit = self.services.config.max_depth
        return f"Delegation is limited to {limit} level(s) ([agents] max_depth); do this yourself."

    def _delegable(self, name: str) -> AgentSpec | str:
        """The spec named ``name`` (``general`` for none), or why a task cannot run it."""
        try:
            spec = self.services.registry.get(name or "general")
        except UnknownAgentError as exc:
            return str(exc)
        if not spec.delegable:
            return f"Agent {spec.name!r} is a primary agent and cannot be delegated to. {self._available()}"
        return spec

    def _available(self) -> str:
        return f"Available agents: {agent_names(self.services.registry.delegable())}."

    # -- running tasks ----------------------------------------------------------------------

    async def run_task(self, parent: SessionAgent, request: TaskRequest, tool_call_id: str) -> SubAgentResult:
        """Run a task in the foreground and return its result (after the child ended).

        Raises:
            ToolError: The task cannot start (unknown agent, invalid model, resume refused).
            asyncio.CancelledError: The parent was cancelled; the child was cancelled first and
                its partial work is stored.

        """
        child = await self._prepare(parent, request, tool_call_id)
        async with self._slot(parent.session_id):
            return await self._run_child(child, request)

    async def start_background(self, parent: SessionAgent, request: TaskRequest, tool_call_id: str) -> str:
        """Start a task in the background; return its agent id at once.

        When it ends, a notice is put into the parent's next model request and published.
        """
        child = await self._prepare(parent, request, tool_call_id)
        agent_id = child.agent.session_id

        async def work() -> SubAgentResult:
            async with self._slot(parent.session_id):
                return await self._run_child(child, request)

        self.background.start(
            agent_id,
            parent=parent,
            agent_type=child.spec.name,
            description=request.description,
            work=work(),
            bus=self.services.bus,
        )
        return agent_id

    def _slot(self, parent_id: str) -> asyncio.Semaphore:
        slot = self._slots.get(parent_id)
        if slot is None:
            slot = self._slots[parent_id] = asyncio.Semaphore(self.services.config.max_parallel)
        return slot

    async def _run_child(self, child: Child, request: TaskRequest) -> SubAgentResult:
        agent = child.agent
        usage = TreeUsage(self.services.sessions)
        before = usage.total(agent.session_id)
        started = time.monotonic()
        task = asyncio.create_task(agent.run(request.prompt), name=f"sub-agent {agent.session_id}")
        try:
            result = await asyncio.shield(task)
        except asyncio.CancelledError:
            agent.cancel()
            await wait_ignoring_cancel(task)
            self._release(child)
            raise
        self._release(child)
        spent = usage.gained(agent.session_id, before)
        return task_result(child, request, result, spent, time.monotonic() - started)

    def _release(self, child: Child) -> None:
        """After a task: keep a persistent agent idle in the pool, forget an ephemeral one."""
        if child.pool_key is not None:
            self._forget(self.pool.put(child.pool_key, child.agent))
        else:
            self._forget([child.agent])

    def _forget(self, agents: Sequence[SessionAgent]) -> None:
        """Agents that will not run again: out of the live set, their own MCP servers stopped."""
        for agent in agents:
            self.live.pop(agent.session_id, None)
            self.services.builder.release(agent.session_id)

    # -- building a child -------------------------------------------------------------------

    async def _prepare(self, parent: SessionAgent, request: TaskRequest, tool_call_id: str) -> Child:
        if (too_deep := self._too_deep(parent.setup.depth)) is not None:
            raise ToolError(too_deep)
        if request.resume:
            child = await self._resume(parent, request)
            child.agent.setup.parent_tool_call_id = tool_call_id
            return child
        spec = request.spec or self._spec(request.agent_type)
        plan = await self.services.builder.plan(parent, spec, request)
        persist = spec.persist and request.workspace is None
        key = pool_key(parent.session_id, spec, plan.tool_names, plan.built.name) if persist else None
        if key is not None:
            self._forget(self.pool.expire())
            pooled = self.pool.take(key)
            if pooled is not None:
                self.services.sessions.set_title(pooled.session_id, request.description)
                pooled.setup.parent_tool_call_id = tool_call_id
                return self._reuse(pooled, parent, spec, request, plan, key)
        session = self.services.sessions.create(
            self.services.project_root,
            agent_name=spec.name,
            model=plan.built.name,
            title=request.description,
            parent_id=parent.session_id,
            parent_tool_call_id=tool_call_id,
        )
        history: list[ModelMessage] = []
        if spec.inherit_context:
            history = self._inherited_history(parent, session.id)
        child = await self._build(ChildRequest(parent, session, spec, plan, history, request.workspace), key)
        self._configure_run(child.agent, plan, request)
        child.agent.setup.parent_tool_call_id = tool_call_id
        if history:
            await self._fit_inherited(child.agent, spec)
        return child

    async def _fit_inherited(self, agent: SessionAgent, spec: AgentSpec) -> None:
        """Summarise an inherited conversation that would take over half the child's context budget.

        Without this, a child forked from a long conversation would be stopped by its context
        budget before its first request. A failed summary leaves the history as it is.
        """
        budget = spec.max_context_tokens or self.services.config.max_context_tokens
        if agent.context_tokens() <= budget // 2:
            return
        try:
            await agent.compact(
                "The conversation is handed to a sub-agent for its task; keep what it needs.",
                keep_recent_tokens=budget // 5,
            )
        except NestorError as exc:
            self.services.bus.publish(
                ErrorEvent(
                    agent_id=agent.session_id, message=f"could not summarise the inherited context: {exc}"
                )
            )

    async def _resume(self, parent: SessionAgent, request: TaskRequest) -> Child:
        agent_id = request.resume or ""
        try:
            session = self.services.sessions.get(agent_id)
        except NestorError as exc:
            raise ToolError(f"cannot resume {agent_id}: {exc}") from None
        live = self.live.get(session.id)
        if (live is not None and live.busy) or self.background.running(session.id):
            raise DelegationError(
                f"agent {session.id} is still running; wait for it with task_output "
                "or stop it with task_cancel"
            )
        if session.project_path.resolve() != self.services.project_root.resolve():
            raise DelegationError(
                f"agent {session.id} belongs to another project ({session.project_path}); "
                "it cannot be resumed here"
            )
        if session.parent_id is None:
            raise DelegationError(
                f"{session.id} is a main session, not a sub-agent; it cannot be resumed as a task"
            )
        spec = self._spec(session.agent_name)
        pooled = self.pool.take_by_id(session.id)
        plan = await self.services.builder.plan(parent, spec, request)
        if session.parent_id != parent.session_id:
            self.services.sessions.reparent(session.id, parent.session_id)
        if request.description:
            self.services.sessions.set_title(session.id, request.description)
        key = pool_key(parent.session_id, spec, plan.tool_names, plan.built.name) if spec.persist else None
        if pooled is not None:
            child = self._reuse(pooled, parent, spec, request, plan, key)
            child.resumed = True
            return child
        history = load_visible_history(self.services.messages, session.id)
        child = await self._build(ChildRequest(parent, session, spec, plan, history), key)
        self._configure_run(child.agent, plan, request)
        child.resumed = True
        return child

    def _reuse(
        self,
        agent: SessionAgent,
        parent: SessionAgent,
        spec: AgentSpec,
        request: TaskRequest,
        plan: AgentPlan,
        key: PoolKey | None,
    ) -> Child:
        """Take an idle pooled agent for a new task: fresh system prompt, budgets and tracker."""
        agent.set_system_prompt(plan.system_prompt)
        self._configure_run(agent, plan, request)
        tracker = tracker_of(agent)
        tracker.reset()
        self.live[agent.session_id] = agent
        self._children_of.setdefault(parent.session_id, set()).add(agent.session_id)
        return Child(agent, spec, tracker, key)

    async def _build(self, request: ChildRequest, key: PoolKey | None) -> Child:
        """A new child from the factory, attached to the tree under its parent."""
        agent = await self.services.builder.child(request)
        self.attach(agent)
        self._children_of.setdefault(request.parent.session_id, set()).add(agent.session_id)
        return Child(agent, request.spec, tracker_of(agent), key)

    def _configure_run(self, agent: SessionAgent, plan: AgentPlan, request: TaskRequest) -> None:
        agent.set_budgets(plan.budgets)
        agent.setup.description = request.description or agent.setup.description

    def _spec(self, name: str) -> AgentSpec:
        spec = self._delegable(name)
        if isinstance(spec, str):
            raise ToolError(spec)
        return spec

    def _inherited_history(self, parent: SessionAgent, child_id: str) -> list[ModelMessage]:
        """The parent's conversation up to (not including) the response that made this task call."""
        history = list(parent.history)
        if (
            history
            and isinstance(history[-1], ModelResponse)
            and any(isinstance(part, ToolCallPart) for part in history[-1].parts)
        ):
            history.pop()
        for message in history:
            self.services.messages.append(child_id, message)
        return history
