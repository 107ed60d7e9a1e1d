"""The TUI's slash commands beyond the REPL's, and the REPL's own lines brought into the TUI.

The REPL's commands (``/cost``, ``/session``, ``/clear``, ``/compact``, ``/undo``, ``/rewind``,
``/fork``, ``/exit``) run in its
:class:`~nestor.cli.repl_controller.ReplController`, which prints through an
:class:`~nestor.cli.render.EventRenderer`; here its console writes into a :class:`LineSink` whose
lines the TUI shows. ``/agents`` and ``/model`` run the ``nestor agents`` and ``nestor models``
commands and show what they print.
"""

from __future__ import annotations

import contextlib
import io
import shlex
from collections.abc import Callable

from rich.console import Console

from nestor.cli.options import CommonOptions
from nestor.cli.render import EventRenderer
from nestor.core.errors import NestorError

__all__ = ["TUI_COMMANDS", "TUI_KEYS", "LineSink", "agents_command", "models_text", "sink_renderer"]

TUI_COMMANDS = {
    "/agents": "list the agents; /agents show NAME; /agents create NAME --description ... --prompt ...",
    "/model": "the model of each role, and how to change it",
    "/sessions": "pick a session of this project to resume (also /resume)",
    "/resume": "resume a session: /resume ID, or pick one",
    "/theme": "switch between the dark and the light theme (also Ctrl-T)",
}

TUI_KEYS = (
    "Keys: Enter sends (queued while the agent works) · Alt-Enter or Ctrl-J adds a line · Esc stops "
    "the turn · Tab moves between the prompt and the agent tree · in the tree: Enter shows that "
    "agent's transcript, x stops it and its sub-agents, u undoes their changes · Ctrl-T theme · "
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


def _captured(run: Callable[[], object]) -> str:
    """What ``run`` prints (stdout and stderr), or its error in one line."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            run()
        except NestorError as exc:
            print(f"error: {exc.message}" + (f"\nhint: {exc.hint}" if exc.hint else ""))
        except SystemExit:  # typer.Exit from a command: its message is printed already
            pass
        except Exception as exc:  # a usage mistake in the arguments given to the command
            print(f"error: {exc}")
    return out.getvalue().rstrip()


def agents_command(options: CommonOptions, argument: str) -> str:
    """Run ``nestor agents ARGUMENT`` (``list`` when empty) without asking anything; return what it printed.

    ``create`` needs ``--description`` and ``--prompt`` (or ``--from-description``): nothing can
    be asked on the TUI's terminal, so tools and model default to the parent's.
    """
    import typer

    from nestor.cli import agents_cmd

    try:
        words = shlex.split(argument) or ["list"]
    except ValueError as exc:
        return f"error: {exc}"
    if words[0] == "create":
        drafting = "--from-description" in words
        if not drafting and not {"--description", "--prompt"} <= set(words):
            return (
                "error: /agents create needs --description and --prompt (or --from-description TEXT)\n"
                'e.g. /agents create reviewer --description "reviews diffs" --prompt "You review diffs."'
            )
        words += [flag for flag in ("--tools", "") if "--tools" not in words]
        words += [flag for flag in ("--model", "") if "--model" not in words]
        if drafting:
            words.append("--yes")

    def run() -> None:
        with contextlib.suppress(typer.Exit):
            agents_cmd.app(args=words, prog_name="/agents", standalone_mode=False, obj=options)

    return _captured(run)


def models_text(options: CommonOptions, current: str) -> str:
    """The model of this conversation and of each role (``nestor models``), and how to change them."""
    from nestor.cli.models_cmd import show_models

    shown = _captured(lambda: show_models(options, as_json=False))
    return (
        f"this conversation runs on {current}\n{shown}\n"
        "to use another model, restart with: nestor --model provider:model --continue"
    )
