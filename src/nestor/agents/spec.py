"""AgentSpec: the frozen definition of an agent, whatever file format it was read from.

Every reader (nestor's own Markdown, Claude Code, OpenCode, Gemini CLI, emdash, CodeAlly, mini-cc,
deepagents) produces these; the runtime only ever sees specs. Tool names in a spec are nestor's
(foreign names are mapped when the file is read), so the runtime never guesses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeAlias

from nestor.config.hooks import ConfiguredHook
from nestor.config.sections import McpServerConfig
from nestor.tools.catalogue import ToolCatalogue
from nestor.tools.mcp.names import entry_covers, is_mcp_name, server_of

Thoroughness: TypeAlias = Literal["quick", "medium", "thorough"]
AgentMode: TypeAlias = Literal["subagent", "primary", "all"]
AgentSource: TypeAlias = Literal["builtin", "user", "project"]
PermissionAction: TypeAlias = Literal["allow", "ask", "deny"]


@dataclass(frozen=True, slots=True)
class PermissionRuleSpec:
    """One permission rule of a spec, in nestor's rule syntax (``tool`` or ``tool(pattern)``)."""

    action: PermissionAction
    rule: str


@dataclass(frozen=True, slots=True)
class AgentSpec:
    """An agent definition.

    Attributes:
        name: The agent type, as ``subagent_type`` names it.
        description: When to use this agent (shown to the main agent in the task tool).
        prompt: The agent's own system prompt (the file's body).
        tools: nestor tool names the agent may use; None means every tool of its parent.
        disallowed_tools: Tools removed from ``tools`` (or from the parent's set).
        model: A role (``large``/``small``), a tier (``fast``/``standard``/``powerful``), a Claude
            alias (``haiku``/``sonnet``/``opus``/``inherit``) or ``provider:model``; None inherits.
        temperature: Sampling temperature; None leaves the model's.
        max_turns: Model requests per task; None takes the configured default.
        max_time_s: The time budget of a task, in seconds (the agent file's ``timeout``); None takes
            the configured default.
        max_context_tokens: The most context a task may grow to; None takes the default.
        thoroughness: Default search depth when the task does not say.
        rule_files: Files whose text joins the prompt under "Rules".
        skill_files: Files whose text joins the prompt under "Skills".
        color: A display colour for the UI.
        mode: ``subagent`` (delegated to), ``primary`` (user-facing only) or ``all``.
        persist: Keep the agent alive and idle after a task, for the next task of this spec.
        background: Run its tasks in the background unless the call says otherwise.
        inherit_context: Start from the parent's conversation instead of the task prompt alone.
        project_instructions: Give the agent the instruction files the main agent gets (the
            project's ``AGENTS.md``, ``CLAUDE.md``, ``NESTOR.md`` and the user's ``AGENTS.md``).
        permission: Rules applied on top of the parent's (a child never gets more than its parent).
        mcp_servers: Configured MCP servers the agent gets the tools of (Claude Code's
            ``mcpServers: [github]``): all of them, unless ``tools`` names some of the server's
            tools (``mcp__github__get_issue``), which are then the only ones (see :meth:`wants`).
        own_mcp_servers: MCP servers the file defines (name, config): started for the agent,
            stopped when it ends, never its parent's.
        hooks: The file's own hooks (Claude Code's ``hooks`` front matter), for this agent alone;
            a project's file's run only in a trusted folder, once approved.
        source: Where it came from: built-in, the user's directories or the project's.
        ecosystem: The file format: ``nestor``, ``claude``, ``opencode``, ``gemini``, ``emdash``,
            ``codeally``, ``mini-cc`` or ``deepagents``.
        path: The file it was read from (None for specs built in code).

    """

    name: str
    description: str
    prompt: str
    tools: tuple[str, ...] | None = None
    disallowed_tools: tuple[str, ...] = ()
    model: str | None = None
    temperature: float | None = None
    max_turns: int | None = None
    max_time_s: float | None = None
    max_context_tokens: int | None = None
    thoroughness: Thoroughness | None = None
    rule_files: tuple[Path, ...] = ()
    skill_files: tuple[Path, ...] = ()
    color: str | None = None
    mode: AgentMode = "subagent"
    persist: bool = False
    background: bool = False
    inherit_context: bool = False
    project_instructions: bool = True
    permission: tuple[PermissionRuleSpec, ...] = ()
    mcp_servers: tuple[str, ...] = ()
    own_mcp_servers: tuple[tuple[str, McpServerConfig], ...] = field(default=(), compare=False)
    hooks: tuple[ConfiguredHook, ...] = field(default=(), compare=False)
    source: AgentSource = "builtin"
    ecosystem: str = "nestor"
    path: Path | None = field(default=None, compare=False)

    @property
    def delegable(self) -> bool:
        """True when the task tool may start this agent (mode ``subagent`` or ``all``)."""
        return self.mode != "primary"

    def tool_names(self, available: tuple[str, ...]) -> tuple[str, ...]:
        """The tools this agent gets out of ``available`` (its parent's), in ``available``'s order.

        An MCP tool is wanted when an entry of ``tools`` covers it (``mcp__github``,
        ``mcp__github__*``, the tool's own name), or its server is one the agent names or defines
        (:attr:`mcp_servers`, :attr:`own_mcp_servers`) and ``tools`` names none of that server's tools.
        """
        return tuple(name for name in available if self.wants(name))

    def wants(self, name: str) -> bool:
        """Whether the agent's tool list (or one of its MCP servers) takes the tool ``name``.

        A server the agent names gives it all of its tools, as in Claude Code, unless its ``tools``
        list names some of that server's tools: then it gets only those (least privilege, as for
        built-in tools), so ``tools: mcp__demo__secret_word`` with ``mcpServers: [demo]`` gets
        ``mcp__demo__secret_word`` and not ``mcp__demo__add``.
        """
        if any(name == entry or entry_covers(entry, name) for entry in self.disallowed_tools):
            return False
        if self.tools is None or name in self.tools:
            return True
        if not is_mcp_name(name):
            return False
        if any(entry_covers(entry, name) for entry in self.tools):
            return True
        server = (server_of(name) or "").lower()
        servers = {named.lower() for named in (*self.mcp_servers, *(own for own, _ in self.own_mcp_servers))}
        listed = {(server_of(entry) or "").lower() for entry in self.tools if is_mcp_name(entry)}
        return server in servers and server not in listed

    def is_read_only(self, catalogue: ToolCatalogue | None = None) -> bool:
        """True when the spec lists its tools and the catalogue says each of them is read-only.

        ``catalogue`` defaults to the built-in tools; pass the app's to count the read-only tools
        registered at run time (an MCP tool is read-only when its server says so; a whole server,
        ``mcp__github``, is not). A read-only agent gets only the MCP tools that are, whatever
        :attr:`mcp_servers` or its own servers offer.
        """
        tools = catalogue or ToolCatalogue()
        return self.tools is not None and all(
            tools.has(name, "read_only") for name in self.tools if name not in self.disallowed_tools
        )
