"""A nestor tool call as an editor shows it: its ACP ``kind``, title, locations and content.

Everything here is worked out from the tool's name and arguments (what a ``tool_started`` event
carries), so the card an editor draws is the same live, in a permission question and when a session
is loaded: ``edit`` and ``write`` carry a diff, ``view`` the line it reads from, ``bash`` its
command.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from acp.schema import (
    ContentToolCallContent,
    FileEditToolCallContent,
    TerminalToolCallContent,
    TextContentBlock,
    ToolCallLocation,
    ToolCallStart,
)

from nestor.cli.formatting import one_line

ToolKind = Literal[
    "read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"
]
ToolContent = ContentToolCallContent | FileEditToolCallContent | TerminalToolCallContent

_KINDS: dict[str, ToolKind] = {
    "view": "read",
    "ls": "search",
    "glob": "search",
    "grep": "search",
    "symbols": "search",
    "references": "search",
    "definition": "search",
    "hover": "read",
    "diagnostics": "read",
    "edit": "edit",
    "write": "edit",
    "bash": "execute",
    "fetch": "fetch",
    "web_fetch": "fetch",
    "web_search": "fetch",
    "agentic_fetch": "fetch",
    "todo_write": "think",
    "task": "think",
}

# Larger files get no old text in a write's diff: an editor draws it whole.
_DIFF_READ_LIMIT = 1_048_576
_TITLE_WIDTH = 80


@dataclass(frozen=True, slots=True)
class ToolCallView:
    """What an editor shows of one tool call before it runs.

    Attributes:
        title: One line, e.g. ``Edit src/app.py`` or the command ``bash`` runs.
        kind: The ACP tool kind (the icon an editor picks).
        locations: Files the call touches, with a line where one is known (1-based).
        content: The diff of an edit or write, the command of ``bash``; empty otherwise.

    """

    title: str
    kind: ToolKind
    locations: list[ToolCallLocation]
    content: list[ToolContent]


def tool_kind(tool_name: str) -> ToolKind:
    """The ACP kind of a nestor tool (``other`` for MCP tools and the rest)."""
    return _KINDS.get(tool_name, "other")


def text_content(text: str) -> ContentToolCallContent:
    """Plain text inside a tool call's card."""
    return ContentToolCallContent(type="content", content=TextContentBlock(type="text", text=text))


def describe_call(
    tool_name: str, args: dict[str, Any], project_root: Path, *, live: bool = True
) -> ToolCallView:
    """The card of a call of ``tool_name`` with ``args`` in a project at ``project_root``.

    ``live`` is a call about to run: the file it changes is read for the diff's old side and the
    edit's line. A replayed call (``live`` False) reads nothing: the file has changed since.
    """
    path = _path_arg(args, project_root)
    kind = tool_kind(tool_name)
    locations = [ToolCallLocation(path=str(path))] if path is not None else []
    content: list[ToolContent] = []
    if tool_name == "edit" and path is not None:
        old, new = str(args.get("old_string", "")), str(args.get("new_string", ""))
        content = [FileEditToolCallContent(type="diff", path=str(path), old_text=old or None, new_text=new)]
        line = _line_of(path, old, project_root) if old and live else None
        locations = [ToolCallLocation(path=str(path), line=line)]
    elif tool_name == "write" and path is not None:
        content = [
            FileEditToolCallContent(
                type="diff",
                path=str(path),
                old_text=_current_text(path, project_root) if live else None,
                new_text=str(args.get("content", "")),
            )
        ]
    elif tool_name == "view" and path is not None:
        offset = args.get("offset")
        line = offset + 1 if isinstance(offset, int) and offset >= 0 else 1
        locations = [ToolCallLocation(path=str(path), line=line)]
    elif tool_name == "bash":
        content = [text_content(f"$ {args.get('command', '')}")]
    return ToolCallView(_title(tool_name, args, path, project_root), kind, locations, content)


def _title(tool_name: str, args: dict[str, Any], path: Path | None, project_root: Path) -> str:
    shown = _shown_path(path, project_root) if path is not None else ""
    match tool_name:
        case "view":
            title = f"Read {shown}"
        case "edit":
            title = f"Edit {shown}"
        case "write":
            title = f"Write {shown}"
        case "ls":
            title = f"List {shown or '.'}"
        case "bash":
            title = str(args.get("description") or args.get("command") or "bash")
        case "grep":
            title = f"grep {args.get('pattern', '')!r}" + (f" in {shown}" if shown else "")
        case "glob":
            title = f"glob {args.get('pattern', '')}" + (f" in {shown}" if shown else "")
        case "fetch" | "web_fetch":
            title = f"Fetch {args.get('url', '')}"
        case "agentic_fetch":
            title = f"Research {args.get('url') or args.get('prompt', '')}"
        case "web_search":
            title = f"Search the web: {args.get('query', '')}"
        case "todo_write":
            title = "Update the plan"
        case "task":
            agent_type = args.get("subagent_type") or "general"
            title = f"{agent_type} · {args.get('description', '')}".rstrip(" ·")
        case _:
            title = tool_name
    return one_line(title, _TITLE_WIDTH)


def _path_arg(args: dict[str, Any], project_root: Path) -> Path | None:
    raw = args.get("path")
    if not isinstance(raw, str) or not raw:
        return None
    candidate = Path(raw).expanduser()
    # Absolute, as the protocol wants; not resolved: the card names the path the model gave.
    return candidate if candidate.is_absolute() else project_root / candidate


def _shown_path(path: Path, project_root: Path) -> str:
    return str(path.relative_to(project_root)) if path.is_relative_to(project_root) else str(path)


def _current_text(path: Path, project_root: Path) -> str | None:
    """The file's text for a diff's old side; None when it is missing, special, too large or binary.

    Only a file inside the project is read: the model names the path, and a card must not show
    the editor a file the rules would not let it read (the tool's own permission question does).
    """
    try:
        if (
            not path.resolve().is_relative_to(project_root.resolve())
            or not path.is_file()
            or path.stat().st_size > _DIFF_READ_LIMIT
        ):
            return None
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _line_of(path: Path, needle: str, project_root: Path) -> int | None:
    """The 1-based line where ``needle`` first occurs in the file, so the editor can follow the edit."""
    text = _current_text(path, project_root)
    if text is None:
        return None
    index = text.find(needle)
    return None if index < 0 else text.count("\n", 0, index) + 1


def tool_call_start(
    acp_id: str, view: ToolCallView, args: dict[str, Any], meta: dict[str, Any] | None
) -> ToolCallStart:
    """The ``tool_call`` update that shows a call's card, running."""
    return ToolCallStart(
        session_update="tool_call",
        tool_call_id=acp_id,
        title=view.title,
        kind=view.kind,
        status="in_progress",
        locations=view.locations or None,
        content=view.content or None,
        raw_input=args,
        field_meta=meta,
    )
