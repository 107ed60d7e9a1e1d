"""The TUI's own ways of running slash commands, and the REPL's lines brought into the TUI.

Both UIs have one command set, run by :class:`~nestor.cli.repl_controller.ReplController`
(``/cost``, ``/session``, ``/clear``, ``/compact``, ``/undo``, ``/rewind``, ``/fork``, ``/agents``,
``/model``, ``/sessions``, ``/resume``, ``/exit``), which prints through an
:class:`~nestor.cli.render.EventRenderer`; here its console writes into a :class:`LineSink` whose
lines the TUI shows. The TUI shows ``/sessions`` (and ``/resume`` alone) as a picker, and adds
``/theme``.
"""

from __future__ import annotations

import io

from rich.console import Console

from nestor.cli.render import EventRenderer

__all__ = ["TUI_COMMANDS", "TUI_KEYS", "LineSink", "sink_renderer"]

TUI_COMMANDS = {
    "/sessions": "pick a session of this project to resume (also /resume)",
    "/resume": "resume a session: /resume N, /resume ID, or pick one",
    "/theme": "switch between the dark and the light theme (also Ctrl-T)",
}
"""The commands the TUI runs its own way (a picker, the theme); the others are the controller's."""

TUI_KEYS = (
    "Keys: Enter sends (queued while the agent works) · Alt-Enter or Ctrl-J adds a line · Esc stops "
    "the turn · Tab moves between the prompt and the agent tree (Shift-Tab: the tool calls) · in the "
    "tree: Enter shows that agent's transcript, x stops it and its sub-agents, u undoes their "
    "changes · Ctrl-T theme · "
    "Ctrl-D exits · at a permission question: y once, a for the session, n deny"
)


class LineSink(io.StringIO):
    """A file for a Rich console: whole lines are taken out with :meth:`take`."""

    def take(self) -> list[str]:
        """The complete lines written since the last call."""
        text = self.getvalue()
        cut = text.rfind("\n") + 1
        if not cut:
            return []
        self.seek(0)
        self.truncate()
        self.write(text[cut:])
        return [line.rstrip() for line in text[:cut].splitlines()]


def sink_renderer(width: int = 100) -> tuple[EventRenderer, LineSink]:
    """An :class:`EventRenderer` printing plain lines into a new :class:`LineSink`."""
    sink = LineSink()
    console = Console(file=sink, width=width, force_terminal=False, no_color=True, highlight=False)
    return EventRenderer(console), sink
