"""Permission rules: ``tool`` or ``tool(pattern)``, e.g. ``bash(git status*)`` or ``write(src/**)``.

What a pattern is matched against depends on the tool:

- ``bash``: each simple command of the line, normalised (see :mod:`nestor.permissions.bash_commands`).
  An allow rule must cover every command of the line, a deny or ask rule any one of them; a deny or
  ask rule ``rm *`` also covers a bare ``rm`` (``xargs rm`` runs it with arguments it reads). The
  files the line's redirections open are judged as the ``write`` and ``view`` tools' requests: a
  deny or ask rule on such a file applies to the line, and a line with a pattern allow rule is
  covered only when its redirections are allowed too (a bare ``bash`` allow covers them all). A
  file not known before the line runs, and whatever a line that cannot be judged hides, may be any
  file: a deny or ask rule on files with a pattern applies to it (:func:`unjudged_rule`).
- file tools: the resolved path (see :mod:`nestor.permissions.paths`); relative patterns are
  relative to the project root, and a bare allow rule covers the project only. A deny or ask rule
  also covers the hard links of the files it covers (see :mod:`nestor.permissions.hard_links`).
- ``fetch``/``web_fetch``: the parsed URL (see :mod:`nestor.permissions.urls`).
- MCP tools (``mcp__server__tool``): the rule's name itself says which tools it covers:
  ``mcp__github`` or ``mcp__github__*`` every tool of the server, ``mcp__github__get_*`` some;
  every MCP call asks unless a rule allows it.
- anything else: the request's target, as a shell-style glob.

Some rules govern more than the tool they name: a ``view`` (``Read``) rule governs every read tool
(view, grep, glob, ls), a ``write`` rule governs ``edit`` and the reverse (one file-write
permission), and a ``fetch`` rule governs ``web_fetch``. Claude Code's spellings are accepted as
they are (``Bash(git status:*)``, ``Read``, ``Edit``, ``MultiEdit``, ``WebFetch(domain:x)``) so
existing settings carry over.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Literal

from nestor.core.errors import ConfigError
from nestor.core.permission import PermissionRequest
from nestor.permissions.bash_commands import CommandLine, parse_command_line
from nestor.permissions.bash_redirects import FileAccess
from nestor.permissions.hard_links import linked_rule
from nestor.permissions.paths import is_bare, is_inside, path_matches, shell_independent_realpath
from nestor.permissions.urls import UrlPatternError, parse_url_pattern, url_matches
from nestor.tools.catalogue import ToolCatalogue
from nestor.tools.mcp.names import entry_covers, is_mcp_name

RuleAction = Literal["allow", "ask", "deny"]

_TOOLS = ToolCatalogue()  # rules name nestor's own tools: the built-ins
_FOREIGN_TOOL_NAMES = _TOOLS.rule_aliases()
# The rule tools that govern a call of each tool, besides the tool itself. Same capability, so a
# deny rule cannot be sidestepped with a sibling tool: fetch covers a research agent's web_fetch,
# view (Read) covers every read tool, and write and edit are one file-write permission.
_GOVERNED_BY: dict[str, frozenset[str]] = {
    info.name: frozenset(info.governed_by) for info in _TOOLS if info.governed_by
}
_PATH_TOOLS = frozenset(info.name for info in _TOOLS if info.rule_target == "path")
_URL_TOOLS = frozenset(info.name for info in _TOOLS if info.rule_target == "url")
_COMMAND_TOOLS = frozenset(info.name for info in _TOOLS if info.rule_target == "command")

# An MCP rule may end its name with a glob: mcp__github__* (all of a server's tools), mcp__github__get_*.
_RULE_PATTERN = re.compile(r"^\s*([A-Za-z_][\w-]*\*?)\s*(?:\((.*)\))?\s*$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule: an action for a tool, optionally only for targets matching ``pattern``."""

    action: RuleAction
    tool: str
    pattern: str | None = None

    def governs(self, tool_name: str) -> bool:
        """Return True when this rule is about ``tool_name`` (named, ``*``, or a sibling capability)."""
        if self.tool in (tool_name, "*") or self.tool in _GOVERNED_BY.get(tool_name, ()):
            return True
        return is_mcp_name(self.tool) and entry_covers(self.tool, tool_name)

    def matches(
        self, tool_name: str, target: str, project_root: str, *, target_is_real: bool = False
    ) -> bool:
        """Return True when this rule applies to ``tool_name`` on one ``target``.

        ``target`` is a path, a URL, or for ``bash`` one simple command (whole command lines go
        through :func:`find_rule`, which splits them). A path is resolved first unless
        ``target_is_real`` says it already is.
        """
        if not self.governs(tool_name):
            return False
        if tool_name in _PATH_TOOLS:
            return path_matches(
                self.pattern,
                target,
                project_root,
                bare_covers_outside=self.action != "allow",
                target_is_real=target_is_real,
            )
        if self.pattern is None or is_bare(self.pattern):
            return True
        if tool_name in _URL_TOOLS:
            return url_matches(parse_url_pattern(self.pattern), target)
        if tool_name in _COMMAND_TOOLS:
            pattern = " ".join(self.pattern.split())
            if fnmatchcase(target, pattern):
                return True
            # "rm *" forbids "rm" alone too: xargs and find give it arguments nestor cannot see.
            return self.action != "allow" and pattern.endswith(" *") and fnmatchcase(target, pattern[:-2])
        return fnmatchcase(target, self.pattern)

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
    if tool.endswith("*") and not is_mcp_name(tool):
        raise ConfigError(
            f"{source}: invalid permission rule {text!r} in permissions.{action}",
            hint="only MCP rules may end their tool name with '*' (mcp__server__*); write the tool's name",
        )
    pattern = match.group(2)
    if pattern is not None:
        pattern = pattern.strip()
        # Claude Code writes command prefixes as "git status:*".
        if pattern.endswith(":*"):
            pattern = pattern[:-2] + "*"
        if tool in _URL_TOOLS and not is_bare(pattern):
            try:
                parse_url_pattern(pattern)
            except UrlPatternError as error:
                raise ConfigError(
                    f"{source}: invalid permission rule {text!r} in permissions.{action}: {error}",
                    hint='write URL rules as "fetch(https://host/path*)" or "WebFetch(domain:example.com)"',
                ) from None
    return Rule(action=action, tool=tool, pattern=pattern)


def find_rule(
    rules: Sequence[Rule], action: RuleAction, request: PermissionRequest, project_root: str
) -> Rule | None:
    """The first of ``rules`` with ``action`` that applies to ``request``, or None.

    A ``bash`` command line is split into its simple commands: an allow rule must cover each of
    them (several rules may share the work) and never covers a line that cannot be judged
    statically; a deny or ask rule applies when it covers any one of them. The files its
    redirections open are judged by the file rules (see the module docstring).
    """
    candidates = [rule for rule in rules if rule.action == action and rule.governs(request.tool_name)]
    if request.tool_name not in _COMMAND_TOOLS:
        found = next(
            (
                rule
                for rule in candidates
                if rule.matches(
                    request.tool_name, request.target, project_root, target_is_real=request.target_is_real
                )
            ),
            None,
        )
        if found is None and action != "allow" and request.tool_name in _PATH_TOOLS:
            return linked_rule(candidates, request.target, project_root)
        return found
    bare = next((rule for rule in candidates if is_bare(rule.pattern)), None)
    if bare is not None:
        return bare
    if not candidates and (action == "allow" or not _judges_files(rules, action)):
        return None
    line = parse_command_line(request.target)

    def covering(text: str) -> Rule | None:
        return next(
            (rule for rule in candidates if rule.matches(request.tool_name, text, project_root)), None
        )

    if action != "allow":
        for command in line.commands:
            found = next((rule for text in command.deny_texts if (rule := covering(text)) is not None), None)
            if found is not None:
                return found
        return _file_rule(rules, action, line, project_root)
    if line.unresolved:
        return None
    first: Rule | None = None
    for command in line.commands:
        if not command.needs_allow:
            continue
        rule = covering(command.allow_text)
        if rule is None:
            return None
        first = first or rule
    if first is not None and not all(_file_allowed(rules, access, project_root) for access in line.files):
        return None
    return first


def unjudged_rule(rules: Sequence[Rule], request: PermissionRequest, project_root: str) -> Rule | None:
    """A deny or ask rule with a pattern that might cover what ``request``'s line hides, or None.

    When the commands of a ``bash`` line are not all known, a ``bash`` deny rule cannot tell whether
    it covers them, and a file rule cannot tell whether what they hide opens its files
    (``eval 'echo x >> .env'``); when a redirection's file is not known (``> "$f"``), a file rule
    cannot. The line must then be asked, whatever allows it.
    """
    if request.tool_name not in _COMMAND_TOOLS:
        return None
    # A deny rule first: a line it may cover is refused, not asked.
    guards = sorted(
        (rule for rule in rules if rule.action != "allow" and not is_bare(rule.pattern)),
        key=lambda rule: rule.action != "deny",
    )
    if not guards:
        return None
    line = parse_command_line(request.target)
    if line.unresolved:
        found = next(
            (rule for rule in guards if rule.governs(request.tool_name) or _governs_files(rule)), None
        )
        if found is not None:
            return found
    for access in line.files:
        if _file_request(access, project_root) is None:
            found = next((rule for rule in guards if rule.governs(_FILE_TOOLS[access.action])), None)
            if found is not None:
                return found
    return None


_FILE_TOOLS = {"read": "view", "write": "write"}


def _governs_files(rule: Rule) -> bool:
    return any(rule.governs(tool) for tool in _FILE_TOOLS.values())


def _judges_files(rules: Sequence[Rule], action: RuleAction) -> bool:
    return any(
        rule.action == action and rule.governs(tool) for rule in rules for tool in _FILE_TOOLS.values()
    )


def _file_rule(
    rules: Sequence[Rule], action: RuleAction, line: CommandLine, project_root: str
) -> Rule | None:
    """The deny or ask rule on a file the line's redirections open, if any."""
    for access in line.files:
        tool = _FILE_TOOLS[access.action]
        request = _file_request(access, project_root)
        if request is None:
            # A file not known before the line runs: only a rule on every file covers it.
            found = next(
                (
                    rule
                    for rule in rules
                    if rule.action == action and rule.governs(tool) and is_bare(rule.pattern)
                ),
                None,
            )
        else:
            found = find_rule(rules, action, request, project_root)
        if found is not None:
            return found
    return None


def _file_allowed(rules: Sequence[Rule], access: FileAccess, project_root: str) -> bool:
    """True when the file rules allow what the redirection ``access`` does, as they would the tool's."""
    request = _file_request(access, project_root)
    if request is None:
        return False
    if access.action == "read" and not request.outside_project:
        return True  # reading inside the project is allowed by default
    return find_rule(rules, "allow", request, project_root) is not None


def _file_request(access: FileAccess, project_root: str) -> PermissionRequest | None:
    """The request the ``write`` or ``view`` tool would make for the file a redirection opens.

    None when the file is not known before the line runs: its path is not, or it leads through
    the shell's own state (``/proc/self/cwd``, ``/dev/fd/3``: see :func:`shell_independent_realpath`).
    """
    if access.path is None:
        return None
    path = os.path.expanduser(access.path)
    real = shell_independent_realpath(os.path.join(os.path.abspath(project_root), path))
    if real is None:
        return None
    tool = _FILE_TOOLS[access.action]
    return PermissionRequest(
        tool,
        access.action,
        real,
        f"{tool} {real}",
        outside_project=not is_inside(real, project_root),
        target_is_real=True,
    )
