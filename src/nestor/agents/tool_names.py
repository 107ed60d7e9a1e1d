"""Other assistants' tool names in agent files, mapped onto nestor's.

Agent files written for Claude Code, OpenCode, Gemini CLI, emdash, CodeAlly, mini-cc or Crush name
tools their own way (``Read``, ``read_file``, ``run_shell_command``...); the tool catalogue
(:mod:`nestor.tools.catalogue`) holds each tool's foreign names. Readers map every name through
:func:`map_tool_name` (case-insensitive); a name nestor does not know is reported by the reader
with :func:`describe_unknown_tool`, never dropped silently. Each function looks in the built-in
tools unless given a catalogue (one with tools registered at run time).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from fnmatch import fnmatchcase

from nestor.tools.catalogue import ToolCatalogue

# Readers map every tool name of every agent file: building a catalogue for each name took half
# the start of a project with 20,000 agent files, so the built-ins' names are gathered here, once.
_BUILTIN = ToolCatalogue()
_BUILTIN_ALIASES = _BUILTIN.aliases()

NESTOR_TOOLS: tuple[str, ...] = _BUILTIN.names()
"""Every tool name nestor has, in the order tool lists are shown (the catalogue's built-ins)."""

# What nestor offers instead of some well-known tools it does not have.
_ALTERNATIVES: dict[str, str] = {
    "sourcegraph": "grep and glob search the local code",
    "notebookedit": "edit changes a notebook's JSON directly",
    "notebookread": "view reads a notebook's JSON",
    "todoread": "the todo list is part of the agent's context; todo_write updates it",
    "bashoutput": "bash returns a command's output when it finishes",
    "killshell": "bash commands end with their timeout",
    "askuserquestion": "a sub-agent cannot ask the user; it reports back instead",
    "exitplanmode": "plan agents simply return their plan",
    "download": "fetch and web_fetch retrieve URLs",
}

_PATTERNED = re.compile(r"^\s*([^()\s]+)\s*\((.*)\)\s*$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class ToolEntry:
    """One tool entry of an agent file, split into its name and an optional ``(pattern)``.

    Attributes:
        name: The tool name as written, without the pattern.
        pattern: The text between parentheses (Claude Code's ``Bash(git *)``), or None.

    """

    name: str
    pattern: str | None = None


def split_tool_entry(entry: str) -> ToolEntry:
    """Split ``Bash(git *)`` into ``ToolEntry("Bash", "git *")``; a bare name has no pattern."""
    match = _PATTERNED.match(entry)
    if match is None:
        return ToolEntry(entry.strip())
    return ToolEntry(match.group(1), match.group(2).strip())


def map_tool_name(name: str, catalogue: ToolCatalogue | None = None) -> str | None:
    """Return the nestor tool ``name`` means (any ecosystem, any case), or None if unknown."""
    known = _BUILTIN_ALIASES if catalogue is None else catalogue.aliases()
    return known.get(name.strip().lower())


def is_wildcard(name: str) -> bool:
    """True when ``name`` is a Gemini-style wildcard such as ``*`` or ``read_*``."""
    return any(char in name for char in "*?[")


def expand_tool_wildcard(pattern: str, catalogue: ToolCatalogue | None = None) -> tuple[str, ...]:
    """The nestor tools a wildcard covers, matched against nestor's and the foreign names.

    ``*`` covers every nestor tool; ``read_*`` covers Gemini's ``read_file`` and ``read_many_files``,
    so it yields ``view``. The result is in the catalogue's order, without repeats; it is empty
    when the wildcard matches nothing nestor has.
    """
    tools = catalogue or _BUILTIN
    lowered = pattern.strip().lower()
    matched = {tool for name, tool in tools.aliases().items() if fnmatchcase(name, lowered)}
    return tuple(tool for tool in tools.names() if tool in matched)


def describe_unknown_tool(
    name: str,
    catalogue: ToolCatalogue | None = None,
    *,
    suggest: bool = True,
    consequence: str = ", so the agent runs without it",
) -> str:
    """A one-line explanation for a tool name nestor does not know, with what it offers instead.

    ``suggest`` looks for a close name too, which costs a comparison with every name nestor knows;
    ``consequence`` says what becomes of the name (an agent file's agent runs without the tool).
    """
    known = _BUILTIN_ALIASES if catalogue is None else catalogue.aliases()
    lowered = name.strip().lower()
    offered = "nestor's tools are: " + ", ".join(NESTOR_TOOLS if catalogue is None else catalogue.names())
    if lowered.startswith("mcp_"):
        return (
            f"{name!r} looks like an MCP tool, but nestor names them mcp__SERVER__TOOL (or mcp__SERVER "
            f"for all of a server's){consequence} ({offered})"
        )
    alternative = _ALTERNATIVES.get(lowered)
    if alternative is not None:
        return f"nestor has no tool {name!r}{consequence}; instead, {alternative} ({offered})"
    close = difflib.get_close_matches(lowered, list(known), n=1, cutoff=0.75) if suggest else []
    suggestion = f"; did you mean {known[close[0]]!r}?" if close else ""
    return f"nestor has no tool {name!r}{consequence}{suggestion} ({offered})"
