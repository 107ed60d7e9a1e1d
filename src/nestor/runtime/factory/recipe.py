"""What an agent is made of: the one place that decides it, for the main agent and every sub-agent.

Read this module to answer "what does this agent have?". :meth:`Recipe.plan` decides what is
known before the agent's session exists (its model, tool names, system prompt and run budgets),
:meth:`Recipe.parts` the rest (its tools, permissions, permission asker, the tree's budget, every
hook and the small-model harness). Each takes the agent's spec and its parent, None for the main
agent, and decides each ingredient for both kinds side by side. The factory (``agents.py``) only
assembles what the recipe decided; the kernel adds no hook of its own (the budget hook and the
loop guard are put here too), and the tree gets its children's plans and agents through the
:class:`~nestor.runtime.tree.services.ChildBuilder` protocol.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from nestor.agents.registry import AgentRegistry, builtin_spec
from nestor.agents.spec import AgentSpec
from nestor.checkpoints.recorder import CheckpointRecorder
from nestor.config.hooks import ConfiguredHook
from nestor.config.paths import scratch_dir
from nestor.config.settings import Settings
from nestor.core.errors import NestorError, ToolError
from nestor.permissions import PermissionPolicy
from nestor.permissions.child import ChildPolicy
from nestor.providers.build import BuiltModel
from nestor.runtime.factory.prompt import build_system_prompt, compose_subagent_prompt
from nestor.runtime.features.checkpoints import CheckpointHook
from nestor.runtime.features.hook_events.agent_hook import AgentInfo, EventHook
from nestor.runtime.features.hook_events.dispatcher import HookDispatcher
from nestor.runtime.features.large_results import LargeResultHook
from nestor.runtime.features.titles import TitleHook, TitleWriter
from nestor.runtime.kernel.hooks import BudgetHook, Budgets, Hook, LoopGuardHook, TreeBudget
from nestor.runtime.kernel.loop import SessionAgent
from nestor.runtime.kernel.permission_gate import PermissionAsker
from nestor.runtime.tree.delegation import AgentTree
from nestor.runtime.tree.mcp_tools import allowed_mcp_tools
from nestor.runtime.tree.model_choice import resolve_model_choice
from nestor.runtime.tree.services import AgentPlan, TaskRequest
from nestor.runtime.tree.subagent_hooks import (
    MAIN_AGENT_REPORT,
    DelegationGuardHook,
    SearchBudgetHook,
    SubAgentSafetyHook,
    TimeoutReportHook,
)
from nestor.runtime.tree.subagent_result import ToolTracker
from nestor.runtime.tree.tree_usage import TreeCostHook
from nestor.store.messages import MessageStore
from nestor.tools.base import Tool
from nestor.tools.catalogue import ToolCatalogue
from nestor.tools.mcp.servers import McpServers

if TYPE_CHECKING:
    from nestor.runtime.features.small.harness import SmallModelHarness


def main_tool_names(spec: AgentSpec, catalogue: ToolCatalogue, *, can_delegate: bool) -> list[str]:
    """The main agent's tools: the ones its spec declares (``coder.md``), in that order.

    The delegation tools are left out when ``[agents] max_depth`` allows no sub-agent.
    """
    delegation = set(catalogue.names("delegation"))
    return [name for name in spec.tools or () if can_delegate or name not in delegation]


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


@dataclass(frozen=True, slots=True)
class AgentParts:
    """What the recipe decided about an agent once its session exists.

    Attributes:
        tools: Its tools, built fresh for it.
        policy: Its permissions (a sub-agent's never wider than its parent's).
        asker: Who answers its permission questions (None: "ask" means "deny").
        tree_budget: The main agent's budgets, shared by the whole tree.
        hooks: Every hook it runs, the budget hook and the loop guard first.
        harness: The small-model harness on a small model, else None.
        project_root: Where its tools work (a confined sub-agent's workspace).

    """

    tools: list[Tool[Any]]
    policy: PermissionPolicy
    asker: PermissionAsker | None
    tree_budget: TreeBudget | None
    hooks: list[Hook]
    harness: SmallModelHarness | None
    project_root: Path


@dataclass
class Recipe:
    """The rules that make every agent of one tree; the factory holds one.

    Attributes:
        settings: The settings (permissions, limits, ``[agents]``, ``[context]``, data dir).
        registry: The agent specs.
        catalogue: Every tool the process knows.
        models: Builds the models sub-agents choose.
        tools: Builds tools, and tells the hooks that come with them.
        messages: Message rows (the titles' hook reads the first prompt).
        tree: The tree the agents belong to.
        env: The environment models are built with (credentials).
        asker: The root UI's permission asker (None headless).
        environment: The ``<environment>`` section of sub-agents' system prompts.
        instructions: The instruction files' text, read anew for each sub-agent.
        user_config_dir: nestor's user config directory (the user's ``AGENTS.md``).
        mcp: The process's MCP servers: the main agent gets all their tools.
        subagent_hooks: Makes an embedder's hooks for each sub-agent (None adds none).
        checkpoints: The tree's snapshots (None: no checkpoints).
        events: The user's and the embedder's hooks of Claude Code's events (None: none).
        hook_allows: Whether an agent file's own hook may run (a project's: once approved).
        notify: Shows the user one line (what a hook says, a hook's error).

    """

    settings: Settings
    registry: AgentRegistry
    catalogue: ToolCatalogue
    models: ModelSource
    tools: ToolSource
    messages: MessageStore
    tree: AgentTree
    env: Mapping[str, str]
    asker: PermissionAsker | None
    environment: Callable[[], Awaitable[str]]
    instructions: Callable[[], str]
    user_config_dir: Path | None = None
    mcp: McpServers | None = None
    subagent_hooks: Callable[[], Sequence[Hook]] | None = None
    checkpoints: CheckpointRecorder | None = None
    events: HookDispatcher | None = None
    hook_allows: Callable[[ConfiguredHook], bool] = lambda hook: not hook.project
    notify: Callable[[str], None] = lambda _message: None

    @property
    def project_root(self) -> Path:
        """The project every agent of the tree works in."""
        return Path(self.settings.project_root)

    # -- before the session ---------------------------------------------------------------

    def main_spec(self, built: BuiltModel) -> AgentSpec:
        """The main agent's spec: the built-in ``coder``, ``coder-compact`` on a small model."""
        return builtin_spec("coder-compact" if built.small_profile else "coder")

    async def plan(
        self,
        spec: AgentSpec,
        parent: SessionAgent | None,
        task: TaskRequest | None = None,
        *,
        built: BuiltModel | None = None,
    ) -> AgentPlan:
        """The model, tool names, system prompt and run budgets of an agent of ``spec``.

        Args:
            spec: The agent's spec.
            parent: The agent whose ``task`` call starts it; None for the main agent.
            task: The call's arguments (a sub-agent's model, budgets, thoroughness, workspace).
            built: The main agent's model (the large one, built before its session).

        Raises:
            ToolError: A sub-agent's model cannot be built.

        """
        if parent is None:
            if built is None:
                raise ValueError("the main agent's model is built before its plan")
            return AgentPlan(
                built=built,
                tool_names=await self._main_tool_names(spec),
                system_prompt=await build_system_prompt(
                    spec.prompt, self.project_root, user_config_dir=self.user_config_dir
                ),
                budgets=self._main_budgets(),
            )
        task = task or TaskRequest(description="", prompt="")
        if task.workspace is not None:  # the project is not where this agent works
            never = self._never_inherited()
            tool_names = [name for name in spec.tools or () if name not in never]
            environment = instructions = ""
        else:
            tool_names = self._child_tool_names(spec, parent)
            environment = await self.environment()
            instructions = self.instructions() if spec.project_instructions else ""
        config = self.settings.agents
        return AgentPlan(
            built=self._child_model(task.model or spec.model, parent),
            tool_names=tool_names,
            system_prompt=compose_subagent_prompt(
                spec, thoroughness=task.thoroughness, environment=environment, instructions=instructions
            ),
            budgets=Budgets(
                max_iterations=task.max_turns or spec.max_turns or config.max_turns,
                max_time_s=float(task.max_time_s or spec.max_time_s or config.timeout_s),
            ),
        )

    def _main_budgets(self) -> Budgets:
        """The run flags: they bound the whole tree, every sub-agent spends the main agent's budget too."""
        limits = self.settings.limits
        return Budgets(
            max_iterations=limits.max_iterations,
            max_total_tokens=limits.max_tokens,
            max_time_s=limits.max_time_s,
        )

    async def _main_tool_names(self, spec: AgentSpec) -> list[str]:
        """The spec's tools (no delegation when ``max_depth`` allows none) and every MCP server's."""
        names = main_tool_names(spec, self.catalogue, can_delegate=self.tree.can_delegate(0))
        if self.mcp is not None:
            names += await self.mcp.tool_names()
        return names

    def _never_inherited(self) -> set[str]:
        """Tools a child never inherits: delegation goes by depth, user-facing tools never to a child."""
        catalogue = self.catalogue
        return {*catalogue.names("delegation"), *catalogue.names("user_facing")}

    def _child_tool_names(self, spec: AgentSpec, parent: SessionAgent) -> list[str]:
        """The spec's tools within the parent's, the delegation tools where the depth allows."""
        catalogue = self.catalogue
        parent_names = [tool.name for tool in parent.setup.tools]
        # The tools that come with the parent's (web_search and web_fetch with fetch: the same
        # capability, through the same client) are the child's to take too.
        parent_names.extend(name for name in catalogue.companions(parent_names) if name not in parent_names)
        never = self._never_inherited()
        names = list(spec.tool_names(tuple(name for name in parent_names if name not in never)))
        names = allowed_mcp_tools(names, spec, parent.setup.policy, catalogue)
        if self.tree.can_delegate(parent.setup.depth + 1):
            delegation = catalogue.names("delegation")
            wanted = set(delegation) if spec.tools is None else set(spec.tools)
            wanted.update(catalogue.companions(wanted))  # task_status, ... come with task
            names.extend(name for name in delegation if name in wanted)
        return names

    def _child_model(self, choice: str | None, parent: SessionAgent) -> BuiltModel:
        """The model for ``choice`` (role, tier, Claude alias, ``provider:model``); None: the parent's."""
        resolved = resolve_model_choice(choice, self.settings.agents)
        if resolved is None:
            if parent.setup.built is None:
                raise ToolError("the parent agent's model cannot be shared: name a model for the sub-agent")
            return parent.setup.built
        try:
            return self.models.choose(resolved, self.env)
        except NestorError as exc:
            raise ToolError(f"cannot use model {choice!r} for the sub-agent: {exc}") from None

    # -- with the session -----------------------------------------------------------------

    def parts(
        self,
        spec: AgentSpec,
        plan: AgentPlan,
        session_id: str,
        parent: SessionAgent | None,
        *,
        workspace: Path | None = None,
        own_tools: Sequence[Tool[Any]] = (),
        hooks: Sequence[Hook] = (),
        titles: TitleWriter | None = None,
    ) -> AgentParts:
        """The tools, permissions, hooks and harness of an agent of ``spec`` on ``session_id``.

        Args:
            spec: The agent's spec.
            plan: What :meth:`plan` decided.
            session_id: Its session.
            parent: Its parent; None for the main agent.
            workspace: The directory a sub-agent is confined to (``agentic_fetch``), else None.
            own_tools: The tools of the agent file's own MCP servers (started by the factory).
            hooks: The embedder's own hooks for the main agent.
            titles: Titles the main agent's new session (None: it keeps its first-line title).

        """
        tools = [*self.tools.build(plan.tool_names, session_id, self.tree), *own_tools]
        root = workspace or self.project_root
        read_only = parent is not None and (
            spec.is_read_only(self.catalogue)
            or all(self.catalogue.has(tool.name, "read_only") for tool in tools)
            or workspace is not None
        )
        policy = self._policy(spec, parent, workspace, read_only=read_only)
        if parent is None:
            tree_budget: TreeBudget | None = TreeBudget(plan.budgets)
            depth = 0
        else:
            tree_budget, depth = parent.setup.tree_budget, parent.setup.depth + 1
        return AgentParts(
            tools=tools,
            policy=policy,
            asker=None if read_only else self.asker,
            tree_budget=tree_budget,
            hooks=[
                BudgetHook(plan.budgets, tree_budget),
                LoopGuardHook(),
                *self._event_hooks(spec, session_id, parent, depth),
                *self._own_hooks(spec, plan, session_id, parent, hooks, titles),
                *self.tree_hooks(depth),
                *self.tools.hooks(plan.tool_names, session_id),
                *(self.subagent_hooks() if parent is not None and self.subagent_hooks is not None else ()),
                *(self._checkpoint_hooks(root) if not read_only else ()),
            ],
            harness=self._harness(plan, root, parent, read_only=read_only),
            project_root=root,
        )

    def _harness(
        self, plan: AgentPlan, root: Path, parent: SessionAgent | None, *, read_only: bool
    ) -> SmallModelHarness | None:
        """The small-model harness on a small model; only the main agent's names agents to delegate to."""
        if not plan.built.small_profile:
            return None
        # Imported here: 0.2-0.5 s of modules that only an agent on a small model runs.
        from nestor.runtime.features.small.gathering.reader import ProjectReader
        from nestor.runtime.features.small.harness import SmallModelHarness

        registry = self.registry

        def delegable() -> list[str]:
            return [spec.name for spec in registry.delegable()] if parent is None else []

        return SmallModelHarness(ProjectReader(root), read_only=read_only, agent_names=delegable)

    def _policy(
        self, spec: AgentSpec, parent: SessionAgent | None, workspace: Path | None, *, read_only: bool
    ) -> PermissionPolicy:
        """The settings' rules for the main agent; a sub-agent's spec's, never wider than its parent's."""
        if parent is None:
            permissions = self.settings.permissions
            return PermissionPolicy.from_config(
                permissions.allow,
                permissions.ask,
                permissions.deny,
                project_root=str(self.project_root),
                yolo=self.settings.yolo,
            )
        label = f"agent {spec.name}"
        if workspace is not None:
            return ChildPolicy.for_workspace(parent.setup.policy, str(workspace), label=label)
        return ChildPolicy.for_spec(
            parent.setup.policy,
            [(rule.action, rule.rule) for rule in spec.permission],
            read_only=read_only,
            label=label,
            source=str(spec.path) if spec.path else label,
        )

    def _own_hooks(
        self,
        spec: AgentSpec,
        plan: AgentPlan,
        session_id: str,
        parent: SessionAgent | None,
        hooks: Sequence[Hook],
        titles: TitleWriter | None,
    ) -> list[Hook]:
        """The main agent's report to the user, or a sub-agent's tracker, safety and search budget."""
        large_results = LargeResultHook(
            scratch_dir(self.settings.data_dir, session_id), self.settings.context.tool_result_max_tokens
        )
        if parent is None:
            return [
                large_results,
                TimeoutReportHook(MAIN_AGENT_REPORT),
                *hooks,
                *([TitleHook(titles, self.messages)] if titles is not None else []),
            ]
        config = self.settings.agents
        return [
            ToolTracker(),
            SubAgentSafetyHook(spec.max_context_tokens or config.max_context_tokens, self.catalogue),
            SearchBudgetHook(config.search_budget, self.catalogue),
            TimeoutReportHook(),
            large_results,
        ]

    def _event_hooks(
        self, spec: AgentSpec, session_id: str, parent: SessionAgent | None, depth: int
    ) -> list[Hook]:
        """The hooks of Claude Code's events, for the main agent and every sub-agent alike.

        An agent file's own hooks join them for that agent alone: a project's file's only in a
        trusted folder, once approved.
        """
        events = self.events
        own = [
            hook
            for hook in spec.hooks
            if (self.settings.project_trusted or not hook.project) and self.hook_allows(hook)
        ]
        if own:
            events = (events or HookDispatcher()).with_hooks(HookDispatcher.of(own, self.project_root))
        if events is None:
            return []
        root = session_id
        if parent is not None:
            root = next(
                (hook.agent.session_id for hook in parent.setup.hooks if isinstance(hook, EventHook)),
                parent.session_id,
            )
        agent = AgentInfo(
            session_id=root,
            agent_id=session_id,
            agent_type=spec.name,
            parent_agent_id=parent.session_id if parent is not None else None,
            depth=depth,
            project_root=self.project_root,
            permission_mode="bypassPermissions" if self.settings.yolo else "default",
        )
        return [EventHook(events, agent, self.catalogue.hook_names, self.notify)]

    def tree_hooks(self, depth: int) -> list[Hook]:
        """Hooks every agent of the tree gets: the cost cap, and the delegation guard where allowed."""
        tree, config = self.tree, self.settings.agents
        hooks: list[Hook] = []
        if config.max_cost_usd is not None:
            hooks.append(TreeCostHook(float(config.max_cost_usd), tree.tree_cost))
        if tree.can_delegate(depth):
            hooks.append(DelegationGuardHook(partial(tree.check_task, depth=depth)))
        return hooks

    def _checkpoint_hooks(self, root: Path) -> list[Hook]:
        """The snapshots' hook, for an agent that can change the project's files."""
        if self.checkpoints is None or root.resolve() != self.checkpoints.project_root:
            return []
        return [CheckpointHook(self.checkpoints, self.catalogue, root)]
