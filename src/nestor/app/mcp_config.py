"""What ``nestor mcp`` needs: adding and removing servers in config files, and their states.

A light module (no runtime): ``add`` writes a ``[mcp_servers.NAME]`` table into the user's
``config.toml`` (``--scope user``, the default; comments and layout kept) or a server into the
project's ``.mcp.json`` (``--scope project``, Claude Code's shared file); ``remove`` takes a server
out of every file that defines it. States come from starting the servers (see
:class:`~nestor.tools.mcp.servers.McpServers`): the configured ones and a project's agent files'
own, a project's only once approved (``nestor.app.mcp_approvals``).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal, TypeAlias

from nestor.agents.registry import project_registry
from nestor.agents.spec import AgentSpec
from nestor.app.mcp_approvals import opened_approvals
from nestor.config.mcp_json import MCP_JSON_NAME
from nestor.config.paths import PROJECT_CONFIG_NAME, default_user_config_path
from nestor.config.sections import McpServerConfig, check_mcp_server_names
from nestor.config.settings import Settings
from nestor.core.errors import ConfigError, NestorError
from nestor.runtime.tree.mcp_tools import own_project_servers
from nestor.tools.catalogue import ToolCatalogue
from nestor.tools.mcp.names import server_of
from nestor.tools.mcp.servers import McpServers, ServerState

Scope: TypeAlias = Literal["user", "project"]

__all__ = ["McpServerConfig", "Scope", "ServerState", "add_server", "remove_server", "server_states"]


def add_server(
    name: str, config: McpServerConfig, *, scope: Scope, project_root: Path, env: Mapping[str, str]
) -> Path:
    """Write server ``name`` into the ``scope``'s file; return the file.

    Raises:
        ConfigError: The name is invalid, or the file already defines it, or cannot be read.

    """
    try:
        check_mcp_server_names([name])
    except ValueError as exc:
        raise ConfigError(str(exc), hint="pick another name, e.g. 'github' or 'my-docs'") from None
    table = config.model_dump(exclude_defaults=True)
    if scope == "project":
        path = project_root / MCP_JSON_NAME
        document = _read_json(path)
        servers: dict[str, Any] = document.setdefault("mcpServers", {})
        if name in servers:
            raise _exists(name, path)
        servers[name] = _claude_shape(table, config)
        path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
        return path
    import tomlkit

    path = default_user_config_path(env)
    document_toml = tomlkit.parse(_read_text(path))
    section: Any = document_toml.setdefault("mcp_servers", tomlkit.table(is_super_table=True))
    if name in section:
        raise _exists(name, path)
    section[name] = table
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(tomlkit.dumps(document_toml), encoding="utf-8")  # pyright: ignore[reportUnknownMemberType]
    return path


def remove_server(name: str, *, project_root: Path, env: Mapping[str, str]) -> list[Path]:
    """Take server ``name`` out of the user config, the project's ``.mcp.json`` and ``nestor.toml``.

    Raises:
        ConfigError: No file defines it.

    """
    import tomlkit

    changed: list[Path] = []
    for path in (default_user_config_path(env), project_root / PROJECT_CONFIG_NAME):
        document: Any = tomlkit.parse(_read_text(path))
        servers: Any = document.get("mcp_servers")
        if servers is not None and name in servers:
            del servers[name]
            path.write_text(tomlkit.dumps(document), encoding="utf-8")  # pyright: ignore[reportUnknownMemberType]
            changed.append(path)
    json_path = project_root / MCP_JSON_NAME
    data = _read_json(json_path)
    if name in data.get("mcpServers", {}):
        del data["mcpServers"][name]
        json_path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        changed.append(json_path)
    if not changed:
        raise ConfigError(
            f"no MCP server named {name!r} in your config or this project", hint="nestor mcp list shows them"
        )
    return changed


async def server_states(
    settings: Settings, names: list[str] | None = None, env: Mapping[str, str] = os.environ
) -> list[ServerState]:
    """The state of each server (or of ``names``), starting them to count their tools.

    The servers are the configured ones and those a project's agent files define; a project's
    server starts only if its definition is approved (else its status is ``not approved``).

    Raises:
        NestorError: One of ``names`` is not a server of the config or of an agent file.
        StoreError: The database (where approvals are) cannot be opened.

    """
    groups: list[tuple[str | None, dict[str, McpServerConfig], dict[str, Any]]] = [
        (None, dict(settings.mcp_servers), dict(settings.project_mcp_servers))
    ]
    registry = project_registry(Path(settings.project_root), env, trusted=settings.project_trusted)
    for spec in registry.specs():
        if project := own_project_servers(spec):
            groups.append((f"agent {spec.name}", dict(spec.own_mcp_servers), project))
    known = {name for _owner, configs, _project in groups for name in configs}
    for name in names or ():
        if name not in known:
            configured = ", ".join(sorted(known)) or "none"
            raise NestorError(
                f"no MCP server named {name!r}", hint=f"configured: {configured}; nestor mcp list"
            )
    with opened_approvals(settings) as approvals:
        sets = [
            McpServers(
                {name: config for name, config in configs.items() if names is None or name in names},
                catalogue=ToolCatalogue(),
                log_dir=settings.data_dir / "mcp" / "logs",
                project_root=Path(settings.project_root),
                owner=owner,
                project=project,
                approve=approvals.allows,
            )
            for owner, configs, project in groups
        ]
        try:
            listed = await asyncio.gather(*(servers.states() for servers in sets))
        finally:
            await asyncio.gather(*(servers.close() for servers in sets))
        return [
            state
            if state.project is None
            else replace(state, approved=approvals.state(state.project) == "approved")
            for states in listed
            for state in states
        ]


def _claude_shape(table: dict[str, Any], config: McpServerConfig) -> dict[str, Any]:
    """A server as ``.mcp.json`` writes it: ``type`` for our ``transport``."""
    table.pop("transport", None)
    return {
        "type": config.kind,
        **{key: list(value) if key == "args" else value for key, value in table.items()},
    }


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}", hint="fix its permissions") from None


def unconfigured_server_notices(settings: Settings, specs: Sequence[AgentSpec]) -> list[str]:
    """One line per agent whose file names MCP servers that no config defines (their tools are left out).

    A server counts as configured when ``[mcp_servers]`` (or a trusted ``.mcp.json``) has it,
    enabled or not, or when the agent's file defines it itself.
    """
    configured = set(settings.mcp_servers)
    lines: list[str] = []
    for spec in specs:
        own = {name for name, _config in spec.own_mcp_servers}
        named = [*spec.mcp_servers, *(server for entry in spec.tools or () if (server := server_of(entry)))]
        missing = sorted({name for name in named if name not in configured and name not in own})
        if missing:
            where = f" ({spec.path})" if spec.path else ""
            lines.append(
                f"agent {spec.name}{where} names MCP servers that are not configured ({', '.join(missing)}), "
                "so it gets none of their tools; add them with `nestor mcp add`"
            )
    return lines


def _read_json(path: Path) -> dict[str, Any]:
    text = _read_text(path)
    if not text.strip():
        return {}
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}:{exc.lineno}: invalid JSON: {exc.msg}", hint=f"fix {path} first") from None
    if not isinstance(data, dict) or not isinstance(data.get("mcpServers", {}), dict):  # pyright: ignore[reportUnknownMemberType]
        raise ConfigError(f'{path}: expected {{"mcpServers": {{...}}}}', hint=f"fix {path} first")
    return data  # pyright: ignore[reportUnknownVariableType]


def _exists(name: str, path: Path) -> ConfigError:
    return ConfigError(
        f"{path} already has an MCP server named {name!r}",
        hint=f"nestor mcp remove {name} first, or pick another name",
    )
