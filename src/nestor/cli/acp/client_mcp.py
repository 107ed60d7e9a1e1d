"""The MCP servers an editor passes with ``session/new``, as ``[mcp_servers]`` entries of that session.

They come from the user's editor, not from the repository, so they apply in an untrusted folder
too; a server of the same name as one in the user's config replaces it for the session. Their
tools ask before each call, like every MCP tool's, unless a rule allows them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from acp.schema import HttpMcpServer, McpServerStdio, SseMcpServer
from pydantic import ValidationError

from nestor.config.sections import McpServerConfig
from nestor.config.settings import Settings
from nestor.core.errors import ConfigError


def server_config(server: Any) -> McpServerConfig:
    """One server of the client's list as nestor's config of it.

    Raises:
        ConfigError: The entry is of no kind nestor speaks, or not valid.

    """
    try:
        if isinstance(server, McpServerStdio):
            return McpServerConfig(
                command=server.command,
                args=tuple(server.args),
                env={variable.name: variable.value for variable in server.env},
            )
        if isinstance(server, HttpMcpServer | SseMcpServer):
            return McpServerConfig(
                url=server.url,
                headers={header.name: header.value for header in server.headers},
                transport="sse" if isinstance(server, SseMcpServer) else "http",
            )
    except ValidationError as exc:
        name = getattr(server, "name", "?")
        raise ConfigError(
            f"MCP server {name!r} from the editor is not valid: {exc.errors()[0]['msg']}",
            hint="check the server's settings in the editor",
        ) from None
    raise ConfigError(
        f"MCP server {getattr(server, 'name', '?')!r} from the editor uses a transport nestor does not speak",
        hint="use a stdio, http or sse server",
    )


def with_client_servers(settings: Settings, servers: Sequence[Any]) -> Settings:
    """``settings`` with the client's MCP servers added (a client's server wins over a same-named one)."""
    if not servers:
        return settings
    added = {server.name: server_config(server) for server in servers}
    return settings.model_copy(update={"mcp_servers": {**settings.mcp_servers, **added}})
