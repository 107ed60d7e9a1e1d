"""``mcp__<server>__<tool>``: the names MCP tools have in nestor, as Claude Code names them.

This module imports nothing heavy: agent files, permission rules and the catalogue use it without
loading the ``mcp`` SDK.
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase

PREFIX = "mcp__"
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_MAX_NAME = 64  # the longest tool name OpenAI's and Anthropic's APIs take


def tool_name(server: str, tool: str) -> str:
    """The name the model calls ``server``'s ``tool`` by (characters APIs refuse become ``_``)."""
    return (PREFIX + server + "__" + _UNSAFE.sub("_", tool))[:_MAX_NAME]


def is_mcp_name(name: str) -> bool:
    """True for ``mcp__server`` and ``mcp__server__tool`` (any case)."""
    return name.strip().lower().startswith(PREFIX) and len(name.strip()) > len(PREFIX)


def server_of(name: str) -> str | None:
    """The server part of an MCP name (``mcp__github__create_issue`` -> ``github``), else None."""
    if not is_mcp_name(name):
        return None
    server, _, _ = name.strip()[len(PREFIX) :].partition("__")
    return server or None


def entry_covers(entry: str, name: str) -> bool:
    """Whether a tool-list or rule entry covers the MCP tool ``name``.

    ``mcp__github`` and ``mcp__github__*`` cover every tool of the server, ``mcp__github__get_*``
    the ones matching, ``mcp__github__get_issue`` that one; case does not matter.
    """
    wanted, actual = entry.strip().lower(), name.strip().lower()
    if not (is_mcp_name(wanted) and is_mcp_name(actual)):
        return False
    if "__" not in wanted[len(PREFIX) :]:
        wanted += "__*"
    return fnmatchcase(actual, wanted)
