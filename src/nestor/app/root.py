"""The composition root: settings in, a ready-to-run main agent (and its conversation) out.

Nothing below this layer knows about files on disk besides what it is handed; here the settings
choose the database and the models, and the agent factory (``runtime/factory/agents.py``) builds
the main agent from them, registered with the coordinator.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nestor.agents.registry import AgentRegistry, project_registry
from nestor.app.approval_questions import AskYesNo
from nestor.app.checkpoints import (
    SessionCheckpoints,
    prune_old_checkpoints,
    recorder_for,
    stored_session_checkpoints,
)
from nestor.app.conversation import Conversation, title_from_prompt
from nestor.app.hook_setup import HookApprovals, ListedHook, agent_file_hooks, skipped_line, test_event
from nestor.app.lsp_info import LspManager, ServerStatus, language_servers
from nestor.app.mcp_approvals import approval_asker
from nestor.app.mcp_config import unconfigured_server_notices
from nestor.app.notices import MOST_NAMED, ignored_settings_notices
from nestor.bus import EventBus, EventHandler
from nestor.config.paths import default_user_config_path, mcp_log_dir, scratch_dir
from nestor.config.settings import Settings
from nestor.core.errors import NestorError, SessionNotFoundError
from nestor.providers.models import ModelBuilder
from nestor.runtime.factory.agents import AgentFactory
from nestor.runtime.factory.tools import ToolBuilder
from nestor.runtime.features.hook_events.agent_hook import EventHook
from nestor.runtime.features.hook_events.dispatcher import HookDispatcher, HookMatchers, check_events
from nestor.runtime.features.titles import TitleWriter
from nestor.runtime.kernel.coordinator import Coordinator
from nestor.runtime.kernel.hooks import Hook
from nestor.runtime.kernel.loop import SessionAgent
from nestor.runtime.kernel.permission_gate import PermissionAsker
from nestor.runtime.kernel.permission_questions import PermissionQuestions
from nestor.runtime.tree.delegation import AgentTree
from nestor.store.approvals import Approvals
from nestor.store.db import Database, open_database
from nestor.store.messages import MessageStore
from nestor.store.sessions import Session, SessionStore
from nestor.tools.catalogue import ToolCatalogue
from nestor.tools.editor_files import EditorFiles
from nestor.tools.mcp.approval import ServerApprovals
from nestor.tools.mcp.servers import McpServers


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
        models: Builds the models of this process (each once).
        tools: Builds the tools of every agent (web client, caches, todo lists).
        lsp: The project's language servers (none runs until a tool touches a file of its language).
        editor_files: The editor this process serves (``nestor acp``), whose files ``view``,
            ``edit`` and ``write`` read and write; None uses the disk.
        hooks: An embedder's in-process hooks of Claude Code's events, by event name (the Claude
            Agent SDK's ``hooks`` option), run beside the configured shell hooks by every agent.
        asks_hooks: The UI asks about a project's hooks not approved before its first prompt
            (:meth:`ask_hook_approvals`, ``nestor acp``), so they are not named as skipped at start.

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
    editor_files: EditorFiles | None = None
    hooks: HookMatchers | None = None
    asks_hooks: bool = False
    models: ModelBuilder = field(init=False)
    tools: ToolBuilder = field(init=False)
    lsp: LspManager = field(init=False)
    _registry: AgentRegistry | None = None
    _mcp: McpServers | None = None
    _approvals: ServerApprovals | None = None
    _events: HookDispatcher | None = None
    _hook_approvals: HookApprovals | None = None
    _main_agents: list[SessionAgent] = field(default_factory=list[SessionAgent])
    _factories: list[AgentFactory] = field(default_factory=list[AgentFactory])
    _held: list[str] = field(default_factory=list[str])
    _created: set[str] = field(default_factory=set[str])  # new sessions: not kept if left unused
    _heartbeat: asyncio.Task[None] | None = None
    _pruning: asyncio.Task[list[str]] | None = None
    _ignored_notice_given: bool = False

    def __post_init__(self) -> None:
        self.models = ModelBuilder(self.settings, notify=self.notify)
        self.lsp = language_servers(self.settings)
        self.tools = ToolBuilder(
            self.settings,
            self.catalogue,
            self.sessions,
            config_dir=default_user_config_path().parent,
            notify=self.notify,
            lsp=self.lsp,
            files=self.editor_files,
        )

    @classmethod
    def open(
        cls,
        settings: Settings,
        *,
        notify: Callable[[str], None] | None = None,
        editor_files: EditorFiles | None = None,
        hooks: HookMatchers | None = None,
        asks_hooks: bool = False,
    ) -> App:
        """Open the database named by ``settings`` (creating it on first use).

        Args:
            settings: The settings.
            notify: Shows the user a one-line notice.
            editor_files: The editor whose files the file tools use (``nestor acp``).
            hooks: In-process hooks by event name: ``{"PreToolUse": [HookMatcher("Bash", [check])]}``
                (``nestor.api.HookMatcher``), each callback ``async (input, tool_use_id, context)
                -> dict`` with the JSON a shell hook reads and writes.
            asks_hooks: The UI asks about a project's hooks not approved before its first prompt.

        Raises:
            ValueError: ``hooks`` names an event nestor does not fire.

        """
        if hooks:
            check_events(hooks)
        database = open_database(settings.database_path)
        return cls(
            settings=settings,
            database=database,
            sessions=SessionStore(database),
            messages=MessageStore(database),
            bus=EventBus(),
            coordinator=Coordinator(),
            notify=notify or (lambda _message: None),
            editor_files=editor_files,
            hooks=hooks,
            asks_hooks=asks_hooks,
        )

    def close(self) -> None:
        """Stop writing titles, release the sessions this process holds and close the database.

        Language servers still running (:meth:`aclose` shuts them down cleanly) are ended.
        """
        self.lsp.kill()
        if self.titles is not None:
            self.titles.cancel()
        if self._heartbeat is not None:
            self._heartbeat.cancel()
        if self._pruning is not None:
            self._pruning.cancel()
        for session_id in self._held:
            self._let_go(session_id)
        self._held.clear()
        self.database.close()

    async def aclose(self) -> None:
        """Stop the MCP servers and the language servers this process started, then :meth:`close`.

        MCP servers of sub-agents are stopped too; with no language server started, nothing waits.
        """
        try:
            await self._end_sessions()
            if self._pruning is not None:
                await asyncio.gather(self._pruning, return_exceptions=True)
            for factory in self._factories:
                await factory.close()
            if self._mcp is not None:
                await self._mcp.close()
            await self.lsp.close()
        finally:  # cancelled while waiting for a server: the rest must still be released
            self.close()

    def mcp_servers(self) -> McpServers | None:
        """The configured MCP servers (``[mcp_servers]``, a trusted project's ``.mcp.json``), or None.

        Nothing starts here: a server starts when an agent that gets its tools is built, a
        project's only once its definition is approved. These start with the main agent, before
        any UI could ask: an unapproved one is skipped and named (the REPL and the TUI ask first).
        """
        if self._mcp is None and self.settings.mcp_servers:
            self._mcp = McpServers(
                self.settings.mcp_servers,
                catalogue=self.catalogue,
                log_dir=mcp_log_dir(self.settings.data_dir),
                project_root=Path(self.settings.project_root),
                notify=self.notify,
                project=self.settings.project_mcp_servers,
                approve=self.server_approvals().allows,
            )
        return self._mcp

    def server_approvals(self) -> ServerApprovals:
        """The user's approvals of this project's MCP servers (see ``nestor.tools.mcp.approval``)."""
        if self._approvals is None:
            root = Path(self.settings.project_root)
            self._approvals = ServerApprovals(Approvals(self.database), root, notify=self.notify)
        return self._approvals

    def hook_approvals(self) -> HookApprovals:
        """The configured hooks, the agent files', and the user's approvals of a project's."""
        if self._hook_approvals is None:
            self._hook_approvals = HookApprovals(
                self.settings,
                Approvals(self.database),
                lambda: agent_file_hooks(self.agent_registry(), self.settings),  # read only when listed
                notify=self.notify,
            )
        return self._hook_approvals

    def listed_hooks(self) -> list[ListedHook]:
        """Every configured hook, its source and whether it runs (``nestor hooks list``)."""
        return self.hook_approvals().listed()

    def hook_events(self) -> HookDispatcher | None:
        """The hooks every agent fires: the user's, the approved project's, the embedder's; None without any.

        Built once; a project's hooks not approved are named in one line then, unless the UI asks.
        """
        if self._events is None and (self.settings.configured_hooks or self.hooks):
            run, skipped = self.hook_approvals().runnable()
            if skipped and not self.asks_hooks:
                self.notify(skipped_line(skipped))
            self._events = HookDispatcher.of(run, Path(self.settings.project_root), self.hooks)
        return self._events

    async def ask_hook_approvals(self, ask: AskYesNo) -> None:
        """Ask about each project hook not approved, before the main agent's first prompt.

        A yes is stored and the hook runs from now on, in every agent; the hooks declined are
        named in one line.

        Raises:
            StoreError: The database failed.

        """
        approved = await self.hook_approvals().ask_pending(ask)
        events = self.hook_events()
        if approved and events is not None:
            events.add(approved, Path(self.settings.project_root))

    async def test_hooks(
        self, event: str, *, tool: str | None = None, tool_input: dict[str, Any] | None = None
    ) -> list[tuple[str, dict[str, Any]]]:
        """Fire ``event`` on a sample payload (``nestor hooks test``): what each hook that ran answered."""
        outcome = await test_event(
            self.hook_events() or HookDispatcher(),
            self.settings,
            event,
            tool=tool,
            tool_input=tool_input,
            catalogue=self.catalogue,
        )
        return outcome.decisions

    async def _end_sessions(self) -> None:
        """SessionEnd for each main agent this process started."""
        for agent in self._main_agents:
            for hook in agent.setup.hooks:
                if isinstance(hook, EventHook):
                    await hook.end_session("other")
        self._main_agents.clear()

    def hold(self, session_id: str) -> None:
        """Hold the main agent's session until :meth:`close` (or until another main session is held).

        Raises:
            SessionInUseError: Another nestor process runs the session.

        """
        self.sessions.acquire(session_id)
        for previous in self._held:  # the REPL's /clear: the session left behind is free again
            if previous != session_id:
                self._let_go(previous)
        self._held[:] = [session_id]
        if self._heartbeat is None:
            self._heartbeat = asyncio.get_running_loop().create_task(self._beat(), name="session-heartbeat")

    def _let_go(self, session_id: str) -> None:
        """Release a held session; one this process created and no prompt used is not kept.

        A UI opens a session before its first prompt: one left before any (a quit, a ``/clear``)
        would fill every session list with empty entries. One rewound to its start asked a model:
        it is kept.
        """
        self.sessions.release(session_id)
        if session_id in self._created:
            self.sessions.delete_if_unused(session_id)

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

    def fork_session(self, session: Session, before_seq: int | None = None) -> Session:
        """A copy of a main session (its messages before ``before_seq``; all for None) to run instead."""
        return stored_session_checkpoints(self.settings, self.database, session).fork(before_seq)

    def project_sessions(self, limit: int = 50) -> list[Session]:
        """The main sessions of this project, the most recently updated first (a session picker's list)."""
        return self.sessions.list(str(self.settings.project_root), limit=limit)

    async def start_main_agent(
        self,
        *,
        session: Session | None = None,
        asker: PermissionAsker | None = None,
        title: str = "",
        env: Mapping[str, str] | None = None,
        hooks: Sequence[Hook] = (),
        subagent_hooks: Callable[[], Sequence[Hook]] | None = None,
        agent_type: str | None = None,
    ) -> SessionAgent:
        """Build the coder agent (or ``agent_type``) on ``session`` (or a new one), live, with ``hooks``."""
        settings = self.settings
        environment = os.environ if env is None else env
        if not self._ignored_notice_given:
            self._ignored_notice_given = True
            registry = self.agent_registry(environment)
            for line in _start_notices(settings, registry):
                self.notify(line)
        if session is not None:
            self.hold(session.id)  # before anything slow: a session in use is refused at once
        built = self.models.build(self.models.config("large", environment), environment)
        titles: TitleWriter | None = None
        if session is None:
            session = self.sessions.create(
                str(settings.project_root), agent_name=agent_type or "coder", model=built.name, title=title
            )
            self._created.add(session.id)
            self.hold(session.id)
            titles = self._title_writer(environment)
        project_root = Path(settings.project_root)
        user_config_dir = default_user_config_path(environment).parent
        recorder = recorder_for(settings, self.database, session.id, project_root, self.notify)
        self._start_pruning()
        factory = AgentFactory(
            settings=settings,
            registry=self.agent_registry(environment),
            catalogue=self.catalogue,
            models=self.models,
            tools=self.tools,
            sessions=self.sessions,
            messages=self.messages,
            bus=self.bus,
            env=environment,
            asker=asker,
            user_config_dir=user_config_dir,
            subagent_hooks=subagent_hooks,
            mcp=self.mcp_servers(),
            mcp_approvals=self.server_approvals(),
            ask_approval=None if asker is None else approval_asker(asker, session.id),
            notify=self.notify,
            checkpoints=recorder,
            events=self.hook_events(),
            hook_allows=lambda hook: self.hook_approvals().allows(hook),
        )
        self._factories.append(factory)
        self.tree = factory.tree
        spec = factory.registry.get(agent_type) if agent_type else None
        main = await factory.main(session, built, spec=spec, hooks=hooks, titles=titles)
        self.coordinator.add(main)
        self._main_agents.append(main)
        return main

    async def conversation(
        self,
        *,
        session: Session | None = None,
        interactive: bool,
        first_prompt: str = "",
        env: Mapping[str, str] | None = None,
        hooks: Sequence[Hook] = (),
        subagent_hooks: Callable[[], Sequence[Hook]] | None = None,
        agent_type: str | None = None,
    ) -> Conversation:
        """Start the main agent on ``session`` (a new session for None) and return its conversation.

        Args:
            session: The session to resume (:meth:`find_session`), or None for a new one.
            interactive: Someone answers permission questions (the REPL): they are asked as
                :class:`~nestor.core.events.PermissionRequested` events. Otherwise (``nestor run``)
                what the rules leave to the user is denied, and the model is told why.
            first_prompt: The prompt a new session starts with (``nestor run``): its first line
                is the session's title. Without it, the first prompt sent titles the session.
            env: Environment for provider credentials; ``os.environ`` when None.
            hooks: The embedder's own hooks (:class:`nestor.extensions.Hook`), the main agent's too.
            subagent_hooks: Makes the embedder's hooks for a sub-agent, called once for each
                sub-agent built (``task``, ``agentic_fetch``; a reused idle one keeps its
                hooks), so that agents never share a hook's state. ``RunState.agent_type`` and
                ``agent_id`` tell the hook whose run it sees.
            agent_type: The main agent's agent file by name (a ``nestor batch`` job's), not ``coder``.

        Raises:
            SessionInUseError: Another nestor process runs the session.
            NestorError: The model cannot be built (no credentials, unknown provider).

        """
        questions = PermissionQuestions(self.bus) if interactive else None
        title = title_from_prompt(first_prompt)
        agent = await self.start_main_agent(
            session=session,
            asker=questions,
            title=title,
            env=env,
            hooks=hooks,
            subagent_hooks=subagent_hooks,
            agent_type=agent_type,
        )
        existing = session.title if session is not None else title
        return Conversation(
            agent,
            coordinator=self.coordinator,
            sessions=self.sessions,
            tree=self.tree,
            questions=questions,
            titles=lambda: self.titles,
            needs_title=not existing and not first_prompt,
            checkpoints=SessionCheckpoints(self._factories[-1].checkpoints, self.database, agent.session_id),
        )

    def language_servers(self) -> list[ServerStatus]:
        """The project's language servers, detected and configured, and the state of each."""
        return self.lsp.statuses()

    def language_servers_starting(self) -> list[str]:
        """The names of the language servers starting now (a status line shows them)."""
        return self.lsp.starting()

    def subscribe(self, handler: EventHandler) -> Callable[[], None]:
        """Call ``handler`` for every event of every agent from now on; returns the unsubscribe function."""
        return self.bus.subscribe(handler)

    def agent_registry(self, env: Mapping[str, str] | None = None) -> AgentRegistry:
        """The agent specs of this project (built-in, the user's and the project's files)."""
        if self._registry is None:
            environment = os.environ if env is None else env
            self._registry = project_registry(
                Path(self.settings.project_root), environment, trusted=self.settings.project_trusted
            )
        return self._registry

    def scratch_dir(self, session_id: str) -> Path:
        """The directory where a session keeps temporary files (large tool results); made on first use."""
        return scratch_dir(self.settings.data_dir, session_id)

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

    def _start_pruning(self) -> None:
        """Prune snapshots older than ``[checkpoints] keep_days``, once per process, in the background."""
        if self._pruning is None:
            self._pruning = asyncio.get_running_loop().create_task(
                prune_old_checkpoints(self.settings, self.database), name="prune-checkpoints"
            )

    def _title_writer(self, env: Mapping[str, str]) -> TitleWriter | None:
        """What titles a new session; None when the small model cannot be built."""
        if self.titles is None:
            try:
                small = self.models.build(self.models.config("small", env), env)
            except Exception:  # no credentials for the small model: the first-line title stays
                return None
            if small.in_process:
                # On the CPU, a title costs seconds that the user's next turn would wait for.
                return None
            self.titles = TitleWriter(
                small.model,
                sessions=self.sessions,
                bus=self.bus,
                model_settings=small.settings,
                priced=small.priced,
            )
        return self.titles


def _start_notices(settings: Settings, registry: AgentRegistry) -> list[str]:
    """What a start tells the user about the project's settings and agent files, one line each."""
    limit = registry.read_limit()
    servers = unconfigured_server_notices(settings, registry.specs())
    if len(servers) > MOST_NAMED:  # one line per agent: a repository may define hundreds
        servers[MOST_NAMED:] = [
            f"{len(servers) - MOST_NAMED} more agents name MCP servers that are not configured"
        ]
    return (
        ([str(limit)] if limit is not None else [])
        + ignored_settings_notices(settings, registry.untrusted_models(), registry.untrusted_servers())
        + servers
    )
