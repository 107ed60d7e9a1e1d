"""What a tool call asks permission for: plain data shared by tools, permissions and UIs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

PermissionAction = Literal["read", "write", "execute", "network"]

PermissionAnswer = Literal["once", "session", "deny"]
"""The user's answer to a permission question: allow this call, allow such calls for the session, deny."""

PERMISSION_CHOICES: tuple[PermissionAnswer, ...] = ("once", "session", "deny")

YES_NO: tuple[PermissionAnswer, ...] = ("once", "deny")
"""The answers of a yes/no question (approving a project's MCP server): ``once`` is yes."""


@dataclass(frozen=True, slots=True)
class PermissionRequest:
    """What a tool call wants to do, for the permission rules and the user to judge.

    Attributes:
        tool_name: The tool asking.
        action: The kind of effect; ``read`` is allowed by default inside the project.
        target: What rules match against: an absolute path, a shell command or a URL.
        description: One line for the user, e.g. ``Run: git status``.
        outside_project: True when a path lies outside the project root (always needs approval
            unless a rule allows it).
        grant_key: What "allow for this session" covers; calls with the same tool and grant key
            are allowed from then on.
        target_is_real: True when ``target`` is a path already resolved (symlinks followed), so
            the rules judge it as it is instead of resolving it again (a search judges thousands).

    """

    tool_name: str
    action: PermissionAction
    target: str
    description: str
    outside_project: bool = False
    grant_key: str = "*"
    target_is_real: bool = False
