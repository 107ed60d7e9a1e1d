"""The MCP servers of one process (or of one agent), started when an agent needs them.

Their tools are registered in the tool catalogue as ``mcp__<server>__<tool>``. A server a project
defines starts only once its definition is approved (``nestor.tools.mcp.approval``).

This module does not import the ``mcp`` SDK: it is imported only once a server has to start, so a
run without MCP servers never pays for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nestor.config.sections import McpServerConfig
from nestor.config.settings import ProjectServer
from nestor.core.errors import ToolError
from nestor.tools.catalogue import BuiltByOwner, ToolCatalogue, Trait
from nestor.tools.mcp.names import tool_name

if TYPE_CHECKING:
    from nestor.tools.base import Tool
    from nestor.tools.mcp.connection import McpConnection
    from nestor.tools.mcp.tool import McpToolDefinition


@dataclass(frozen=True, slots=True)
class ServerState:
    """What ``nestor mcp list`` shows of a server.

    Attributes:
        name: The server's name.
        transport: ``stdio``, ``http`` or ``sse``.
        target: Its command line or URL.
        status: ``running``, ``failed``, ``stopped``, ``disabled`` or ``not approved`` (a
            project's server whose definition the user has not approved: never started).
        tools: The names of its tools (``mcp__server__tool``), once it listed them.
        error: Why it failed, else "".
        project: Its definition, when a project defines it (None: the user's own).
        approved: Whether the user approved a project's server as defined (None: the user's own,
            which needs no approval).

    """

    name: str
    transport: str
    target: str
    status: str
    tools: tuple[str, ...] = ()
    error: str = ""
    project: ProjectServer | None = None
    approved: bool | None = None


class McpServers:
    """Connections to a set of configured MCP servers, and their tools.

    Args:
        configs: The servers, by name (disabled ones are known but never started).
        catalogue: Where their tools are registered.
        log_dir: Where stdio servers' stderr logs go.
        project_root: The servers' working directory unless their config gives one.
        notify: Tells the user, in one line, that a server could not start.
        owner: Who the tools belong to, for an agent's own servers (None: the process's).
        project: The servers of ``configs`` that a project defines, as written: each starts only
            when ``approve`` says so.
        approve: Whether a project's server may start (asking the user, where someone can
            answer); None starts none of them.

    """

    def __init__(
        self,
        configs: Mapping[str, McpServerConfig],
        *,
        catalogue: ToolCatalogue,
        log_dir: Path,
        project_root: Path,
        notify: Callable[[str], None] = lambda _message: None,
        owner: str | None = None,
        project: Mapping[str, ProjectServer] | None = None,
        approve: Callable[[ProjectServer], Awaitable[bool]] | None = None,
    ) -> None:
        self.configs = dict(configs)
        self.project = dict(project or {})
        self._approve = approve
        self._approved: set[str] = set()
        self._catalogue = catalogue
        self._log_dir = log_dir
        self._project_root = project_root
        self._notify = notify
        self._owner = owner
        self._connections: dict[str, McpConnection] = {}
        self._definitions: dict[str, list[McpToolDefinition]] = {}

    def enabled(self) -> list[str]:
        """The names of the servers that may start."""
        return [name for name, config in self.configs.items() if config.enabled]

    async def tool_names(self, servers: Iterable[str] | None = None) -> list[str]:
        """The tools of ``servers`` (every enabled one by default), starting them concurrently.

        A server that cannot start is reported once through ``notify`` and contributes no tools.
        """
        names = [name for name in (self.enabled() if servers is None else servers) if name in self.enabled()]
        listed = await asyncio.gather(*(self._list(name) for name in names))
        return [definition.name for definitions in listed for definition in definitions]

    def tools(self, names: Iterable[str]) -> list[Tool[Any]]:
        """Fresh tools for those of ``names`` that are these servers' (for an agent's own servers)."""
        from nestor.tools.mcp.tool import McpTool

        wanted = set(names)
        return [
            McpTool(definition, self._connections[definition.server])
            for definitions in self._definitions.values()
            for definition in definitions
            if definition.name in wanted
        ]

    def read_only(self, name: str) -> bool:
        """Whether the server says the tool ``name`` only reads (its ``readOnlyHint``)."""
        return any(d.name == name and d.read_only for ds in self._definitions.values() for d in ds)

    async def states(self) -> list[ServerState]:
        """Every configured server's state; enabled ones are started to count their tools."""
        await self.tool_names()
        states: list[ServerState] = []
        for name, config in self.configs.items():
            target = config.url or " ".join([config.command or "", *config.args]).strip()
            connection = self._connections.get(name)
            if not config.enabled:
                status, error = "disabled", ""
            elif name in self.project and name not in self._approved:
                status, error = "not approved", ""
            elif connection is None:
                status, error = "stopped", ""
            else:
                status, error = connection.status, connection.error
            tools = tuple(definition.name for definition in self._definitions.get(name, ()))
            states.append(
                ServerState(name, config.kind, target, status, tools, error, self.project.get(name))
            )
        return states

    async def close(self) -> None:
        """Stop every server started (stdio processes end)."""
        await asyncio.gather(*(connection.close() for connection in self._connections.values()))

    def connection(self, name: str) -> McpConnection:
        """The connection to server ``name`` (made on first use, not started)."""
        connection = self._connections.get(name)
        if connection is None:
            from nestor.tools.mcp.connection import McpConnection

            connection = McpConnection(
                name, self.configs[name], log_dir=self._log_dir, project_root=self._project_root
            )
            self._connections[name] = connection
        return connection

    async def _list(self, name: str) -> list[McpToolDefinition]:
        from nestor.tools.mcp.tool import McpToolDefinition

        if not await self._may_start(name):
            return []
        connection = self.connection(name)
        try:
            tools = await connection.list_tools()
        except ToolError as exc:
            self._notify(f"{exc}; its tools are left out")
            return []
        definitions = [
            McpToolDefinition(
                server=name,
                tool=tool.name,
                name=tool_name(name, tool.name),
                description=tool.description or "",
                input_schema=dict(tool.input_schema),
                read_only=bool(tool.annotations and tool.annotations.read_only_hint),
            )
            for tool in tools
        ]
        self._definitions[name] = definitions
        for definition in definitions:
            self._register(definition, connection)
        return definitions

    async def _may_start(self, name: str) -> bool:
        """Whether server ``name`` is the user's, or a project's approved now or before."""
        server = self.project.get(name)
        if server is None or name in self._approved:
            return True
        if self._approve is None or not await self._approve(server):
            return False
        self._approved.add(name)
        return True

    def _register(self, definition: McpToolDefinition, connection: McpConnection) -> None:
        if definition.name in self._catalogue:
            return
        traits: tuple[Trait, ...] = ("read_only",) if definition.read_only else ()
        if self._owner is not None:
            self._catalogue.register(definition.name, BuiltByOwner(self._owner), traits=traits)
            return

        def build() -> Tool[Any]:
            from nestor.tools.mcp.tool import McpTool

            return McpTool(definition, connection)

        self._catalogue.register(definition.name, build, traits=traits)
