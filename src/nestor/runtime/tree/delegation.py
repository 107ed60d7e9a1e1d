"""The agent tree: how a parent agent starts, resumes and reuses sub-agents.

One :class:`AgentTree` serves every agent under one root. For a ``task`` call it picks the spec
from the registry, the model (the call's, the spec's, else the parent's), the tools (the spec's,
never more than the parent's, never ``task`` past ``max_depth``), the permissions (the spec's
intersected with the parent's), the budgets (call, then spec, then ``[agents]``), opens a child
session, and runs a child :class:`SessionAgent` on it. Every response of the child rolls its usage
up to every ancestor as it is stored, so totals are live; a failed or cancelled child still
counts what it spent.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart

from nestor.agents.listing import agent_names
from nestor.agents.spec import AgentSpec
from nestor.core.errors import DelegationError, NestorError, ToolError, UnknownAgentError
from nestor.core.events import ErrorEvent
from nestor.providers.build import BuiltModel
from nestor.runtime.kernel.history import load_visible_history
from nestor.runtime.kernel.hooks import Budgets, Hook
from nestor.runtime.kernel.loop import SessionAgent
from nestor.runtime.tree.background import BackgroundAgents
from nestor.runtime.tree.child import Child, pool_key, task_result, tracker_of, wait_ignoring_cancel
from nestor.runtime.tree.mcp_tools import allowed_mcp_tools
from nestor.runtime.tree.model_choice import resolve_model_choice
from nestor.runtime.tree.pool import AgentPool, PoolKey
from nestor.runtime.tree.services import ChildRequest, TaskRequest, TreeServices
from nestor.runtime.tree.subagent_hooks import DelegationGuardHook
from nestor.runtime.tree.subagent_prompt import compose_subagent_prompt
from nestor.runtime.tree.subagent_result import SubAgentResult, ToolTracker
from nestor.runtime.tree.tree_usage import TreeCostHook, TreeUsage
from nestor.store.sessions import Session


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

    def tree_hooks(self, depth: int) -> list[Hook]:
        """Hooks every agent of the tree gets: the cost cap, and the delegation guard where allowed."""
        hooks: list[Hook] = []
        if self.services.config.max_cost_usd is not None:
            hooks.append(TreeCostHook(float(self.services.config.max_cost_usd), self.tree_cost))
        if self.can_delegate(depth):
            hooks.append(DelegationGuardHook(lambda args: self.check_task(args, depth)))
        return hooks

    def can_delegate(self, depth: int) -> bool:
        """True when an agent at ``depth`` may start sub-agents."""
        return depth < self.services.config.max_depth

    def check_task(self, args: dict[str, object], depth: int) -> str | None:
        """Why a ``task`` call with ``args`` from an agent at ``depth`` cannot run (None when it can)."""
        prompt = args.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            return "The task prompt is empty. Say what the sub-agent should do, with the context it needs."
        if not self.can_delegate(depth):
            return (
                f"Delegation is limited to {self.services.config.max_depth} level(s) "
                "([agents] max_depth); do this yourself."
            )
        if args.get("resume"):
            return None
        name = args.get("subagent_type") or "general"
        try:
            spec = self.services.registry.get(str(name))
        except UnknownAgentError as exc:
            return str(exc)
        if not spec.delegable:
            return f"Agent {spec.name!r} is a primary agent and cannot be delegated to. {self._available()}"
        return None

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
        depth = parent.setup.depth + 1
        if not self.can_delegate(parent.setup.depth):
            raise ToolError(f"delegation is limited to {self.services.config.max_depth} level(s)")
        if request.resume:
            child = await self._resume(parent, request, depth)
            child.agent.setup.parent_tool_call_id = tool_call_id
            return child
        spec = request.spec or self._spec(request.subagent_type)
        built = self._model(request.model or spec.model, parent)
        if request.workspace is not None:
            never = self._never_inherited()
            tool_names = [name for name in spec.tools or () if name not in never]
            environment = instructions = ""  # the project is not where this agent works
        else:
            tool_names = self._tool_names(spec, parent, depth)
            environment = await self.services.environment()
            instructions = self._instructions(spec)
        system_prompt = compose_subagent_prompt(
            spec, thoroughness=request.thoroughness, environment=environment, instructions=instructions
        )
        persist = spec.persist and request.workspace is None
        key = pool_key(parent.session_id, spec, tool_names, built.name) if persist else None
        if key is not None:
            self._forget(self.pool.expire())
            pooled = self.pool.take(key)
            if pooled is not None:
                self.services.sessions.set_title(pooled.session_id, request.description)
                pooled.setup.parent_tool_call_id = tool_call_id
                return self._reuse(pooled, parent, spec, request, system_prompt, key)
        session = self.services.sessions.create(
            self.services.project_root,
            agent_name=spec.name,
            model=built.name,
            title=request.description,
            parent_id=parent.session_id,
            parent_tool_call_id=tool_call_id,
        )
        history: list[ModelMessage] = []
        if spec.inherit_context:
            history = self._inherited_history(parent, session.id)
        child = await self._build(
            parent, session, spec, built, tool_names, system_prompt, history, key, request.workspace
        )
        self._configure_run(child.agent, spec, request)
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

    async def _resume(self, parent: SessionAgent, request: TaskRequest, depth: int) -> Child:
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
        built = self._model(request.model or spec.model, parent)
        tool_names = self._tool_names(spec, parent, depth)
        system_prompt = compose_subagent_prompt(
            spec,
            thoroughness=request.thoroughness,
            environment=await self.services.environment(),
            instructions=self._instructions(spec),
        )
        if session.parent_id != parent.session_id:
            self.services.sessions.reparent(session.id, parent.session_id)
        if request.description:
            self.services.sessions.set_title(session.id, request.description)
        key = pool_key(parent.session_id, spec, tool_names, built.name) if spec.persist else None
        if pooled is not None:
            child = self._reuse(pooled, parent, spec, request, system_prompt, key)
            child.resumed = True
            return child
        history = load_visible_history(self.services.messages, session.id)
        child = await self._build(parent, session, spec, built, tool_names, system_prompt, history, key)
        self._configure_run(child.agent, spec, request)
        child.resumed = True
        return child

    def _reuse(
        self,
        agent: SessionAgent,
        parent: SessionAgent,
        spec: AgentSpec,
        request: TaskRequest,
        system_prompt: str,
        key: PoolKey | None,
    ) -> Child:
        """Take an idle pooled agent for a new task: fresh system prompt, budgets and tracker."""
        agent.set_system_prompt(system_prompt)
        self._configure_run(agent, spec, request)
        tracker = tracker_of(agent)
        tracker.reset()
        self.live[agent.session_id] = agent
        self._children_of.setdefault(parent.session_id, set()).add(agent.session_id)
        return Child(agent, spec, tracker, key)

    async def _build(
        self,
        parent: SessionAgent,
        session: Session,
        spec: AgentSpec,
        built: BuiltModel,
        tool_names: Sequence[str],
        system_prompt: str,
        history: list[ModelMessage],
        key: PoolKey | None,
        workspace: Path | None = None,
    ) -> Child:
        tracker = ToolTracker()
        request = ChildRequest(
            parent, session, spec, built, tool_names, system_prompt, history, tracker, workspace
        )
        agent = await self.services.builder.child(request)
        self.attach(agent)
        self._children_of.setdefault(parent.session_id, set()).add(session.id)
        return Child(agent, spec, tracker, key)

    def _configure_run(self, agent: SessionAgent, spec: AgentSpec, request: TaskRequest) -> None:
        config = self.services.config
        agent.set_budgets(
            Budgets(
                max_iterations=request.max_turns or spec.max_turns or config.max_turns,
                max_time_s=float(request.timeout or spec.timeout or config.timeout_s),
            )
        )
        agent.setup.description = request.description or agent.setup.description

    def _instructions(self, spec: AgentSpec) -> str:
        """The instruction files for an agent of ``spec`` ('' when it opted out, or there are none)."""
        read = self.services.instructions
        return read() if read is not None and spec.project_instructions else ""

    def _spec(self, name: str) -> AgentSpec:
        try:
            spec = self.services.registry.get(name or "general")
        except UnknownAgentError as exc:
            raise ToolError(str(exc)) from None
        if not spec.delegable:
            raise ToolError(
                f"agent {spec.name!r} is a primary agent and cannot be delegated to. {self._available()}"
            )
        return spec

    def _never_inherited(self) -> set[str]:
        """Tools a child never inherits: delegation goes by depth, user-facing tools never to a child."""
        catalogue = self.services.catalogue
        return {*catalogue.names("delegation"), *catalogue.names("user_facing")}

    def _tool_names(self, spec: AgentSpec, parent: SessionAgent, depth: int) -> list[str]:
        catalogue = self.services.catalogue
        parent_names = [tool.name for tool in parent.setup.tools]
        # The tools that come with the parent's (web_search and web_fetch with fetch: the same
        # capability, through the same client) are the child's to take too.
        parent_names.extend(name for name in catalogue.companions(parent_names) if name not in parent_names)
        never = self._never_inherited()
        names = list(spec.tool_names(tuple(name for name in parent_names if name not in never)))
        names = allowed_mcp_tools(names, spec, parent.setup.policy, catalogue)
        if self.can_delegate(depth):
            delegation = catalogue.names("delegation")
            wanted = set(delegation) if spec.tools is None else set(spec.tools)
            wanted.update(catalogue.companions(wanted))  # task_status, ... come with task
            names.extend(name for name in delegation if name in wanted)
        return names

    def _model(self, choice: str | None, parent: SessionAgent) -> BuiltModel:
        """The model for ``choice`` (role, tier, Claude alias, ``provider:model``; None inherits)."""
        resolved = resolve_model_choice(choice, self.services.config)
        if resolved is None:
            setup = parent.setup
            window = setup.context.context_window if setup.context else 0
            return BuiltModel(
                model=setup.model,
                settings=setup.model_settings or {},
                name=setup.model_name,
                context_window=window or 128_000,
                priced=setup.priced,
                compact=setup.brief_tools,
                in_process=setup.model.system == "local",
            )
        try:
            return self.services.builder.model(resolved)
        except NestorError as exc:
            raise ToolError(f"cannot use model {choice!r} for the sub-agent: {exc}") from None

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
