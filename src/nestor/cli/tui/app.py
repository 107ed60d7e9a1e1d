"""The full-screen terminal UI: the conversation, the prompt editor, the live agent tree, the status bar.

Events reach the app through a bus handler that only queues them; a tick (every ``tick_s``, 80 ms
by default) applies what queued to the models (:class:`LiveTree`, one :class:`Transcript` per
agent) and redraws what changed, so twenty sub-agents streaming at once cost the agents a redraw
per tick, not one per event. While several agents run, the transcript on screen is redrawn with
the tree (every ``redraw_s``) rather than at each tick, and the prompt's cursor does not blink:
every frame drawn is time the agents wait for. Prompts and the REPL's slash commands go through the same
:class:`~nestor.cli.repl_controller.ReplController` as the line REPL; permission questions become
dialogs answered through the conversation by their id.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Label

from nestor.cli.formatting import turn_summary
from nestor.cli.tui.commands import TUI_COMMANDS, TUI_KEYS, LineSink
from nestor.cli.tui.dialogs import PermissionScreen, SessionPicker, ask_yes_or_no
from nestor.cli.tui.live_tree import LiveTree
from nestor.cli.tui.panes import AgentTreePanel, ConversationPane, StatusBar, TodoPanel
from nestor.cli.tui.prompt_editor import PromptEditor
from nestor.cli.tui.stored import SHOWN_MESSAGES, stored_transcript
from nestor.cli.tui.transcript import TextBlock, Transcript
from nestor.core.events import (
    AgentFinished,
    Event,
    PermissionRequested,
    PermissionWithdrawn,
    SessionTitled,
    TodosUpdated,
)
from nestor.core.usage import format_cost

if TYPE_CHECKING:
    from nestor.app import App as NestorApp
    from nestor.app import Conversation
    from nestor.cli.repl_controller import ReplController
    from nestor.core.permission import PermissionAnswer

__all__ = ["NestorTui", "PromptEditor"]

_CSS = """
#body { height: 1fr; }
#conversation-column { width: 1fr; }
#shown-agent { height: 1; padding: 0 1; background: $boost; }
ConversationPane { height: 1fr; padding: 0 1; }
ConversationPane > Markdown { margin: 0; padding: 0; }
ConversationPane .user-prompt { color: $accent; text-style: bold; margin: 1 0 0 0; }
ToolCallView { height: auto; padding: 0 0 0 1; }
ToolCallView:focus { background: $boost; }
#side { width: 42%; max-width: 60; min-width: 30; }
AgentTreePanel { height: 1fr; border: round $primary-darken-2; padding: 0; }
AgentTreePanel:focus { border: round $accent; }
TodoPanel { height: auto; max-height: 10; border: round $primary-darken-2; }
PromptEditor { height: auto; min-height: 3; max-height: 8; border: round $primary-darken-2; }
PromptEditor:focus { border: round $accent; }
StatusBar { height: 1; padding: 0 1; background: $panel; }
#permission-dialog, #session-picker { width: 76; max-width: 95%; height: auto; max-height: 90%;
    border: thick $warning; background: $surface; padding: 1 2; }
#session-picker { border: thick $primary; }
#session-list { height: auto; max-height: 16; }
#permission-what { margin: 1 0; text-style: bold; }
#permission-buttons { height: auto; margin-top: 1; }
#permission-buttons Button { margin-right: 1; min-width: 10; }
PermissionScreen, SessionPicker { align: center middle; }
"""


class NestorTui(App[int]):
    """The TUI over one conversation (and those ``/clear`` and ``/resume`` open after it).

    Args:
        nestor: The app: sessions for the picker, events to subscribe to.
        controller: Sends prompts, runs the REPL's commands; already :meth:`~ReplController.open`.
        lines: Where the controller's renderer prints; its lines become notes of the main transcript.
        clock: The time (tests pass a fixed one, so elapsed times and spinners are drawn the same).
        tick_s: How often queued events are applied, a permission question shown and, while at
            most one agent runs, the transcript on screen redrawn.
        redraw_s: How often, at most, the agent tree and the status bar are redrawn (its spinners
            turn at that pace), and the transcript on screen while several agents run.

    """

    CSS = _CSS
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "stop_turn", "stop the turn", show=False),
        Binding("ctrl+c", "interrupt", "stop / exit", show=False, priority=True),
        Binding("ctrl+d", "quit", "exit", show=False, priority=True),
        Binding("ctrl+t", "toggle_theme", "theme", show=False),
    ]

    def __init__(
        self,
        nestor: NestorApp,
        controller: ReplController,
        lines: LineSink,
        *,
        clock: Callable[[], float] = time.time,
        tick_s: float = 0.08,
        redraw_s: float = 0.5,
    ) -> None:
        super().__init__()
        self.nestor = nestor
        self.controller = controller
        self._lines = lines
        self._clock = clock
        self._tick_s = tick_s
        self._pending: list[Event] = []
        self._questions: list[PermissionRequested] = []
        self._asking: PermissionScreen | None = None
        self._asking_id = ""
        self._redraw_s = redraw_s
        self._drawn_at = 0.0
        self._drawn_version = -1
        self._servers_shown: list[str] = []  # the language servers the status bar says are starting
        self._exit_armed = False
        self._was_busy, self._blink = False, True  # the editor's cursor blinks when idle
        self._reset(controller.conversation)
        controller.undo.ask = lambda question: ask_yes_or_no(self, question)

    # -- layout -----------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        """The conversation and the prompt on the left, the agent tree and todos on the right."""
        # Kept, not queried: while a dialog is open, queries look at the dialog's screen.
        self.shown_agent = Label("", id="shown-agent")
        self.pane = ConversationPane(id="conversation")
        self.editor = PromptEditor(
            id="prompt", soft_wrap=True, show_line_numbers=False, placeholder="a prompt, or /help"
        )
        self.agent_panel = AgentTreePanel(id="agents")
        self.todos = TodoPanel(id="todos")
        self.status_bar = StatusBar(id="status")
        with Horizontal(id="body"):
            with Vertical(id="conversation-column"):
                yield self.shown_agent
                yield self.pane
                yield self.editor
            with Vertical(id="side"):
                yield self.agent_panel
                yield self.todos
        yield self.status_bar

    async def on_mount(self) -> None:
        """Subscribe to the bus, show the main transcript, start the tick."""
        self.theme = "textual-dark"
        self._unsubscribe = self.nestor.subscribe(self._pending.append)
        self.todos.display = False
        await self.show_agent(self.live_tree.main_id)
        self.set_interval(self._tick_s, self._tick, name="redraw")
        await self._tick()
        self.editor.focus()

    def on_unmount(self) -> None:
        """Stop receiving events."""
        self._unsubscribe()

    # -- the tick ---------------------------------------------------------------------------

    async def _tick(self) -> None:
        await self._follow_conversation()  # after /undo, /rewind, /fork
        queued, self._pending[:] = list(self._pending), []
        for event in queued:
            self._apply(event)
        for line in self._lines.take():
            self._transcript(self.live_tree.main_id).note(line, _line_style(line))
        self._ask_next()
        busy = self.controller.busy
        if busy != self._was_busy:  # each blink is a frame drawn: none while agents work
            self._was_busy, self._blink = busy, (self.editor.cursor_blink if busy else self._blink)
            self.editor.cursor_blink = not busy and self._blink
        # The tree and the status bar at most every redraw_s: with twenty agents at work something
        # changes at every tick, and each redraw is time the agents wait for. With several agents
        # at work the transcript too, in the same frame; one agent's text streams at every tick.
        running = self.live_tree.running()
        crowded = len(running) > 1
        if not crowded:
            await self.pane.sync()
        moment = time.monotonic()
        starting = self.nestor.language_servers_starting()
        changed = (
            self.live_tree.version != self._drawn_version or bool(running) or starting != self._servers_shown
        )
        if changed and moment - self._drawn_at >= self._redraw_s:
            self._servers_shown = starting
            self._drawn_version, self._drawn_at = self.live_tree.version, moment
            if crowded:
                await self.pane.sync()
            self.agent_panel.redraw(self.live_tree, self._clock())
            self._draw_status()

    async def redraw_now(self) -> None:
        """Apply what queued and redraw the transcript, the tree and the status bar now, not at their pace."""
        self._drawn_version, self._drawn_at = -1, 0.0
        await self._tick()

    def _apply(self, event: Event) -> None:
        self.live_tree.handle(event)
        agent_id = event.agent_id
        if agent_id not in self.live_tree.agents:
            return  # an agent of an earlier conversation (/clear), or a title being written
        transcript = self._transcript(agent_id)
        transcript.handle(event)
        match event:
            case PermissionRequested():
                self._questions.append(event)
            case PermissionWithdrawn():
                self._withdraw(event.request_id)
            case TodosUpdated() if agent_id == self.live_tree.main_id:
                self.todos.show_todos(event.todos)
            case SessionTitled():
                self._title = event.title
                self._drawn_version = -1  # the status bar shows it
            case AgentFinished():
                if event.stop_reason == "cancelled":
                    transcript.note("⏹ interrupted; the conversation so far is kept", "yellow")
                transcript.note(turn_summary(event))
            case _:
                pass

    def _draw_status(self) -> None:
        conversation = self.controller.conversation
        tokens, window = conversation.context_use()
        context = f"{tokens / window:.0%}" if window else "?"
        # The stored session's: its earlier prompts (resumed) and every sub-agent's, rolled up as stored.
        cost = format_cost(conversation.session().usage.cost_usd)
        if self._asking is not None:
            keys = "y / a / n" if "session" in self._asking.choices else "y / n"
            activity = f"answer the question: {keys}"
        elif self.controller.busy:
            activity = "working · Esc stops · Enter queues"
        else:
            activity = "Enter sends · /help"
        if self._servers_shown:
            activity = f"starting {', '.join(self._servers_shown)} (language server) · {activity}"
        title = f" · {self._title}" if self._title else ""
        self.status_bar.show(model=conversation.model + title, context=context, cost=cost, activity=activity)

    # -- permission questions ---------------------------------------------------------------

    def _ask_next(self) -> None:
        if self._asking is not None or not self._questions:
            return
        event = self._questions.pop(0)
        agent = self.live_tree.get(event.agent_id)
        sub_agent = event.agent_id != self.live_tree.main_id
        asker = "the main agent" if not sub_agent or agent is None else agent.title()
        screen = PermissionScreen(event.request, asker, sub_agent=sub_agent, choices=event.choices)
        self._asking, self._asking_id = screen, event.request_id

        def answered(answer: PermissionAnswer | None) -> None:
            self._asking = None
            if answer is None:
                return  # withdrawn: the run that asked was stopped
            self.controller.conversation.answer(event.request_id, answer)
            self.live_tree.answered(event.request_id)
            words = {"once": "allowed once", "session": "allowed for the session", "deny": "denied"}[answer]
            if "session" not in event.choices:
                words = "yes" if answer == "once" else "no"
            self._transcript(event.agent_id).note(f"{words}: {event.request.description}", "dim")

        self.push_screen(screen, answered)

    def _withdraw(self, request_id: str) -> None:
        self._questions = [q for q in self._questions if q.request_id != request_id]
        if self._asking is not None and self._asking_id == request_id:
            self._asking.dismiss(None)

    # -- input ------------------------------------------------------------------------------

    async def on_prompt_editor_submitted(self, message: PromptEditor.Submitted) -> None:
        """Send the prompt, or run the slash command."""
        text = message.text.strip()
        if not text:
            return
        self._exit_armed = False
        name = text.split(maxsplit=1)[0].lower()
        argument = text.split(maxsplit=1)[1] if len(text.split(maxsplit=1)) > 1 else ""
        main = self._transcript(self.live_tree.main_id)
        if name in ("/help", "/theme", "/sessions") or (name == "/resume" and not argument):
            await self._command(name, main)
            return
        if not name.startswith("/") and not self.controller.busy:
            main.add(TextBlock(text, user=True))  # a queued prompt is shown by its PromptQueued event
        before = self.controller.conversation
        if not await self.controller.handle_line(text):
            self.exit(0)
            return
        if self.controller.conversation is not before:  # /clear, /resume
            await self._follow_conversation()
        if self.shown_agent_id != self.live_tree.main_id:
            await self.show_agent(self.live_tree.main_id)

    async def _command(self, name: str, main: Transcript) -> None:
        if name == "/help":
            commands = {**self.controller.command_help(), **TUI_COMMANDS}
            main.note("\n".join(f"{command:<10} {text}" for command, text in commands.items()), "")
            main.note(TUI_KEYS)
        elif name == "/theme":
            self.action_toggle_theme()
        else:
            sessions = self.controller.sessions.listing()
            self.push_screen(SessionPicker(sessions, self.controller.conversation.session_id), self._picked)

    async def _picked(self, session_id: str | None) -> None:
        if session_id is not None and session_id != self.controller.conversation.session_id:
            await self.controller.sessions.resume(session_id)
            await self._follow_conversation()

    async def _follow_conversation(self) -> None:
        """Show the controller's conversation when a command changed it (/clear, /resume)."""
        if self.controller.conversation is not self._shown:
            self._reset(self.controller.conversation)
            await self.show_agent(self.live_tree.main_id)

    async def on_agent_tree_panel_selected(self, message: AgentTreePanel.Selected) -> None:
        """Enter on an agent of the tree shows its transcript."""
        await self.show_agent(message.agent_id)

    def on_key(self, event: events.Key) -> None:
        """In the tree: ``x`` (or Delete) stops the highlighted agent and its descendants, ``u`` undoes it."""
        agent_id = self.agent_panel.selected_agent if self.agent_panel.has_focus else None
        if agent_id is not None and event.key in ("x", "delete", "u"):
            event.stop()
            if event.key != "u":
                self.cancel_agent(agent_id)
            elif agent_id == self.live_tree.main_id:
                self._transcript(agent_id).note("the main agent's changes: use /undo or /rewind", "yellow")
            else:
                self.controller.start_undo(self.controller.undo.undo_agent(agent_id))

    def cancel_agent(self, agent_id: str) -> bool:
        """Stop one agent and its descendants; the others go on."""
        stopped = self.controller.conversation.cancel_agent(agent_id)
        agent = self.live_tree.get(agent_id)
        if stopped and agent is not None:
            self._transcript(agent_id).note(f"⊘ stopping {agent.title()} and its sub-agents", "yellow")
        return stopped

    def action_stop_turn(self) -> None:
        """Esc: stop the main agent's turn, as in the REPL."""
        self.controller.cancel()

    def action_interrupt(self) -> None:
        """Ctrl-C: stop the turn; when idle, twice in a row exits."""
        if self.controller.busy:
            self.controller.cancel()
        elif self._exit_armed:
            self.exit(0)
        else:
            self._exit_armed = True
            self.notify("press Ctrl-C again to exit", timeout=2)

    def action_focus_prompt(self) -> None:
        """Put the focus back in the prompt (Tab in the agent tree)."""
        self.editor.focus()

    def action_toggle_theme(self) -> None:
        """Switch between the dark and the light theme."""
        self.theme = "textual-light" if self.theme == "textual-dark" else "textual-dark"

    # -- helpers ----------------------------------------------------------------------------

    def leftover_lines(self) -> list[str]:
        """The lines printed after the TUI closed (the "resume this session" hint), for the terminal."""
        return self._lines.take()

    def _reset(self, conversation: Conversation) -> None:
        self._shown = conversation
        main_id = conversation.session_id
        self.live_tree = LiveTree(main_id, conversation.is_background, self._clock)
        self.transcripts: dict[str, Transcript] = {main_id: Transcript()}
        stored = conversation.message_count
        if stored:  # a resumed session: its history and its usage so far
            earlier = max(stored - SHOWN_MESSAGES, 0)
            messages = self.nestor.messages.list(main_id, since=earlier)
            self.transcripts[main_id], tools = stored_transcript(messages, earlier)
            self.live_tree.resumed(tools, conversation.session().usage)
        self.shown_agent_id = ""
        self._title = conversation.session().title
        self._drawn_version = -1

    def _transcript(self, agent_id: str) -> Transcript:
        return self.transcripts.setdefault(agent_id, Transcript())

    async def show_agent(self, agent_id: str) -> None:
        """Show the transcript of ``agent_id`` in the conversation pane (the main agent's by default)."""
        self.shown_agent_id = agent_id
        agent = self.live_tree.get(agent_id)
        label = "main agent" if agent_id == self.live_tree.main_id or agent is None else agent.title()
        self.shown_agent.update(Text(label, style="bold"))
        await self.pane.show(self._transcript(agent_id))


def _line_style(line: str) -> str:
    if line.startswith("error:"):
        return "red"
    return "dim" if line.startswith(("hint:", "resume this session")) else ""
