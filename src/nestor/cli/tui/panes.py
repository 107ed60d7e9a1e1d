"""The TUI's widgets: the conversation pane, the agent tree, the todo panel and the status bar.

Each draws from a model the app feeds with events (:mod:`nestor.cli.tui.live_tree`,
:mod:`nestor.cli.tui.transcript`) and is redrawn by the app's tick, never per event.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.console import Group
from rich.syntax import Syntax
from rich.text import Text
from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.widgets import Collapsible, Markdown, OptionList, Static
from textual.widgets.option_list import Option

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
    """One agent's transcript: Markdown text (streamed), tool calls as collapsible blocks, notes."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.transcript = Transcript()
        self._widgets: list[Widget] = []
        self._shown_text: list[int] = []

    async def show(self, transcript: Transcript) -> None:
        """Draw ``transcript`` from its start (another agent was selected)."""
        self.transcript = transcript
        transcript.take_changes()
        await self.remove_children()
        self._widgets, self._shown_text = [], []
        await self._append(range(len(transcript.entries)))
        self.scroll_end(animate=False)

    async def sync(self) -> None:
        """Draw what changed in the transcript since the last call."""
        changed = self.transcript.take_changes()
        if not changed:
            return
        at_end = self.scroll_offset.y >= self.max_scroll_y - 1
        new = sorted(index for index in changed if index >= len(self._widgets))
        for index in sorted(changed - set(new)):
            await self._update(index)
        await self._append(new)
        if at_end:
            self.scroll_end(animate=False)

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
        entry, widget = self.transcript.entries[index], self._widgets[index]
        if isinstance(entry, TextBlock) and isinstance(widget, Markdown):
            added = entry.text[self._shown_text[index] :]
            self._shown_text[index] = len(entry.text)
            if added:
                await widget.append(added)
        elif isinstance(entry, ToolBlock) and isinstance(widget, Collapsible):
            widget.title = entry.summary
            body = widget.query_one(".tool-body", Static)
            body.update(_tool_body(entry))


def _entry_widget(entry: TextBlock | ToolBlock | Note) -> Widget:
    if isinstance(entry, TextBlock):
        if entry.user:
            return Static(Text("› " + entry.text), classes="user-prompt")
        return Markdown(entry.text, classes="assistant-text")
    if isinstance(entry, ToolBlock):
        diff = entry.diff is not None
        return Collapsible(
            Static(_tool_body(entry), classes="tool-body"),
            title=entry.summary,
            collapsed=not diff,
            classes="tool-call",
        )
    return Static(Text(entry.text, style=entry.style), classes="note")


def _tool_body(entry: ToolBlock) -> Text | Syntax:
    diff = entry.diff
    if diff is not None:
        return Syntax(diff, "diff", theme="ansi_dark", word_wrap=True)
    if entry.outcome is None:
        return Text("running…", style="dim")
    return Text(entry.preview or "(no output)", style="" if entry.outcome == "success" else "red")


class AgentTreePanel(OptionList):
    """Every agent of the session under its parent: two lines each, a mark, its task, its counters."""

    BORDER_TITLE = "agents"

    def redraw(self, tree: LiveTree, now: float) -> None:
        """Draw ``tree`` as of ``now``, keeping the highlighted agent highlighted."""
        highlighted = self.highlighted_option.id if self.highlighted_option is not None else None
        agents = tree.ordered()
        ids = [option.id for option in self.options]
        if ids != [agent.agent_id for agent in agents]:
            self.set_options(Option(_agent_prompt(agent, tree, now), id=agent.agent_id) for agent in agents)
            if highlighted in tree.agents:
                self.highlighted = [agent.agent_id for agent in agents].index(highlighted)
            return
        for index, agent in enumerate(agents):
            self.replace_option_prompt_at_index(index, _agent_prompt(agent, tree, now))

    @property
    def selected_agent(self) -> str | None:
        """The highlighted agent's id."""
        option = self.highlighted_option
        return option.id if option is not None else None


def _agent_prompt(agent: LiveAgent, tree: LiveTree, now: float) -> Group:
    """Two lines, each cut with an ellipsis rather than wrapped: the panel is narrow at 80 columns."""
    indent = "  " * agent.depth
    title = Text(indent, no_wrap=True, overflow="ellipsis")
    title.append(agent.mark(now) + " ", style=_STATE_STYLES[agent.state])
    if agent.background:
        title.append("⇢ ", style="cyan")
    title.append(agent.title(), style="bold" if agent.agent_id == tree.main_id else "")
    counters = Text(indent + "  ", no_wrap=True, overflow="ellipsis")
    counters.append(agent.counters(now), style="dim")
    return Group(title, counters)


class TodoPanel(Static):
    """The main agent's todo list, as the REPL prints it; hidden while there is none."""

    BORDER_TITLE = "todos"

    def show_todos(self, todos: Sequence[Mapping[str, str]]) -> None:
        """Show ``todos`` (hide the panel when the list is empty)."""
        self.display = bool(todos)
        self.update(Text("\n".join(todo_lines(todos)[1:])) if todos else "")


class StatusBar(Static):
    """One line: the model, the context used, the session's cost, and what the keys do now."""

    def show(self, *, model: str, context: str, cost: str, activity: str) -> None:
        """Draw the line."""
        line = Text()
        line.append(model, style="bold")
        line.append(f" · context {context} · {cost}")
        if activity:
            line.append(" · " + activity, style="dim")
        self.update(line)
