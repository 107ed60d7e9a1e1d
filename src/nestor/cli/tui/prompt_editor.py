"""The prompt editor of the full-screen UI: a text area where Enter sends and Alt-Enter adds a line."""

from __future__ import annotations

from textual import events
from textual.message import Message
from textual.widgets import TextArea


class PromptEditor(TextArea):
    """The prompt: Enter sends, Alt-Enter or Ctrl-J add a line, a trailing backslash too."""

    class Submitted(Message):
        """The user sent ``text``."""

        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    async def _on_key(self, event: events.Key) -> None:
        if event.key in ("alt+enter", "ctrl+j", "shift+enter") or (
            event.key == "enter" and self.text.endswith("\\")
        ):
            event.prevent_default()
            event.stop()
            if event.key == "enter":
                self.action_delete_left()
            self.insert("\n")
            return
        if event.key == "enter":
            event.prevent_default()
            event.stop()
            text = self.text
            self.clear()
            self.post_message(self.Submitted(text))
            return
        await super()._on_key(event)
