"""The composition root: settings in, a ready-to-run main agent out.

Nothing below this layer knows about files on disk besides what it is handed; here the settings
choose the database, the model, the tools, the permission rules and the budgets, and wire them
into a :class:`~nestor.runtime.kernel.loop.SessionAgent` registered with the coordinator.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nestor.agents.registry import AgentRegistry, project_registry
from nestor.agents.spec import AgentSpec
from nestor.bus import EventBus
from nestor.config import PROJECT_CONFIG_NAME, ModelConfig, ModelRole, Settings, default_user_config_path
from nestor.core.errors import NestorError, SessionNotFoundError
from nestor.permissions import PermissionPolicy
from nestor.providers.build import BuiltModel, build_model
from nestor.providers.defaults import model_for_role
from nestor.runtime.factory.prompt import (
    EnvironmentCache,
    build_system_prompt,
    builtin_agent_prompt,
    read_instructions,
)
from nestor.runtime.factory.toolset import coder_tool_names, sandbox_policy
from nestor.runtime.features.agentic_fetch import AgenticFetchTool
from nestor.runtime.features.compaction import Compaction, SummaryModel
from nestor.runtime.features.large_results import LargeResultHook
from nestor.runtime.features.small.harness import SmallModelHarness
from nestor.runtime.features.small.reader import ProjectReader
from nestor.runtime.features.titles import TitleHook, TitleWriter
from nestor.runtime.features.todos import CompletionCheckHook, persist_todos, todo_list_from_metadata
from nestor.runtime.kernel.context import ContextPolicy
from nestor.runtime.kernel.coordinator import Coordinator
from nestor.runtime.kernel.hooks import Budgets, Hook, TreeBudget
from nestor.runtime.kernel.loop import SessionAgent
from nestor.runtime.kernel.permission_gate import PermissionAsker
from nestor.runtime.kernel.setup import AgentSetup
from nestor.runtime.tree.delegation import AgentTree, TreeServices
from nestor.runtime.tree.subagent_hooks import MAIN_AGENT_REPORT, TimeoutReportHook
from nestor.runtime.tree.task_tool import delegation_tools
from nestor.store.db import Database, open_database
from nestor.store.messages import MessageStore
from nestor.store.sessions import Session, SessionStore
from nestor.tools.base import Tool
from nestor.tools.bash import BashTool
from nestor.tools.catalogue import ToolCatalogue
from nestor.tools.todo import TodoList, TodoWriteTool

if TYPE_CHECKING:
    from nestor.tools.search_backends import SearchBackend
    from nestor.tools.web.cache import WebCache
    from nestor.tools.web.client import SafeHttpClient
    from nestor.tools.web_search import SearchCache


@dataclass
class App:
    """Open stores, the event bus and the coordinator for one nestor process.

    Attributes:
        tree: The agent tree of the main agent started last (sub-agents, background agents, pool).
        titles: Writes the titles of new sessions with the small model; None until a new session
            needs one, and when the small model cannot be built or runs locally. UIs wait for it
            (or cancel it) before the process ends.
        notify: Shows the user a one-line notice (which model was chosen, long first-use work);
            UIs pass their own, the default drops them.
        catalogue: Every tool this process knows: the built-ins, and the tools registered at run
            time (MCP, LSP); agents are built from it.

    """

    settings: Settings
    database: Database
    sessions: SessionStore
    messages: MessageStore
    bus: EventBus
    coordinator: Coordinator
    titles: TitleWriter | None = None
    notify: Callable[[str], None] = field(default=lambda _message: None)
    tree: AgentTree | None = None
    catalogue: ToolCatalogue = field(default_factory=ToolCatalogue)
    _models: dict[str, BuiltModel] = field(default_factory=dict[str, BuiltModel])
    _registry: AgentRegistry | None = None
    _todos: dict[str, TodoList] = field(default_factory=dict[str, TodoList])
    search_backend: SearchBackend | None = None
    """Where web_search searches; None is ddgs (tests put a recorded back end here)."""
    _web_client: SafeHttpClient | None = None
    _web_caches: dict[str, WebCache] = field(default_factory=dict)  # pyright: ignore[reportUnknownVariableType]
    _search_caches: dict[str, SearchCache] = field(default_factory=dict)  # pyright: ignore[reportUnknownVariableType]
    _held: list[str] = field(default_factory=list[str])
    _heartbeat: asyncio.Task[None] | None = None
    _local_notice_given: bool = False
    _ignored_notice_given: bool = False
    _sandbox_notice_given: bool = False

    @classmethod
    def open(cls, settings: Settings, *, notify: Callable[[str], None] | None = None) -> App:
        """Open the database named by ``settings`` (creating it on first use)."""
        database = open_database(settings.database_path)
        app = cls(
            settings=settings,
            database=database,
            sessions=SessionStore(database),
            messages=MessageStore(database),
            bus=EventBus(),
            coordinator=Coordinator(),
        )
        if notify is not None:
            app.notify = notify
        return app

    def model_config(self, role: ModelRole, env: Mapping[str, str]) -> ModelConfig:
        """The model of ``role``: the configured one, else (no API key set) the embedded local model.

        Raises:
            ConfigError: No model is configured and the embedded model is not installed, or some
                provider has a key (then the user should say which model to use).

        """
        model_config, embedded = model_for_role(self.settings, role, env)
        if embedded and not self._local_notice_given:
            self._local_notice_given = True
            self.notify(
                "no model configured and no API key set: using the embedded local model "
                f"({model_config.model}); set NESTOR_MODEL=provider:model for a stronger one"
            )
        return model_config

    def build_model(self, model_config: ModelConfig, env: Mapping[str, str]) -> BuiltModel:
        """Build a model once per process: a local model is loaded in memory only once."""
        key = model_config.model_dump_json()
        built = self._models.get(key)
        if built is None:
            built = build_model(model_config, self.settings, env=env, on_progress=self.notify)
            self._models[key] = built
        return built

    def close(self) -> None:
        """Release the sessions this process holds and close the database."""
        if self._heartbeat is not None:
            self._heartbeat.cancel()
        for session_id in self._held:
            self.sessions.release(session_id)
        self._held.clear()
        self.database.close()

    def hold(self, session_id: str) -> None:
        """Hold the main agent's session until :meth:`close` (or until another main session is held).

        Raises:
            SessionInUseError: Another nestor process runs the session.

        """
        self.sessions.acquire(session_id)
        for previous in self._held:  # the REPL's /clear: the session left behind is free again
            if previous != session_id:
                self.sessions.release(previous)
        self._held[:] = [session_id]
        if self._heartbeat is None:
            self._heartbeat = asyncio.get_running_loop().create_task(self._beat(), name="session-heartbeat")

    async def _beat(self) -> None:
        from nestor.store.lease import HEARTBEAT_EVERY_S

        while True:
            await asyncio.sleep(HEARTBEAT_EVERY_S)
            with contextlib.suppress(NestorError):  # a busy database: the next beat will do
                self.sessions.heartbeat()

    def find_session(self, *, resume: str | None, continue_latest: bool) -> Session | None:
        """Return the session to resume (by id, or this project's latest), or None for a new one."""
        if resume:
            return self.sessions.get(resume)
        if continue_latest:
            latest = self.sessions.latest(str(self.settings.project_root))
            if latest is None:
                raise SessionNotFoundError(
                    f"no session to continue in {self.settings.project_root}",
                    hint='start one with nestor run "prompt"; nestor sessions list shows the others',
                )
            return latest
        return None

    async def start_main_agent(
        self,
        *,
        session: Session | None = None,
        asker: PermissionAsker | None = None,
        title: str = "",
        env: Mapping[str, str] | None = None,
    ) -> SessionAgent:
        """Build the coder agent on ``session`` (or a new session) and make it live."""
        settings = self.settings
        environment = os.environ if env is None else env
        if not self._ignored_notice_given:
            self._ignored_notice_given = True
            for line in ignored_settings_notices(
                settings, self.agent_registry(environment).untrusted_models()
            ):
                self.notify(line)
        if session is not None:
            self.hold(session.id)  # before anything slow: a session in use is refused at once
        built = self.build_model(self.model_config("large", environment), environment)
        project_root = Path(settings.project_root)
        hooks: list[Hook] = []
        if session is None:
            session = self.sessions.create(
                str(project_root), agent_name="coder", model=built.name, title=title
            )
            self.hold(session.id)
            hooks.extend(self._title_hooks(environment))
        system_prompt = await build_system_prompt(
            builtin_agent_prompt("coder-compact" if built.compact else "coder"),
            project_root,
            user_config_dir=default_user_config_path(environment).parent,
        )
        policy = PermissionPolicy.from_config(
            settings.permissions.allow,
            settings.permissions.ask,
            settings.permissions.deny,
            project_root=str(project_root),
            yolo=settings.yolo,
        )
        limits = settings.limits
        scratch_dir = self.scratch_dir(session.id)
        context = settings.context
        # The main agent runs on the large model, which also writes its summaries (its own and
        # its sub-agents').
        summarizer = SummaryModel(
            model=built.model,
            name=built.name,
            settings=built.settings,
            priced=built.priced,
            context_window=built.context_window,
        )
        tree = self._agent_tree(environment, asker, summarizer)
        tool_names = coder_tool_names(
            self.catalogue, compact=built.compact, can_delegate=tree.can_delegate(0)
        )
        tools = self._tools(tree, tool_names, session.id)
        hooks.extend(self._agent_hooks(tool_names, session.id))
        registry = self.agent_registry(environment)
        harness = (
            SmallModelHarness(
                ProjectReader(project_root), agent_names=lambda: [spec.name for spec in registry.delegable()]
            )
            if built.compact
            else None
        )
        hooks.extend(tree.tree_hooks(0))
        # The run flags bound the whole tree: every sub-agent spends the main agent's budget too.
        budgets = Budgets(
            max_iterations=limits.max_iterations,
            max_total_tokens=limits.max_tokens,
            max_time_s=limits.max_time_s,
        )
        setup = AgentSetup(
            model=built.model,
            model_name=built.name,
            model_settings=built.settings,
            priced=built.priced,
            system_prompt=system_prompt,
            tools=tools,
            brief_tools=built.compact,
            sessions=self.sessions,
            messages=self.messages,
            bus=self.bus,
            policy=policy,
            asker=asker,
            project_root=project_root,
            scratch_dir=scratch_dir,
            context=ContextPolicy.configured(built.context_window, context),
            compactor=Compaction(summarizer),
            budgets=budgets,
            tree_budget=TreeBudget(budgets),
            stream_idle_timeout_s=None if built.in_process else limits.stream_idle_timeout_s or None,
            hooks=[
                LargeResultHook(scratch_dir, context.tool_result_max_tokens),
                TimeoutReportHook(MAIN_AGENT_REPORT),
                *hooks,
            ],
            harness=harness,
        )
        agent = SessionAgent(session.id, setup)
        tree.attach(agent)
        self.coordinator.add(agent)
        return agent

    def agent_registry(self, env: Mapping[str, str] | None = None) -> AgentRegistry:
        """The agent specs of this project (built-in, the user's and the project's files)."""
        if self._registry is None:
            environment = os.environ if env is None else env
            self._registry = project_registry(
                Path(self.settings.project_root), environment, trusted=self.settings.project_trusted
            )
        return self._registry

    def _agent_tree(
        self, env: Mapping[str, str], asker: PermissionAsker | None, summarizer: SummaryModel
    ) -> AgentTree:
        """A new tree of agents for a main agent about to start."""
        settings = self.settings
        project_root = Path(settings.project_root)

        def build(choice: str) -> BuiltModel:
            if choice in ("large", "small"):
                return self.build_model(self.model_config(choice, env), env)
            return self.build_model(ModelConfig(model=choice), env)

        environment = EnvironmentCache(project_root)

        tree = AgentTree(
            TreeServices(
                registry=self.agent_registry(env),
                config=settings.agents,
                context=settings.context,
                build_model=build,
                sessions=self.sessions,
                messages=self.messages,
                bus=self.bus,
                project_root=project_root,
                scratch_root=settings.data_dir / "scratch",
                asker=asker,
                tool_factory=lambda names, session_id: self._tools(tree, names, session_id),
                child_hooks=self._agent_hooks,
                environment=environment.get,
                summarizer=summarizer,
                instructions=lambda: read_instructions(project_root, default_user_config_path(env).parent),
                stream_idle_timeout_s=settings.limits.stream_idle_timeout_s or None,
                catalogue=self.catalogue,
            )
        )
        self.tree = tree
        return tree

    def _tools(self, tree: AgentTree, names: Sequence[str], session_id: str) -> list[Tool[Any]]:
        """Fresh tools named ``names`` for session ``session_id``, in that order."""
        built: dict[str, Tool[Any]] = {tool.name: tool for tool in self.catalogue.build(names)}
        if "bash" in names:
            built["bash"] = BashTool(
                sandbox=sandbox_policy(
                    names,
                    self.settings.sandbox,
                    kept_read_only=(self.settings.data_dir, default_user_config_path().parent),
                    catalogue=self.catalogue,
                ),
                notify=self._sandbox_notice,
            )
        if "todo_write" in names:
            built["todo_write"] = TodoWriteTool(
                self._todo_list(session_id), on_change=persist_todos(self.sessions, session_id)
            )
        if any(self.catalogue.has(name, "delegation") for name in names):
            built.update({tool.name: tool for tool in delegation_tools(tree)})
        built.update(self._web_tools(tree, names, session_id))
        return [built[name] for name in names if name in built]

    def _sandbox_notice(self, message: str) -> None:
        """Tell the user once per process what the shell sandbox cannot do here."""
        if not self._sandbox_notice_given:
            self._sandbox_notice_given = True
            self.notify(message)

    def _web_tools(self, tree: AgentTree, names: Sequence[str], session_id: str) -> dict[str, Tool[Any]]:
        """The tools that reach the web, all through one safe client, with per-session caches."""
        # Imported here: the HTML converter and the search engine cost start-up time.
        from nestor.tools.fetch import FetchTool
        from nestor.tools.web.cache import WebCache
        from nestor.tools.web_fetch import WebFetchTool
        from nestor.tools.web_search import SearchCache, WebSearchTool

        tools: dict[str, Tool[Any]] = {}
        if "fetch" in names:
            tools["fetch"] = FetchTool(client=self.web_client())
        if "web_fetch" in names:
            tools["web_fetch"] = WebFetchTool(
                self.web_client(), self._web_caches.setdefault(session_id, WebCache())
            )
        if "web_search" in names:
            tools["web_search"] = WebSearchTool(
                self.search_backend,
                self._search_caches.setdefault(session_id, SearchCache()),
                default_results=self.settings.web.search_results,
            )
        if "agentic_fetch" in names:
            tools["agentic_fetch"] = AgenticFetchTool(
                tree, self._fetch_page, workspace_root=self.settings.data_dir / "fetch"
            )
        return tools

    def web_client(self) -> SafeHttpClient:
        """The one HTTP client of web tools, refusing private addresses unless ``[web]`` allows them."""
        if self._web_client is None:
            from nestor.tools.web.addresses import AddressPolicy
            from nestor.tools.web.client import SafeHttpClient

            web = self.settings.web
            self._web_client = SafeHttpClient(
                AddressPolicy(allow_hosts=web.allow_hosts, allow_networks=web.allow_ranges)
            )
        return self._web_client

    async def _fetch_page(self, url: str) -> str:
        """A page as agentic_fetch hands it to its sub-agent: Markdown, JSON or text."""
        from nestor.tools.web.content import convert

        page = await self.web_client().get(url)
        return convert(page).text

    def _agent_hooks(self, tool_names: Sequence[str], session_id: str) -> list[Hook]:
        """Hooks an agent gets for its tools: the completion check of its todo list."""
        if "todo_write" not in tool_names:
            return []
        return [CompletionCheckHook(self._todo_list(session_id))]

    def _todo_list(self, session_id: str) -> TodoList:
        """The todo list of a session, read from its metadata once per process."""
        todos = self._todos.get(session_id)
        if todos is None:
            todos = todo_list_from_metadata(self.sessions.get(session_id).metadata)
            self._todos[session_id] = todos
        return todos

    def scratch_dir(self, session_id: str) -> Path:
        """The directory where a session keeps temporary files (large tool results); made on first use."""
        return self.settings.data_dir / "scratch" / session_id

    def delete_session(self, session_id: str) -> None:
        """Delete a session, its sub-agent sessions and their scratch directories.

        Raises:
            SessionNotFoundError: No session has this id.

        """
        lineage = [session_id]
        for current in lineage:  # grows while it is walked: every descendant once
            lineage.extend(child.id for child in self.sessions.children(current))
        self.sessions.delete(session_id)
        for removed in lineage:
            shutil.rmtree(self.scratch_dir(removed), ignore_errors=True)

    def _title_hooks(self, env: Mapping[str, str]) -> list[Hook]:
        """The hook that titles a new session; none when the small model cannot be built."""
        if self.titles is None:
            try:
                small = self.build_model(self.model_config("small", env), env)
            except Exception:  # no credentials for the small model: the first-line title stays
                return []
            if small.in_process:
                # On the CPU, a title costs seconds that the user's next turn would wait for.
                return []
            self.titles = TitleWriter(
                small.model,
                sessions=self.sessions,
                bus=self.bus,
                model_settings=small.settings,
                priced=small.priced,
            )
        return [TitleHook(self.titles, self.messages)]


def ignored_settings_notices(settings: Settings, untrusted_agents: Sequence[AgentSpec]) -> list[str]:
    """One line per reason project settings were not applied; [] when everything applied."""
    lines: list[str] = []
    untrusted = [item.key for item in settings.ignored if item.reason == "untrusted"]
    untrusted += [f"agent {spec.name}'s model" for spec in untrusted_agents]
    if untrusted:
        lines.append(
            f"this folder is not trusted, so its settings that would widen what nestor may do or where data "
            f"goes were ignored ({', '.join(untrusted)}); run `nestor trust` or pass --trust if you trust it"
        )
    redefined = [item.key for item in settings.ignored if item.reason == "user provider"]
    if redefined:
        lines.append(
            f"{PROJECT_CONFIG_NAME} may not redefine a built-in provider or one of your config, so "
            f"{', '.join(redefined)} was ignored"
        )
    key_senders = [item.key for item in settings.ignored if item.reason == "user key"]
    if key_senders:
        lines.append(
            f"{PROJECT_CONFIG_NAME} may not send the API key of a provider you configure to a server of its "
            f"own, so {', '.join(key_senders)} was ignored"
        )
    return lines


def title_from_prompt(prompt: str) -> str:
    """A session title from the first line of its first prompt (cut at 80 characters)."""
    first_line = prompt.strip().splitlines()[0] if prompt.strip() else ""
    return first_line if len(first_line) <= 80 else first_line[:77] + "..."
