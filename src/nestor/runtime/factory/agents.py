"""The agent factory: every agent of a tree, the main one and each sub-agent, assembled one way.

What an agent is made of (its model, tools, prompt, permissions, budgets, hooks and harness) is
decided by the agent recipe, ``recipe.py``, for the main agent and each sub-agent alike; the
factory assembles what it decides into a :class:`SessionAgent`, starts and stops the agent files'
own MCP servers, and makes the tree, which asks it for children through
:class:`~nestor.runtime.tree.services.ChildBuilder`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic_ai.messages import ModelMessage
from pydantic_ai.settings import ModelSettings

from nestor.agents.registry import AgentRegistry
from nestor.agents.spec import AgentSpec
from nestor.bus import EventBus
from nestor.checkpoints.recorder import CheckpointRecorder
from nestor.config.hooks import ConfiguredHook
from nestor.config.paths import mcp_log_dir, scratch_dir
from nestor.config.settings import ProjectServer, Settings
from nestor.providers.build import BuiltModel
from nestor.runtime.factory.prompt import EnvironmentCache, read_instructions
from nestor.runtime.factory.recipe import AgentParts, ModelSource, Recipe, ToolSource
from nestor.runtime.features.compaction import Compaction, SummaryModel
from nestor.runtime.features.hook_events.dispatcher import HookDispatcher
from nestor.runtime.features.titles import TitleWriter
from nestor.runtime.kernel.context import ContextPolicy
from nestor.runtime.kernel.hooks import Hook
from nestor.runtime.kernel.loop import SessionAgent
from nestor.runtime.kernel.permission_gate import PermissionAsker
from nestor.runtime.kernel.setup import AgentSetup
from nestor.runtime.tree.delegation import AgentTree
from nestor.runtime.tree.mcp_tools import allowed_mcp_tools, own_project_servers
from nestor.runtime.tree.services import AgentPlan, ChildRequest, TaskRequest, TreeServices
from nestor.store.messages import MessageStore
from nestor.store.sessions import Session, SessionStore
from nestor.tools.base import Tool
from nestor.tools.catalogue import ToolCatalogue
from nestor.tools.mcp.approval import AskApproval, ServerApprovals
from nestor.tools.mcp.servers import McpServers


@dataclass
class AgentFactory:
    """Builds the agents of one tree; one factory per main agent.

    Attributes:
        settings: The settings (permissions, limits, ``[agents]``, ``[context]``, data dir).
        registry: The agent specs.
        catalogue: Every tool the process knows.
        models: Builds models.
        tools: Builds tools.
        sessions: Session rows.
        messages: Message rows.
        bus: Where every agent's events go.
        env: The environment models are built with (credentials).
        asker: The root UI's permission asker (None headless); children's questions go there.
        environment: The ``<environment>`` section of sub-agents' system prompts (None: the
            project's, cached a few seconds).
        instructions: The instruction files' text, read anew for each task (None: the user's and
            the project's ``AGENTS.md`` files).
        user_config_dir: nestor's user config directory (the user's ``AGENTS.md``); None reads none.
        mcp: The process's MCP servers (None without any): the main agent gets all their tools.
        mcp_approvals: The user's approvals of a project's MCP servers: an agent file of the
            project starts its own servers only once approved (none without it).
        ask_approval: Asks the user to approve such a server, where someone can answer (None:
            an unapproved server is skipped, and named).
        notify: Tells the user in one line what went wrong without stopping the run (an agent's
            own MCP server that cannot start).
        summarizer: Writes compaction summaries for every agent of the tree (the main agent's
            model: set when the main agent is built).
        subagent_hooks: Makes an embedder's hooks for each sub-agent (called once per sub-agent
            built, so that no two agents share a hook's state); None adds none.
        checkpoints: The tree's snapshots: every agent that can change files gets a hook that
            snapshots the project around its calls that can (None: no checkpoints).
        events: The hooks of Claude Code's events every agent fires (None: none).
        hook_allows: Whether an agent file's own hook may run (a project's: once approved).
        tree: The tree of the agents this factory builds.

    """

    settings: Settings
    registry: AgentRegistry
    catalogue: ToolCatalogue
    models: ModelSource
    tools: ToolSource
    sessions: SessionStore
    messages: MessageStore
    bus: EventBus
    env: Mapping[str, str]
    asker: PermissionAsker | None
    environment: Callable[[], Awaitable[str]] | None = None
    instructions: Callable[[], str] | None = None
    user_config_dir: Path | None = None
    summarizer: SummaryModel | None = None
    mcp: McpServers | None = None
    mcp_approvals: ServerApprovals | None = None
    ask_approval: AskApproval | None = None
    notify: Callable[[str], None] = lambda _message: None
    subagent_hooks: Callable[[], Sequence[Hook]] | None = None
    checkpoints: CheckpointRecorder | None = None
    events: HookDispatcher | None = None
    hook_allows: Callable[[ConfiguredHook], bool] = lambda hook: not hook.project
    tree: AgentTree = field(init=False)
    recipe: Recipe = field(init=False)
    _own_servers: dict[str, McpServers] = field(default_factory=dict[str, McpServers])
    _closing: set[asyncio.Task[None]] = field(default_factory=set[asyncio.Task[None]])

    def __post_init__(self) -> None:
        settings = self.settings
        project_root = Path(settings.project_root)
        self.tree = AgentTree(
            TreeServices(
                registry=self.registry,
                config=settings.agents,
                sessions=self.sessions,
                messages=self.messages,
                bus=self.bus,
                project_root=project_root,
                builder=self,
            )
        )
        user_config_dir = self.user_config_dir
        self.recipe = Recipe(
            settings=settings,
            registry=self.registry,
            catalogue=self.catalogue,
            models=self.models,
            tools=self.tools,
            messages=self.messages,
            tree=self.tree,
            env=self.env,
            asker=self.asker,
            environment=self.environment or EnvironmentCache(project_root).get,
            instructions=self.instructions or (lambda: read_instructions(project_root, user_config_dir)),
            user_config_dir=user_config_dir,
            mcp=self.mcp,
            subagent_hooks=self.subagent_hooks,
            checkpoints=self.checkpoints,
            events=self.events,
            hook_allows=self.hook_allows,
            notify=self.notify,
        )

    @property
    def project_root(self) -> Path:
        """The project every agent of the tree works in."""
        return Path(self.settings.project_root)

    async def main(
        self,
        session: Session,
        built: BuiltModel,
        *,
        spec: AgentSpec | None = None,
        hooks: Sequence[Hook] = (),
        titles: TitleWriter | None = None,
    ) -> SessionAgent:
        """The main agent on ``session``, from ``spec`` (the recipe's by default), attached to the tree.

        ``hooks`` are the embedder's own; ``titles`` titles a new session.
        """
        spec = spec or self.recipe.main_spec(built)
        # The main agent runs on the large model, which also writes its summaries (its own and
        # its sub-agents').
        self.summarizer = SummaryModel(
            model=built.model,
            name=built.name,
            settings=built.settings,
            priced=built.priced,
            context_window=built.context_window,
        )
        plan = await self.recipe.plan(spec, None, built=built)
        parts = self.recipe.parts(spec, plan, session.id, None, hooks=hooks, titles=titles)
        agent = self._build(spec, session, plan, parts)
        self.tree.attach(agent)
        return agent

    async def plan(self, parent: SessionAgent, spec: AgentSpec, task: TaskRequest) -> AgentPlan:
        """A sub-agent's model, tools, prompt and budgets, as the recipe decides them."""
        return await self.recipe.plan(spec, parent, task)

    async def child(self, request: ChildRequest) -> SessionAgent:
        """A sub-agent as the recipe decides it, from the tree's request.

        An agent file's own MCP servers start here, for this agent alone; :meth:`release` stops them.
        """
        spec, parent, session = request.spec, request.parent, request.session
        own_tools: list[Tool[Any]] = []
        if spec.own_mcp_servers and request.workspace is None:
            own_tools = await self._own_mcp_tools(spec, parent, session.id)
        parts = self.recipe.parts(
            spec, request.plan, session.id, parent, workspace=request.workspace, own_tools=own_tools
        )
        return self._build(spec, session, request.plan, parts, parent=parent, history=request.history)

    async def _own_mcp_tools(self, spec: AgentSpec, parent: SessionAgent, session_id: str) -> list[Tool[Any]]:
        approvals, ask = self.mcp_approvals, self.ask_approval

        async def approve(server: ProjectServer) -> bool:
            return approvals is not None and await approvals.allows(server, ask=ask)

        servers = McpServers(
            dict(spec.own_mcp_servers),
            catalogue=self.catalogue,
            log_dir=mcp_log_dir(self.settings.data_dir),
            project_root=self.project_root,
            notify=self.notify,
            owner=f"agent {spec.name}'s own MCP servers",
            project=own_project_servers(spec),
            approve=approve,
        )
        self._own_servers[session_id] = servers
        wanted = [name for name in await servers.tool_names() if spec.wants(name)]
        names = allowed_mcp_tools(wanted, spec, parent.setup.policy, self.catalogue)
        return servers.tools(names)

    def release(self, agent_id: str) -> None:
        """Stop the own MCP servers of the sub-agent ``agent_id``, which will not run again."""
        servers = self._own_servers.pop(agent_id, None)
        if servers is not None:
            closing = asyncio.get_running_loop().create_task(
                servers.close(), name=f"stop MCP servers of {agent_id}"
            )
            self._closing.add(closing)
            closing.add_done_callback(self._closing.discard)

    async def close(self) -> None:
        """Stop every sub-agent's own MCP servers still running (the process ends)."""
        for agent_id in list(self._own_servers):
            self.release(agent_id)
        await asyncio.gather(*self._closing, return_exceptions=True)

    def _build(
        self,
        spec: AgentSpec,
        session: Session,
        plan: AgentPlan,
        parts: AgentParts,
        *,
        parent: SessionAgent | None = None,
        history: list[ModelMessage] | None = None,
    ) -> SessionAgent:
        """The one assembly of an agent, from what the recipe decided."""
        settings = self.settings
        built = plan.built
        idle_timeout = None if built.in_process else settings.limits.stream_idle_timeout_s or None
        setup = AgentSetup(
            model=built.model,
            model_name=built.name,
            built=built,
            model_settings=_with_temperature(built.settings, spec.temperature),
            priced=built.priced,
            system_prompt=plan.system_prompt,
            tools=parts.tools,
            brief_tools=built.small_profile,
            sessions=self.sessions,
            messages=self.messages,
            bus=self.bus,
            policy=parts.policy,
            asker=parts.asker,
            project_root=parts.project_root,
            scratch_dir=scratch_dir(settings.data_dir, session.id),
            context=ContextPolicy.configured(built.context_window, settings.context),
            compactor=Compaction(self.summarizer),
            budgets=plan.budgets,
            tree_budget=parts.tree_budget,
            stream_idle_timeout_s=idle_timeout,
            hooks=parts.hooks,
            harness=parts.harness,
            agent_type=spec.name if parent is not None else "coder",
            parent_id=None if parent is None else parent.session_id,
            depth=0 if parent is None else parent.setup.depth + 1,
            description=session.title if parent is not None else "",
        )
        if parent is not None:
            setup.retry, setup.sleep = parent.setup.retry, parent.setup.sleep
        return SessionAgent(session.id, setup, history=history)


def _with_temperature(settings: ModelSettings, temperature: float | None) -> ModelSettings:
    if temperature is None:
        return settings
    changed = ModelSettings(**settings)  # pyright: ignore[reportCallIssue]
    changed["temperature"] = temperature
    return changed
