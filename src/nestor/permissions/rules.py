"""Permission rules: ``tool`` or ``tool(pattern)``, e.g. ``bash(git status*)`` or ``write(src/**)``.

Patterns are shell-style globs (``*`` also crosses ``/``, so ``src/*`` covers the whole tree) matched
against the call's target: the command for ``bash``, the
path for file tools (absolute, or relative to the project root), the URL for ``fetch``. Claude
Code's spellings are accepted as they are (``Bash(git status:*)``, ``Read``, ``Edit``, ``WebFetch``)
so existing settings carry over.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Literal

from nestor.core.errors import ConfigError

RuleAction = Literal["allow", "ask", "deny"]

_FOREIGN_TOOL_NAMES = {
    "read": "view",
    "multiedit": "edit",
    "webfetch": "fetch",
    "websearch": "web_search",
    "task": "task",
    "agent": "task",
}

# A rule written for fetch also governs web_fetch: the same capability on the same client, so a
# deny rule on fetch cannot be sidestepped by a research agent's web_fetch.
_SAME_CAPABILITY = {"web_fetch": "fetch"}

_RULE_PATTERN = re.compile(r"^\s*([A-Za-z_][\w-]*)\s*(?:\((.*)\))?\s*$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule: an action for a tool, optionally only for targets matching ``pattern``."""

    action: RuleAction
    tool: str
    pattern: str | None = None

    def matches(self, tool_name: str, target: str, project_root: str) -> bool:
        """Return True when this rule applies to a call of ``tool_name`` on ``target``."""
        if self.tool not in (tool_name, "*") and _SAME_CAPABILITY.get(tool_name) != self.tool:
            return False
        if self.pattern is None or self.pattern in ("", "*", "**"):
            return True
        if fnmatchcase(target, self.pattern):
            return True
        # File rules may be written relative to the project root.
        if target.startswith(project_root.rstrip("/") + "/"):
            relative = target[len(project_root.rstrip("/")) + 1 :]
            if fnmatchcase(relative, self.pattern):
                return True
        return False

    def __str__(self) -> str:
        return self.tool if self.pattern is None else f"{self.tool}({self.pattern})"


def normalise_tool_name(name: str) -> str:
    """Map a tool name as users write it (any case, Claude Code names) onto nestor's."""
    lowered = name.strip().lower()
    return _FOREIGN_TOOL_NAMES.get(lowered, lowered)


def parse_rule(action: RuleAction, text: str, *, source: str = "config") -> Rule:
    """Parse ``tool`` or ``tool(pattern)``; raise :class:`ConfigError` naming ``source`` when invalid."""
    match = _RULE_PATTERN.match(text)
    if match is None:
        raise ConfigError(
            f"{source}: invalid permission rule {text!r} in permissions.{action}",
            hint='write rules as "tool" or "tool(pattern)", e.g. "bash(git status*)" or "write(src/**)"',
        )
    tool = normalise_tool_name(match.group(1))
    pattern = match.group(2)
    if pattern is not None:
        pattern = pattern.strip()
        # Claude Code writes command prefixes as "git status:*".
        if pattern.endswith(":*"):
            pattern = pattern[:-2] + "*"
    return Rule(action=action, tool=tool, pattern=pattern)
