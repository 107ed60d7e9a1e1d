"""The TUI's widgets: the conversation pane, the agent tree, the todo panel and the status bar.

Each draws from a model the app feeds with events (:mod:`nestor.cli.tui.live_tree`,
:mod:`nestor.cli.tui.transcript`) and is redrawn by the app's tick, never per event.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import ClassVar

from rich.cells import cell_len, set_cell_size
from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.segment import Segment
from rich.style import Style
from rich.syntax import Syntax
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Markdown, Static

from nestor.cli.agent_lines import todo_lines
from nestor.cli.tui.live_tree import LiveAgent, LiveTree
from nestor.cli.tui.transcript import Note, TextBlock, ToolBlock, Transcript

__all__ = ["AgentTreePanel", "ConversationPane", "StatusBar", "TodoPanel"]

_STATE_STYLES = {
    "idle": "dim",
    "running": "bold",
    "waiting": "bold yellow",
    "done": "green",
    "failed": "red",
    "cancelled": "yellow",
    "stopped": "yellow",
}


class ConversationPane(VerticalScroll):
    """One agent's transcript: Markdown text (streamed), tool calls as collapsible blocks, notes.

    It follows its end as a terminal does: once its content overflows it is anchored (Textual's
    ``anchor``), so it stays at the end at every layout, also one that settles after the content
    grew (its scrollbar comes and the lines wrap again), until the user scrolls up; scrolling back
    to the end, or another agent shown, follows again. Content that fits is not anchored: an
    anchored pane would draw it at the bottom.
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.transcript = Transcript()
        self._widgets: list[Widget] = []
        self._shown_text: list[int] = []
        # show() and sync() run from different tasks (a dialog's callback, the tick's timer): one
        # drawing while the other awaits Textual would draw an entry twice or into gone widgets.
        self._drawing = asyncio.Lock()

    def _follow(self) -> None:
        """Anchor the pane when its content overflows it, and let go when it fits again (laid out)."""
        overflowing = self.max_scroll_y > 0
        if overflowing != self.is_anchored:
            self.anchor(overflowing)

    async def show(self, transcript: Transcript) -> None:
        """Draw ``transcript`` from its start (another agent was selected)."""
        async with self._drawing:
            self.transcript = transcript
            transcript.take_changes()
            self.anchor(False)
            await self.remove_children()
            self._widgets, self._shown_text = [], []
            await self._append(range(len(transcript.entries)))
            self.scroll_end(animate=False)
            self.call_after_refresh(self._follow)

    async def sync(self) -> None:
        """Draw what changed in the transcript since the last call."""
        async with self._drawing:
            self._follow()  # the layout of the last changes has settled by now
            changed = self.transcript.take_changes()
            if not changed:
                return
            new = sorted(index for index in changed if index >= len(self._widgets))
            for index in sorted(changed - set(new)):
                await self._update(index)
            await self._append(new)
            self.call_after_refresh(self._follow)

    async def _append(self, indices: Sequence[int] | range) -> None:
        widgets: list[Widget] = []
        for index in indices:
            entry = self.transcript.entries[index]
            widget = _entry_widget(entry)
            self._widgets.append(widget)
            self._shown_text.append(len(entry.text) if isinstance(entry, TextBlock) else 0)
            widgets.append(widget)
        if widgets:
            await self.mount_all(widgets)

    async def _update(self, index: int) -> None:
        """Redraw one entry (text streamed, a call ended)."""
        entry, widget = self.transcript.entries[index], self._widgets[index]
        if isinstance(entry, TextBlock) and isinstance(widget, Markdown):
            added = entry.text[self._shown_text[index] :]
            self._shown_text[index] = len(entry.text)
            if added:
                await widget.append(added)
        elif isinstance(entry, ToolBlock) and isinstance(widget, ToolCallView):
            widget.show(entry)


def _entry_widget(entry: TextBlock | ToolBlock | Note) -> Widget:
    if isinstance(entry, TextBlock):
        if entry.user:
            return Static(Text("› " + entry.text), classes="user-prompt")
        return Markdown(entry.text, classes="assistant-text")
    if isinstance(entry, ToolBlock):
        diff = entry.diff is not None
        return ToolCallView(entry, expanded=diff)
    return Static(Text(entry.text, style=entry.style), classes="note")


class ToolCallView(Widget, can_focus=True):
    """A tool call as a collapsible block: its one-line summary, and when expanded its result (or diff).

    One widget that draws itself (not a Collapsible of several): a finished call redraws a line,
    and only expanding or collapsing it asks for a new layout. Enter or a click toggles it.
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("enter,space", "toggle_result", "expand", show=False)]

    def __init__(self, block: ToolBlock, *, expanded: bool) -> None:
        super().__init__(classes="tool-call")
        self._block = block
        self._summary = block.summary
        self.expanded = expanded
        # Collapsed, it is one line: no need to render it to measure it at each layout.
        self.styles.height = "auto" if expanded else 1

    def show(self, block: ToolBlock) -> None:
        """Draw ``block`` as it is now (its call ended)."""
        self._block, summary = block, block.summary
        changed, self._summary = summary != self._summary, summary
        if self.expanded:
            self.refresh(layout=True)  # the result's height is new
        elif changed:
            self.refresh()

    def action_toggle_result(self) -> None:
        """Expand or collapse the result."""
        self.expanded = not self.expanded
        self.styles.height = "auto" if self.expanded else 1
        self.refresh(layout=True)

    def on_click(self) -> None:
        """A click toggles it too."""
        self.action_toggle_result()

    def render(self) -> RenderableType:
        """``▶ ● grep def login ✓ 0.2s``, and under ``▼`` the result."""
        title = Text(("▼ " if self.expanded else "▶ ") + self._summary, no_wrap=True, overflow="ellipsis")
        if not self.expanded:
            return title
        return Group(title, Padding(_tool_body(self._block), (0, 0, 0, 2)))


def _tool_body(entry: ToolBlock) -> Text | Syntax:
    diff = entry.diff
    if diff is not None:
        return Syntax(diff, "diff", theme="ansi_dark", word_wrap=True)
    if entry.outcome is None:
        return Text("running…", style="dim")
    return Text(entry.preview or "(no output)", style="" if entry.outcome == "success" else "red")


class AgentTreePanel(ScrollView, can_focus=True):
    """Every agent of the session under its parent: two lines each, a mark, its task, its counters.

    Drawn line by line (Textual's line API) from strips cached by their text: a redraw renders only
    the lines that changed and never asks for a new layout unless agents were added, so redrawing
    twenty running agents a few times a second costs the agents little. Up and Down move the
    highlight; Enter posts :class:`AgentTreePanel.Selected`; Tab goes back to the prompt (the
    app's ``focus_prompt`` action).
    """

    BORDER_TITLE = "agents"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "move(-1)", "previous agent", show=False),
        Binding("down", "move(1)", "next agent", show=False),
        Binding("home", "move(-1000000)", "first agent", show=False),
        Binding("end", "move(1000000)", "last agent", show=False),
        Binding("enter", "select", "show its transcript", show=False),
        # Tab moves between the prompt and the tree: not on through the transcript's tool calls.
        Binding("tab", "app.focus_prompt", "back to the prompt", show=False),
    ]

    class Selected(Message):
        """Enter on an agent: show its transcript."""

        def __init__(self, agent_id: str) -> None:
            super().__init__()
            self.agent_id = agent_id

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.agent_ids: list[str] = []
        self.highlighted = 0
        self._lines: list[Line] = []
        self._strips: dict[tuple[Line, int, bool, Style], Strip] = {}
        self._frame: tuple[Style, int, bool, int] = (Style(), 0, False, 0)

    @property
    def selected_agent(self) -> str | None:
        """The highlighted agent's id."""
        return self.agent_ids[self.highlighted] if self.agent_ids else None

    def highlight(self, agent_id: str) -> None:
        """Highlight ``agent_id`` (and scroll to it)."""
        if agent_id in self.agent_ids:
            self.highlighted = self.agent_ids.index(agent_id)
            self.scroll_to(
                y=max(2 * self.highlighted - self.size.height + 2, 0) if self.size.height else 0,
                animate=False,
            )
            self.refresh()

    def redraw(self, tree: LiveTree, now: float) -> None:
        """Draw ``tree`` as of ``now``, keeping the highlighted agent highlighted."""
        selected = self.selected_agent
        agents = tree.ordered()
        ids = [agent.agent_id for agent in agents]
        self._lines = [line for agent in agents for line in _agent_lines(agent, tree, now)]
        if ids != self.agent_ids:
            self.agent_ids = ids
            self.highlighted = ids.index(selected) if selected in ids else 0
            self._strips.clear()
            # A new virtual size means a new layout of the whole screen: only when it must scroll,
            # and then in steps of ten agents, not at each agent that starts.
            needed = len(self._lines)
            height = self.size.height if needed <= self.size.height else -(-needed // _GROWTH) * _GROWTH
            if height != self.virtual_size.height or self.size.width != self.virtual_size.width:
                self.virtual_size = Size(self.size.width, height)
        self.refresh()

    def render_lines(self, crop: Region) -> list[Strip]:
        """The lines in ``crop``.

        What each line needs of the widget (its style above all, costly to work out) is read once
        per frame here rather than once per line.
        """
        self._frame = (self.rich_style, self.size.width, self.has_focus, int(self.scroll_y))
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        """One line of the tree, its agent highlighted when the cursor is on it."""
        # The theme's colours are in the key: a strip drawn in the other theme is not reused.
        style, width, focused, scrolled = self._frame
        index = y + scrolled
        if index >= len(self._lines) or width <= 0:
            return Strip.blank(width, style)
        highlighted = focused and index // 2 == self.highlighted
        line = self._lines[index]
        key = (line, width, highlighted, style)
        strip = self._strips.get(key)
        if strip is None:
            if len(self._strips) > 4 * len(self._lines) + 16:
                self._strips.clear()  # the spinners and clocks leave old lines behind
            strip = self._strips[key] = Strip(_fitted(line, width, style, highlighted), width)
        return strip

    def action_move(self, by: int) -> None:
        """Move the highlight by ``by`` agents."""
        if self.agent_ids:
            self.highlight(self.agent_ids[max(0, min(self.highlighted + by, len(self.agent_ids) - 1))])

    def action_select(self) -> None:
        """Show the highlighted agent's transcript."""
        if self.selected_agent is not None:
            self.post_message(self.Selected(self.selected_agent))

    def on_focus(self) -> None:
        """The highlight shows only while the tree has the focus."""
        self.refresh()

    def on_blur(self) -> None:
        """The highlight shows only while the tree has the focus."""
        self.refresh()


_GROWTH = 20  # lines: the tree's scrollable height grows by ten agents at a time

Line = tuple[tuple[str, str], ...]
"""A line of the tree: pieces of text and the name of each one's style (a key of ``_STYLES``)."""

_HIGHLIGHT = Style(reverse=True)
_STYLES = {
    "": Style(),
    "bold": Style(bold=True),
    "dim": Style(dim=True),
    "cyan": Style(color="cyan"),
    **{style: Style.parse(style) for style in _STATE_STYLES.values()},
}


def _fitted(line: Line, width: int, base: Style, highlighted: bool) -> list[Segment]:
    """The segments of ``line`` in exactly ``width`` cells: cut with an ellipsis, or padded.

    Built here rather than by cropping strips: each strip Textual makes costs caches of its own.
    """
    if highlighted:
        base = base + _HIGHLIGHT
    segments: list[Segment] = []
    room = width
    for text, style in line:
        length = cell_len(text)
        if length >= room and (length > room or len(segments) < len(line) - 1):
            cut = set_cell_size(text, max(room - 1, 0)) + "…" if room else ""
            segments.append(Segment(cut, base + _STYLES[style]))
            return segments
        segments.append(Segment(text, base + _STYLES[style]))
        room -= length
    segments.append(Segment(" " * room, base))
    return segments


def _agent_lines(agent: LiveAgent, tree: LiveTree, now: float) -> tuple[Line, Line]:
    """Its two lines: the mark and the task; the counters, under it (plain data, cheap to compare)."""
    indent = "  " * agent.depth
    title: list[tuple[str, str]] = [(indent, ""), (agent.mark(now) + " ", _STATE_STYLES[agent.state])]
    if agent.background:
        title.append(("⇢ ", "cyan"))
    title.append((agent.title(), "bold" if agent.agent_id == tree.main_id else ""))
    counters = ((indent + "  ", ""), (agent.counters(now), "dim"))
    return tuple(title), counters


class TodoPanel(Static):
    """The main agent's todo list, as the REPL prints it; hidden while there is none."""

    BORDER_TITLE = "todos"

    def show_todos(self, todos: Sequence[Mapping[str, str]]) -> None:
        """Show ``todos`` (hide the panel when the list is empty)."""
        self.display = bool(todos)
        self.update(Text("\n".join(todo_lines(todos)[1:])) if todos else "")


class StatusBar(Widget):
    """One line: the model, the context used, the session's cost, and what the keys do now.

    Redrawn only when its text changes, and never asking for a new layout (its height is one line).
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._line = Text()

    def show(self, *, model: str, context: str, cost: str, activity: str) -> None:
        """Draw the line."""
        line = Text(no_wrap=True, overflow="ellipsis")
        line.append(model, style="bold")
        line.append(f" · context {context} · {cost}")
        if activity:
            line.append(" · " + activity, style="dim")
        if line.markup != self._line.markup:
            self._line = line
            self.refresh()

    def render(self) -> Text:
        """The line."""
        return self._line
