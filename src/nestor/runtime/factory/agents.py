"""The agent factory: every agent of a tree, the main one and each sub-agent, built one way.

An agent is made from an :class:`~nestor.agents.spec.AgentSpec` (the main agent's is the built-in
``coder``, or ``coder-compact`` on a small model; a sub-agent's comes from the registry), a built
model, its tool names, its system prompt and its permissions. The factory adds what every agent
gets: its tools (from the :class:`ToolSource`), large results to a file, the hooks of its tools
(the todo list's completion check), the tree's hooks (cost cap, delegation guard), compaction on
the large model, the small-model harness on a small model, and attaches it to the tree.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic_ai.messages import ModelMessage
from pydantic_ai.settings import ModelSettings

from nestor.agents.registry import AgentRegistry, builtin_spec
from nestor.agents.spec import AgentSpec
from nestor.bus import EventBus
from nestor.checkpoints.recorder import CheckpointRecorder
from nestor.config.settings import ProjectServer, Settings
from nestor.permissions import PermissionPolicy
from nestor.permissions.child import ChildPolicy
from nestor.providers.build import BuiltModel
from nestor.runtime.factory.prompt import build_system_prompt
from nestor.runtime.factory.toolset import main_tool_names
from nestor.runtime.features.checkpoints import CheckpointHook
from nestor.runtime.features.compaction import Compaction, SummaryModel
from nestor.runtime.features.large_results import LargeResultHook
from nestor.runtime.features.small.gathering.reader import ProjectReader
from nestor.runtime.features.small.harness import SmallModelHarness
from nestor.runtime.kernel.context import ContextPolicy
from nestor.runtime.kernel.hooks import Budgets, Hook, TreeBudget
from nestor.runtime.kernel.loop import SessionAgent
from nestor.runtime.kernel.permission_gate import PermissionAsker
from nestor.runtime.kernel.setup import AgentSetup
from nestor.runtime.tree.delegation import AgentTree
from nestor.runtime.tree.mcp_tools import allowed_mcp_tools, own_project_servers
from nestor.runtime.tree.services import ChildRequest, TreeServices
from nestor.runtime.tree.subagent_hooks import (
    MAIN_AGENT_REPORT,
    SearchBudgetHook,
    SubAgentSafetyHook,
    TimeoutReportHook,
)
from nestor.store.messages import MessageStore
from nestor.store.sessions import Session, SessionStore
from nestor.tools.base import Tool
from nestor.tools.catalogue import ToolCatalogue
from nestor.tools.mcp.approval import AskApproval, ServerApprovals
from nestor.tools.mcp.servers import McpServers


class ModelSource(Protocol):
    """Built models by role (``large``/``small``) or ``provider:model`` (the process's model builder)."""

    def choose(self, choice: str, env: Mapping[str, str]) -> BuiltModel:
        """The model of ``choice``; raises a ``NestorError`` when it cannot be built."""
        ...


class ToolSource(Protocol):
    """Fresh tools by name for a new agent, and the hooks that come with them."""

    def build(self, names: Sequence[str], session_id: str, tree: AgentTree) -> list[Tool[Any]]:
        """The tools named ``names`` (in that order) for session ``session_id``."""
        ...

    def hooks(self, names: Sequence[str], session_id: str) -> list[Hook]:
        """Hooks the tools named ``names`` bring (the todo list's completion check)."""
        ...


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
        environment: The ``<environment>`` section of system prompts.
        instructions: The instruction files' text (read anew for each task); None gives none.
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
    environment: Callable[[], Awaitable[str]]
    instructions: Callable[[], str] | None = None
    user_config_dir: Path | None = None
    summarizer: SummaryModel | None = None
    mcp: McpServers | None = None
    mcp_approvals: ServerApprovals | None = None
    ask_approval: AskApproval | None = None
    notify: Callable[[str], None] = lambda _message: None
    subagent_hooks: Callable[[], Sequence[Hook]] | None = None
    checkpoints: CheckpointRecorder | None = None
    tree: AgentTree = field(init=False)
    _own_servers: dict[str, McpServers] = field(default_factory=dict[str, McpServers])
    _closing: set[asyncio.Task[None]] = field(default_factory=set[asyncio.Task[None]])

    def __post_init__(self) -> None:
        settings = self.settings
        self.tree = AgentTree(
            TreeServices(
                registry=self.registry,
                config=settings.agents,
                sessions=self.sessions,
                messages=self.messages,
                bus=self.bus,
                project_root=Path(settings.project_root),
                environment=self.environment,
                builder=self,
                instructions=self.instructions,
                catalogue=self.catalogue,
            )
        )

    @property
    def project_root(self) -> Path:
        """The project every agent of the tree works in."""
        return Path(self.settings.project_root)

    def scratch_dir(self, session_id: str) -> Path:
        """The directory where a session keeps temporary files (large tool results); made on first use."""
        return self.settings.data_dir / "scratch" / session_id

    def _large_results(self, session_id: str) -> LargeResultHook:
        """Tool results over ``[context] tool_result_max_tokens`` go to a file in the scratch dir."""
        return LargeResultHook(self.scratch_dir(session_id), self.settings.context.tool_result_max_tokens)

    def model(self, choice: str) -> BuiltModel:
        """The model of a role or ``provider:model``."""
        return self.models.choose(choice, self.env)

    async def main(
        self,
        session: Session,
        built: BuiltModel,
        *,
        spec: AgentSpec | None = None,
        hooks: Sequence[Hook] = (),
    ) -> SessionAgent:
        """The main agent on ``session``, from ``spec`` (the built-in ``coder`` by default).

        The default is ``coder-compact`` on a small model, whatever the user's or the project's
        files define.

        Its tools are the spec's (without delegation when ``max_depth`` allows none), its prompt
        the spec's with the environment and the instruction files, its budgets the run's limits,
        shared by the whole tree.
        """
        settings = self.settings
        spec = spec or builtin_spec("coder-compact" if built.compact else "coder")
        # The main agent runs on the large model, which also writes its summaries (its own and
        # its sub-agents').
        self.summarizer = SummaryModel(
            model=built.model,
            name=built.name,
            settings=built.settings,
            priced=built.priced,
            context_window=built.context_window,
        )
        system_prompt = await build_system_prompt(
            spec.prompt, self.project_root, user_config_dir=self.user_config_dir
        )
        permissions = settings.permissions
        policy = PermissionPolicy.from_config(
            permissions.allow,
            permissions.ask,
            permissions.deny,
            project_root=str(self.project_root),
            yolo=settings.yolo,
        )
        limits = settings.limits
        # The run flags bound the whole tree: every sub-agent spends the main agent's budget too.
        budgets = Budgets(
            max_iterations=limits.max_iterations,
            max_total_tokens=limits.max_tokens,
            max_time_s=limits.max_time_s,
        )
        registry = self.registry
        tool_names = main_tool_names(spec, self.catalogue, can_delegate=self.tree.can_delegate(0))
        if self.mcp is not None:
            tool_names += await self.mcp.tool_names()
        agent = self._build(
            spec,
            session,
            built,
            tools=self.tools.build(tool_names, session.id, self.tree),
            system_prompt=system_prompt,
            policy=policy,
            asker=self.asker,
            budgets=budgets,
            tree_budget=TreeBudget(budgets),
            hooks=[
                self._large_results(session.id),
                TimeoutReportHook(MAIN_AGENT_REPORT),
                *hooks,
                *self.tools.hooks(tool_names, session.id),
                *self.tree.tree_hooks(0),
                *self._checkpoint_hooks(self.project_root),
            ],
            harness=SmallModelHarness(
                ProjectReader(self.project_root),
                agent_names=lambda: [delegable.name for delegable in registry.delegable()],
            )
            if built.compact
            else None,
        )
        self.tree.attach(agent)
        return agent

    async def child(self, request: ChildRequest) -> SessionAgent:
        """A sub-agent for a task: the spec's tools within its parent's, permissions never wider.

        An agent file's own MCP servers start here, for this agent alone; :meth:`release` stops them.
        """
        spec, parent, session = request.spec, request.parent, request.session
        tools = self.tools.build(request.tool_names, session.id, self.tree)
        if spec.own_mcp_servers and request.workspace is None:
            tools += await self._own_mcp_tools(spec, parent, session.id)
        read_only = (
            spec.is_read_only(self.catalogue)
            or all(self.catalogue.has(tool.name, "read_only") for tool in tools)
            or request.workspace is not None
        )
        if request.workspace is not None:
            policy: PermissionPolicy = ChildPolicy.for_workspace(
                parent.setup.policy, str(request.workspace), label=f"agent {spec.name}"
            )
        else:
            policy = ChildPolicy.for_spec(
                parent.setup.policy,
                [(rule.action, rule.rule) for rule in spec.permission],
                read_only=read_only,
                label=f"agent {spec.name}",
                source=str(spec.path) if spec.path else f"agent {spec.name}",
            )
        config = self.settings.agents
        root = request.workspace or self.project_root
        built = request.built
        return self._build(
            spec,
            session,
            built,
            tools=tools,
            system_prompt=request.system_prompt,
            policy=policy,
            asker=None if read_only else self.asker,
            budgets=Budgets(),
            tree_budget=parent.setup.tree_budget,
            hooks=[
                request.tracker,
                SubAgentSafetyHook(spec.max_context_tokens or config.max_context_tokens, self.catalogue),
                SearchBudgetHook(config.search_budget, self.catalogue),
                TimeoutReportHook(),
                self._large_results(session.id),
                *self.tree.tree_hooks(parent.setup.depth + 1),
                *self.tools.hooks(request.tool_names, session.id),
                *(self.subagent_hooks() if self.subagent_hooks is not None else ()),
                *(self._checkpoint_hooks(root) if not read_only else ()),
            ],
            harness=SmallModelHarness(ProjectReader(root), read_only=read_only) if built.compact else None,
            parent=parent,
            history=request.history,
            project_root=root,
        )

    def _checkpoint_hooks(self, root: Path) -> list[Hook]:
        """The snapshots' hook, for an agent that can change the project's files."""
        if self.checkpoints is None or root.resolve() != self.checkpoints.project_root:
            return []
        return [CheckpointHook(self.checkpoints, self.catalogue, root)]

    async def _own_mcp_tools(self, spec: AgentSpec, parent: SessionAgent, session_id: str) -> list[Tool[Any]]:
        approvals, ask = self.mcp_approvals, self.ask_approval

        async def approve(server: ProjectServer) -> bool:
            return approvals is not None and await approvals.allows(server, ask=ask)

        servers = McpServers(
            dict(spec.own_mcp_servers),
            catalogue=self.catalogue,
            log_dir=self.settings.data_dir / "mcp" / "logs",
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
        built: BuiltModel,
        *,
        tools: Sequence[Tool[Any]],
        system_prompt: str,
        policy: PermissionPolicy,
        asker: PermissionAsker | None,
        budgets: Budgets,
        tree_budget: TreeBudget | None,
        hooks: Sequence[Hook],
        harness: SmallModelHarness | None,
        parent: SessionAgent | None = None,
        history: list[ModelMessage] | None = None,
        project_root: Path | None = None,
    ) -> SessionAgent:
        """The one place an agent is assembled: what every agent gets, around what is its own."""
        settings = self.settings
        depth = 0 if parent is None else parent.setup.depth + 1
        idle_timeout = None if built.in_process else settings.limits.stream_idle_timeout_s or None
        setup = AgentSetup(
            model=built.model,
            model_name=built.name,
            model_settings=_with_temperature(built.settings, spec.temperature),
            priced=built.priced,
            system_prompt=system_prompt,
            tools=tools,
            brief_tools=built.compact,
            sessions=self.sessions,
            messages=self.messages,
            bus=self.bus,
            policy=policy,
            asker=asker,
            project_root=project_root or self.project_root,
            scratch_dir=self.scratch_dir(session.id),
            context=ContextPolicy.configured(built.context_window, settings.context),
            compactor=Compaction(self.summarizer),
            budgets=budgets,
            tree_budget=tree_budget,
            stream_idle_timeout_s=idle_timeout,
            hooks=hooks,
            harness=harness,
            agent_type=spec.name if parent is not None else "coder",
            parent_id=None if parent is None else parent.session_id,
            depth=depth,
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
