"""Claude Code's project ``.mcp.json``: its servers as ``[mcp_servers]`` tables.

The file is ``{"mcpServers": {"NAME": {"type": "stdio", "command": ..., "args": [...], "env":
{...}}}}`` (or ``"type": "http"``/``"sse"`` with ``url`` and ``headers``). It comes with the
repository, so :func:`load_settings` uses it only in a trusted folder, and its ``${VAR}`` and
``${VAR:-default}`` expand only the variables the user allows (:mod:`nestor.config.mcp_project`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nestor.config.files import read_json_file
from nestor.core.errors import ConfigError

MCP_JSON_NAME = ".mcp.json"
_KEYS = {"type": "transport", "command": "command", "args": "args", "env": "env"}
_KEYS |= {"url": "url", "headers": "headers", "cwd": "cwd", "timeout": "timeout", "enabled": "enabled"}


def read_mcp_json(path: Path, *, inside: Path | None = None) -> dict[str, dict[str, Any]] | None:
    """The servers of ``path`` as ``[mcp_servers]`` tables, as written (``${VAR}`` kept); None without it.

    Raises:
        ConfigError: The file cannot be read, is not JSON, or is not shaped like Claude Code's.

    """
    servers = _servers(path, inside)
    if servers is None:
        return None
    tables: dict[str, dict[str, Any]] = {}
    for name, entry in servers.items():
        if not isinstance(entry, dict):
            raise _shape_error(path, f"mcpServers.{name} must be an object")
        table: dict[str, Any] = {}
        for key, value in entry.items():  # pyright: ignore[reportUnknownVariableType]
            ours = _KEYS.get(str(key))  # pyright: ignore[reportUnknownArgumentType]
            if ours is None:
                raise _shape_error(path, f"mcpServers.{name}: unknown key {key!r}; known: {', '.join(_KEYS)}")
            table[ours] = value
        tables[name] = table
    return tables


def mcp_json_server_names(path: Path, *, inside: Path | None = None) -> list[str]:
    """The names of the servers ``path`` defines ([] without the file), to name them when ignored."""
    try:
        servers = _servers(path, inside)
    except ConfigError:
        return ["(unreadable)"]
    return list(servers or ())


def _servers(path: Path, inside: Path | None) -> dict[str, Any] | None:
    data: Any = read_json_file(path, inside=inside, what="an MCP config")
    if data is None:
        return None
    servers: Any = data.get("mcpServers", {}) if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise _shape_error(path, 'expected {"mcpServers": {"NAME": {...}}}')
    return {str(name): entry for name, entry in servers.items()}  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]


def _shape_error(path: Path, message: str) -> ConfigError:
    return ConfigError(f"{path}: {message}", hint="see Claude Code's .mcp.json format, or remove the file")
