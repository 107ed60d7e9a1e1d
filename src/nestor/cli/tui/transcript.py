"""What one agent said and did, as the conversation pane shows it: text, tool calls, notes.

Each agent of the tree has a :class:`Transcript`, filled from its events whether or not it is on
screen (no Textual here); the pane draws the selected agent's and, while it shows it, redraws only
the entries that changed (:meth:`Transcript.take_changes`).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from nestor.cli.agent_lines import background_line, todo_lines
from nestor.cli.formatting import compaction_line, format_duration, short_args
from nestor.core.events import (
    BackgroundNotice,
    Compacted,
    ErrorEvent,
    Event,
    PermissionAsked,
    PromptQueued,
    Retrying,
    TextDelta,
    TodosUpdated,
    ToolFinished,
    ToolStarted,
)

__all__ = ["Note", "TextBlock", "ToolBlock", "Transcript", "edit_diff"]

_DIFF_LINES = 40


@dataclass(slots=True)
class TextBlock:
    """Markdown the agent wrote (streamed: it grows), or a prompt the user sent."""

    text: str
    user: bool = False


@dataclass(slots=True)
class ToolBlock:
    """One tool call: its arguments, then its outcome and a preview of its result."""

    call_id: str
    name: str
    args: dict[str, Any]
    outcome: str | None = None
    preview: str = ""
    duration_s: float = 0.0

    @property
    def summary(self) -> str:
        """``● grep def login ✓ 0.2s``: the block's one-line title."""
        line = f"● {self.name} {short_args(self.args, 70)}".rstrip()
        if self.outcome is None:
            return line + " …"
        mark = "✓" if self.outcome == "success" else f"✗ {self.outcome}"
        return f"{line} {mark} {format_duration(self.duration_s)}"

    @property
    def diff(self) -> str | None:
        """The change an ``edit`` or ``write`` makes, as a unified diff cut to a screenful; else None."""
        return edit_diff(self.name, self.args)


@dataclass(slots=True)
class Note:
    """A line of the UI's own: a retry, a compaction, a denial, an error, a command's output."""

    text: str
    style: str = "dim"


Entry = TextBlock | ToolBlock | Note


@dataclass
class Transcript:
    """The entries of one agent, oldest first, and which changed since the pane last drew them."""

    entries: list[Entry] = field(default_factory=list[Entry])
    _changed: set[int] = field(default_factory=set[int])
    _tools: dict[str, int] = field(default_factory=dict[str, int])

    def add(self, entry: Entry) -> None:
        """Append ``entry``."""
        self.entries.append(entry)
        self._changed.add(len(self.entries) - 1)

    def note(self, text: str, style: str = "dim") -> None:
        """Append a :class:`Note`."""
        self.add(Note(text, style))

    def handle(self, event: Event) -> None:
        """Apply one event of this transcript's agent."""
        match event:
            case TextDelta():
                last = self.entries[-1] if self.entries else None
                if isinstance(last, TextBlock) and not last.user:
                    last.text += event.text
                    self._changed.add(len(self.entries) - 1)
                else:
                    self.add(TextBlock(event.text))
            case ToolStarted():
                self._tools[event.tool_call_id] = len(self.entries)
                self.add(ToolBlock(event.tool_call_id, event.tool_name, dict(event.args)))
            case ToolFinished():
                index = self._tools.pop(event.tool_call_id, None)
                if index is None:
                    return
                block = self.entries[index]
                assert isinstance(block, ToolBlock)
                block.outcome, block.preview, block.duration_s = (
                    event.outcome,
                    event.preview,
                    event.duration_s,
                )
                self._changed.add(index)
            case PermissionAsked() if event.decision == "deny":
                reason = f" ({event.reason})" if event.reason else ""
                self.note(f"⊘ denied {event.tool_name}: {event.target}{reason}", "red")
            case Retrying():
                self.note(
                    f"↻ retrying in {event.delay_s:.1f}s (attempt {event.attempt}): {event.reason}", "yellow"
                )
            case PromptQueued():
                self.add(TextBlock(event.prompt, user=True))
            case Compacted():
                self.note(compaction_line(event))
            case TodosUpdated():
                self.note("\n".join(todo_lines(event.todos)), "")
            case BackgroundNotice():
                self.note(background_line(event), "cyan")
            case ErrorEvent():
                self.note(f"error: {event.message}" + (f"\nhint: {event.hint}" if event.hint else ""), "red")
            case _:
                pass

    def take_changes(self) -> set[int]:
        """The indices of the entries added or changed since the last call."""
        changed, self._changed = self._changed, set()
        return changed


def edit_diff(tool_name: str, args: dict[str, Any]) -> str | None:
    """The unified diff of an ``edit`` (old → new text) or a ``write`` (the new file); else None."""
    path = str(args.get("path", ""))
    if tool_name == "edit":
        old, new = str(args.get("old_string", "")), str(args.get("new_string", ""))
    elif tool_name == "write":
        old, new = "", str(args.get("content", ""))
    else:
        return None
    lines = list(
        difflib.unified_diff(old.splitlines(), new.splitlines(), f"a/{path}", f"b/{path}", n=2, lineterm="")
    )
    if len(lines) > _DIFF_LINES:
        lines = [*lines[:_DIFF_LINES], f"… {len(lines) - _DIFF_LINES} more lines"]
    return "\n".join(lines) or None
