"""An agent file's MCP servers: Claude Code's ``mcpServers``, emdash's and nestor's ``mcp_servers``.

Claude Code writes a list whose entries are the name of a configured server or ``{NAME: {command,
args, env | type, url, headers}}``; emdash (and nestor) a mapping ``NAME: {command, args, env,
enabled, timeout}``, where a name mapped to nothing (or ``true``) means the configured server. A
name is a reference; a table is the agent's own server, checked like ``[mcp_servers]`` tables.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from nestor.agents.fields import Fields
from nestor.config.sections import MCP_SERVER_NAME, McpServerConfig

_CLAUDE_KEYS = {"type": "transport"}


def mcp_fields(fields: Fields, key: str) -> dict[str, Any]:
    """A spec's ``mcp_servers`` and ``own_mcp_servers``, read from ``key``."""
    named, own = mcp_servers(fields, key)
    return {"mcp_servers": named, "own_mcp_servers": own}


def mcp_servers(fields: Fields, key: str) -> tuple[tuple[str, ...], tuple[tuple[str, McpServerConfig], ...]]:
    """The servers named (references) and defined (the agent's own) under ``key``."""
    value: Any = fields.get(key)
    if value is None:
        return (), ()
    entries: list[tuple[str, Any, int | str]] = []
    if isinstance(value, dict):
        entries = [(str(name), table, str(name)) for name, table in value.items()]  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    elif isinstance(value, list):
        for index, item in enumerate(value):  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
            if isinstance(item, dict):
                entries.extend((str(name), table, index) for name, table in item.items())  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
            else:
                entries.append((str(item), None, index))  # pyright: ignore[reportUnknownArgumentType]
    else:
        fields.error(key, "must be a list of server names or {name: {command: ...}} entries")
        return (), ()
    # nestor's own format is strict; another tool's file keeps loading without the server.
    report = fields.error if fields.context.ecosystem == "nestor" else fields.warn
    named: list[str] = []
    own: list[tuple[str, McpServerConfig]] = []
    for name, table, item in entries:
        if not MCP_SERVER_NAME.fullmatch(name):
            fields.error(key, f"MCP server name {name!r} must be letters, digits, '-' and single '_'", item)
        elif table is None or table is True:
            named.append(name)
        elif isinstance(table, dict):
            config = _config(report, key, name, table, item)  # pyright: ignore[reportUnknownArgumentType]
            if config is not None:
                own.append((name, config))
        else:
            fields.error(key, f"{name}: expected a table with command or url, not {table!r}", item)
    return tuple(dict.fromkeys(named)), tuple(own)


def _config(
    report: Callable[[str, str, int | str | None], None],
    key: str,
    name: str,
    table: dict[Any, Any],
    item: int | str,
) -> McpServerConfig | None:
    data = {_CLAUDE_KEYS.get(str(field), str(field)): value for field, value in table.items()}
    if isinstance(data.get("args"), list):
        data["args"] = tuple(str(arg) for arg in data["args"])  # pyright: ignore[reportUnknownVariableType]
    try:
        return McpServerConfig.model_validate(data)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in error["loc"])
        cause = error["msg"].removeprefix("Value error, ")
        report(key, f"{name}: {where + ': ' if where else ''}{cause}; the server is left out", item)
        return None
