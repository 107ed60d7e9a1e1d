"""The TUI's modal screens: a permission question, the session picker, a yes-or-no question.

All work from the keyboard alone: the permission dialog answers with ``y`` / ``a`` / ``n`` (Esc
denies) or its buttons, the picker with the arrows and Enter (Esc leaves it), the question with
``y`` / ``n`` (Esc is no).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, OptionList, Static
from textual.widgets.option_list import Option

from nestor.cli.formatting import suggested_rule
from nestor.core.permission import PERMISSION_CHOICES
from nestor.core.usage import format_cost, format_tokens

if TYPE_CHECKING:
    from nestor.app import Session
    from nestor.core.permission import PermissionAnswer, PermissionRequest

__all__ = ["ConfirmScreen", "PermissionScreen", "SessionPicker", "ask_yes_or_no"]


class PermissionScreen(ModalScreen["PermissionAnswer | None"]):
    """Asks whether a tool call may run; names the agent that asks and the rule that would allow it.

    A yes/no question (``choices`` without ``session``: a project's MCP server to approve) shows
    the request's target, the server's definition, instead of a rule, and answers y or n.

    Args:
        request: What the call wants to do.
        asker: Who asks, e.g. ``main agent`` or ``explore · find auth code``.
        sub_agent: The asker is a sub-agent: "for the session" then covers that agent's session.
        choices: The answers offered.

    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer('once')", "allow once"),
        Binding("a", "answer('session')", "allow for the session"),
        Binding("n", "answer('deny')", "deny"),
        Binding("escape", "answer('deny')", "deny", show=False),
    ]

    def __init__(
        self,
        request: PermissionRequest,
        asker: str,
        *,
        sub_agent: bool,
        choices: tuple[PermissionAnswer, ...] = PERMISSION_CHOICES,
    ) -> None:
        super().__init__()
        self.request = request
        self.choices = choices
        self._asker = asker
        self._sub_agent = sub_agent

    def compose(self) -> ComposeResult:
        """The question, the rule, the three answers (or the definition, yes and no)."""
        request = self.request
        outside = " (outside the project)" if request.outside_project else ""
        session = "for this agent's session" if self._sub_agent else "for this session"
        yes_no = "session" not in self.choices
        with Vertical(id="permission-dialog"):
            yield Label(Text(f"{self._asker} asks", style="bold"))
            yield Static(Text(f"{request.description}{outside}{'?' if yes_no else ''}"), id="permission-what")
            if yes_no:
                yield Static(Text(request.target, style="dim"), id="permission-rule")
            else:
                rule = suggested_rule(request)
                hint = f'to stop being asked, add to nestor.toml: [permissions] allow = ["{rule}"]'
                yield Static(Text(hint, style="dim"), id="permission-rule")
            with Horizontal(id="permission-buttons"):
                yield Button(Text("[y] yes" if yes_no else "[y] allow once"), id="once", variant="primary")
                if not yes_no:
                    yield Button(Text(f"[a] allow {session}"), id="session")
                yield Button(Text("[n] no" if yes_no else "[n] deny"), id="deny", variant="error")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """A button answers as its key does."""
        self.action_answer(event.button.id or "deny")

    def action_answer(self, answer: str) -> None:
        """Close the dialog with ``answer`` (``once``, ``session`` or ``deny``), if it is one offered."""
        choice: PermissionAnswer = (
            "once" if answer == "once" else "session" if answer == "session" else "deny"
        )
        if choice in self.choices:
            self.dismiss(choice)


class SessionPicker(ModalScreen["str | None"]):
    """The sessions of this project, newest first; Enter resumes the highlighted one, Esc leaves."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "leave", "back")]

    def __init__(self, sessions: Sequence[Session], current: str) -> None:
        super().__init__()
        self._sessions = sessions
        self._current = current

    def compose(self) -> ComposeResult:
        """The list of sessions."""
        options = [Option(self._describe(session), id=session.id) for session in self._sessions]
        with Vertical(id="session-picker"):
            yield Label(Text("resume a session (Enter) · Esc back", style="bold"))
            yield OptionList(*options, id="session-list")

    def _describe(self, session: Session) -> Text:
        line = Text(session.title or "(untitled)", style="bold" if session.id == self._current else "")
        usage = session.usage
        line.append(
            f"\n  {session.id} · {session.status} · {format_tokens(usage.total_tokens)} tok · "
            f"{format_cost(usage.cost_usd)}",
            style="dim",
        )
        return line

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        """Enter on a session resumes it."""
        self.dismiss(event.option.id)

    def action_leave(self) -> None:
        """Close the picker without choosing."""
        self.dismiss(None)


class ConfirmScreen(ModalScreen[bool]):
    """A yes-or-no question (an undo, before it writes): ``y`` or its button is yes, ``n`` or Esc no."""

    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    #confirm-dialog { width: 76; max-width: 95%; height: auto; border: thick $warning;
        background: $surface; padding: 1 2; }
    #confirm-buttons { height: auto; margin-top: 1; }
    #confirm-buttons Button { margin-right: 1; min-width: 10; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "yes"),
        Binding("n", "answer(False)", "no"),
        Binding("escape", "answer(False)", "no", show=False),
    ]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        """The question and its two answers."""
        with Vertical(id="confirm-dialog"):
            yield Static(Text(self.question, style="bold"))
            with Horizontal(id="confirm-buttons"):
                yield Button(Text("[y] yes"), id="yes", variant="warning")
                yield Button(Text("[n] no"), id="no")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """A button answers as its key does."""
        self.action_answer(event.button.id == "yes")

    def action_answer(self, answer: bool) -> None:
        """Close the dialog with the answer."""
        self.dismiss(answer)


async def ask_yes_or_no(app: App[Any], question: str) -> str:
    """Ask ``question`` in a :class:`ConfirmScreen` over ``app``; ``y`` or ``n`` (an undo's ``ask``)."""
    answered: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    def done(answer: bool | None) -> None:
        if not answered.done():
            answered.set_result("y" if answer else "n")

    app.push_screen(ConfirmScreen(question), done)
    return await answered
