"""A trusted project's MCP servers: kept apart from the user's, reading only the variables the user allows.

A trusted folder's ``.mcp.json`` and ``[mcp_servers]`` still come with the repository: each server is
a command nestor would run or an address it would send headers to. So, trusted or not:

- ``${VAR}`` and ``${VAR:-default}`` in a ``.mcp.json`` (in ``command``, ``args``, ``env``,
  ``url``, ``headers``, ``cwd``) expand only the variables the user's own config lists in
  ``[mcp] expand_env``, never a provider's key; any other variable expands as if it were unset (its
  default, else empty) and is named in :attr:`~nestor.config.settings.Settings.ignored`. A
  project's ``nestor.toml`` expands nothing, as the user's config does not.
- A project server never takes the name of one of the user's servers: its table would be merged
  over the user's, and the user's headers or token sent where the project says.
- Each project server keeps its definition as written (:class:`ProjectServer`), which the user
  approves before it first starts (``nestor.tools.mcp.approval``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from nestor.config.mcp_json import MCP_JSON_NAME
from nestor.config.paths import PROJECT_CONFIG_NAME
from nestor.config.settings import IgnoredSetting, ProjectServer
from nestor.config.trust import user_key_variables
from nestor.config.validation import merge
from nestor.core.errors import ConfigError

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@dataclass(frozen=True, slots=True)
class ProjectMcp:
    """A trusted project's MCP servers, ready to be layered over the user's config.

    Attributes:
        json_tables: The ``.mcp.json`` servers kept, their allowed variables expanded.
        toml_tables: The ``nestor.toml`` servers kept.
        servers: Every server kept, its definition as written, by name.
        ignored: What was left out: servers named like the user's, variables not expanded.

    """

    json_tables: dict[str, Any] = field(default_factory=dict[str, Any])
    toml_tables: dict[str, Any] = field(default_factory=dict[str, Any])
    servers: dict[str, ProjectServer] = field(default_factory=dict[str, ProjectServer])
    ignored: list[IgnoredSetting] = field(default_factory=list[IgnoredSetting])


def project_mcp(
    json_tables: Mapping[str, Any] | None,
    toml_tables: object,
    *,
    user_data: Mapping[str, Any],
    allowed: frozenset[str],
    env: Mapping[str, str],
) -> ProjectMcp:
    """Keep a trusted project's servers apart from the user's and expand only the variables allowed.

    Args:
        json_tables: The ``.mcp.json`` servers as written (None without the file).
        toml_tables: The ``[mcp_servers]`` of the project's ``nestor.toml`` (anything: it is
            checked later, with the rest of the file).
        user_data: The user's config, as read: its ``[mcp_servers]``.
        allowed: The variables a ``.mcp.json`` may expand (:func:`allowed_variables`).
        env: The environment the allowed variables are read from.

    """
    result = ProjectMcp()
    user_servers: Any = user_data.get("mcp_servers")
    taken = set(user_servers) if isinstance(user_servers, dict) else set()  # pyright: ignore[reportUnknownArgumentType]
    raw: dict[str, dict[str, Any]] = {}
    origins: dict[str, list[str]] = {}
    sources = [(MCP_JSON_NAME, dict(json_tables or {}))]
    if isinstance(toml_tables, dict):
        sources.append((PROJECT_CONFIG_NAME, dict(toml_tables)))  # pyright: ignore[reportUnknownArgumentType]
    for origin, tables in sources:
        for name, table in tables.items():
            if name in taken:
                label = f"{MCP_JSON_NAME} server {name}" if origin == MCP_JSON_NAME else f"mcp_servers.{name}"
                result.ignored.append(IgnoredSetting(label, "user server"))
                continue
            if origin == MCP_JSON_NAME:
                expanded, refused = expand_variables(table, env, allowed)
                result.json_tables[name] = expanded
                result.ignored.extend(
                    IgnoredSetting(f"${{{variable}}} in {MCP_JSON_NAME} server {name}", "variable")
                    for variable in sorted(refused)
                )
            else:
                result.toml_tables[name] = table
            if isinstance(table, dict):
                raw[name] = merge(raw.get(name, {}), table)  # pyright: ignore[reportUnknownArgumentType]
                origins.setdefault(name, []).append(origin)
    result.servers.update(
        (name, ProjectServer.of(name, " + ".join(origins[name]), table)) for name, table in raw.items()
    )
    return result


def expand_variables(value: Any, env: Mapping[str, str], allowed: frozenset[str]) -> tuple[Any, set[str]]:
    """``value`` with ``${VAR}`` and ``${VAR:-default}`` expanded in every string it holds.

    A variable in ``allowed`` takes its value from ``env`` (its default when unset or empty);
    any other expands as if it were unset. Returns the value and the variables not allowed.
    """
    refused: set[str] = set()

    def substitute(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2) or ""
        if name not in allowed:
            refused.add(name)
            return default
        return env.get(name) or default

    def expand(item: Any) -> Any:
        if isinstance(item, str):
            return _VARIABLE.sub(substitute, item)
        if isinstance(item, list):
            return [expand(element) for element in item]  # pyright: ignore[reportUnknownVariableType]
        if isinstance(item, dict):
            return {key: expand(element) for key, element in item.items()}  # pyright: ignore[reportUnknownVariableType]
        return item

    return expand(value), refused


def allowed_variables(user_data: Mapping[str, Any], source: str) -> frozenset[str]:
    """The variables a project's ``.mcp.json`` may expand: the user's ``[mcp] expand_env``.

    Its shape is checked later, with the rest of the file (``source``).

    Raises:
        ConfigError: It names a provider's key variable (a built-in one, or a provider's of the
            user's config), which no project's server may read.

    """
    section: Any = user_data.get("mcp")
    listed: Any = section.get("expand_env") if isinstance(section, dict) else None
    if not isinstance(listed, list):
        return frozenset()
    names = frozenset(name for name in listed if isinstance(name, str))  # pyright: ignore[reportUnknownVariableType]
    keys = sorted(names & user_key_variables(dict(user_data)))
    if keys:
        raise ConfigError(
            f"{source}: mcp.expand_env: {', '.join(keys)} holds a provider's API key, which no "
            "project's MCP server may read",
            hint=f"take it out of [mcp] expand_env in {source}; a server of your own config may use it",
        )
    return names
