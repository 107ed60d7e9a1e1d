"""The notices that say which project settings were not applied, and why: one line per reason.

Light (no runtime): ``App`` prints them when the main agent starts, ``nestor mcp list`` those
about MCP servers.
"""

from __future__ import annotations

from collections.abc import Sequence

from nestor.agents.spec import AgentSpec
from nestor.config.paths import PROJECT_CONFIG_NAME
from nestor.config.settings import Settings

MOST_NAMED = 10
"""The most agents a start's notices name one by one (a repository may define hundreds)."""


def ignored_settings_notices(
    settings: Settings, untrusted_agents: Sequence[AgentSpec], agents_with_servers: Sequence[AgentSpec] = ()
) -> list[str]:
    """One line per reason project settings were not applied; [] when everything applied."""
    lines: list[str] = []
    untrusted = [item.key for item in settings.ignored if item.reason == "untrusted"]
    agents = [f"agent {spec.name}'s model" for spec in untrusted_agents]
    agents += [f"agent {spec.name}'s MCP servers" for spec in agents_with_servers]
    if len(agents) > MOST_NAMED:  # a repository's agent files name any number of models
        agents[MOST_NAMED:] = [f"{len(agents) - MOST_NAMED} more agents' models or MCP servers"]
    untrusted += agents
    if untrusted:
        settings_were = "settings that would" if len(untrusted) > 1 else "setting that would"
        lines.append(
            f"this folder is not trusted, so its {settings_were} widen what nestor may do or where data goes "
            f"{_was(untrusted)} ignored ({', '.join(untrusted)}); run `nestor trust` or pass --trust if you "
            "trust it"
        )
    redefined = [item.key for item in settings.ignored if item.reason == "user provider"]
    if redefined:
        lines.append(
            f"{PROJECT_CONFIG_NAME} may not redefine a built-in provider or one of your config, so "
            f"{', '.join(redefined)} {_was(redefined)} ignored"
        )
    key_senders = [item.key for item in settings.ignored if item.reason == "user key"]
    if key_senders:
        lines.append(
            f"{PROJECT_CONFIG_NAME} may not send the API key of a provider you configure to a server of its "
            f"own, so {', '.join(key_senders)} {_was(key_senders)} ignored"
        )
    taken = [item.key for item in settings.ignored if item.reason in ("user server", "user only")]
    if taken:
        lines.append(
            f"a project may not redefine an MCP server of your config nor set [mcp], so {', '.join(taken)} "
            f"{_was(taken)} ignored"
        )
    unread = [item.key for item in settings.ignored if item.reason == "variable"]
    if unread:
        lines.append(
            f"a project's MCP servers read only the variables your config allows, so {', '.join(unread)} "
            'expanded as if unset; allow one with [mcp] expand_env = ["NAME"] in your config.toml '
            "(a provider's key never)"
        )
    return lines


def _was(items: Sequence[str]) -> str:
    return "was" if len(items) == 1 else "were"
