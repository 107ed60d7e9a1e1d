"""A tool call as hooks see it: Claude Code's field names where nestor's differ, and back.

``tool_name`` is Claude Code's name of the tool where it has one (``Bash``, ``Read``: hooks written
for Claude Code test it), else nestor's (``mcp__server__tool`` in both); ``nestor_tool_name`` is
always nestor's (``bash``, ``view``).

``tool_input`` carries the call's arguments, with these fields renamed to Claude Code's: a file
tool's ``path`` (``view``, ``edit``, ``write``: Read, Edit, Write) is ``file_path``, made absolute
as Claude Code gives it; ``grep``'s ``include`` is ``glob``. Every other field keeps nestor's name
(``bash``'s ``timeout`` stays in seconds). A hook's ``updatedInput`` is read back the same way,
its fields over the call's own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

_RENAMED: dict[str, dict[str, str]] = {
    "view": {"path": "file_path"},
    "edit": {"path": "file_path"},
    "write": {"path": "file_path"},
    "grep": {"include": "glob"},
}
_ABSOLUTE = frozenset({"file_path"})


def hook_tool_input(tool_name: str, args: dict[str, Any], project_root: Path) -> dict[str, Any]:
    """The call's arguments as hooks get them (``tool_input``)."""
    renamed = _RENAMED.get(tool_name, {})
    shown: dict[str, Any] = {}
    for key, value in args.items():
        name = renamed.get(key, key)
        if name in _ABSOLUTE and isinstance(value, str):
            value = str(project_root / Path(value).expanduser())
        shown[name] = value
    return shown


def tool_args(tool_name: str, args: dict[str, Any], updated: dict[str, Any]) -> dict[str, Any]:
    """The arguments to run a call with once a hook gave ``updated`` (``updatedInput``)."""
    back = {shown: own for own, shown in _RENAMED.get(tool_name, {}).items()}
    merged = dict(args)
    for key, value in updated.items():
        merged[back.get(key, key)] = value
    return merged


def tool_response(tool_input: dict[str, Any], content: str, *, success: bool) -> dict[str, Any]:
    """A tool's result as PostToolUse hooks get it (``tool_response``)."""
    response: dict[str, Any] = {"content": content, "success": success}
    if "file_path" in tool_input:
        response["filePath"] = tool_input["file_path"]
    return response
