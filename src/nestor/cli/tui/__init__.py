"""The full-screen terminal UI that ``nestor`` opens on a terminal (``nestor --plain`` keeps the line REPL).

Textual is imported only when the TUI starts: ``nestor --help``, ``nestor run`` and
``nestor --plain`` never load it. :func:`run_tui` is the command's entry, :func:`tui_main` the
async part tests call with their own settings; the app itself is :mod:`nestor.cli.tui.app`.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING

from nestor.cli.error_report import report_error
from nestor.cli.headless import STOP_SIGNALS, detach_from_terminal, terminal_outputs
from nestor.cli.hooks_cmd import ask_to_approve_hooks
from nestor.cli.mcp_cmd import ask_to_approve_servers
from nestor.cli.options import CommonOptions
from nestor.cli.repl_controller import ReplController
from nestor.cli.trust_cmd import settings_after_asking
from nestor.cli.tui.commands import LineSink, sink_renderer
from nestor.core.errors import NestorError

if TYPE_CHECKING:
    from nestor.app import App, Conversation, Session
    from nestor.cli.render import EventRenderer
    from nestor.cli.tui.app import NestorTui
    from nestor.config.settings import Settings

__all__ = ["build_tui", "run_tui", "tui_main"]


def run_tui(options: CommonOptions, *, resume: str | None, continue_latest: bool) -> int:
    """Open the TUI on the project and return the exit code (0, 1 on a startup error, 128 + a signal)."""
    try:
        settings = settings_after_asking(options, options.load_settings(), input)
        ask_to_approve_servers(settings, input)
        ask_to_approve_hooks(settings, input)
    except NestorError as exc:
        return report_error(exc, debug=options.debug)
    return asyncio.run(
        tui_main(settings, options, resume=resume, continue_latest=continue_latest, debug=options.debug)
    )


async def build_tui(
    nestor: App,
    options: CommonOptions,
    *,
    session: Session | None = None,
    env: Mapping[str, str] | None = None,
    clock: Callable[[], float] | None = None,
    output: tuple[EventRenderer, LineSink] | None = None,
    redraw_s: float = 0.5,
) -> NestorTui:
    """Start the main agent on ``session`` (a new one for None) and return the TUI over it, not yet running.

    Args:
        nestor: The open app.
        options: The command line's flags (``/agents`` and ``/model`` use them).
        session: The session to resume; None for a new one.
        env: Environment for provider credentials; ``os.environ`` when None.
        clock: The TUI's clock (tests fix it); the real time when None.
        redraw_s: How often, at most, the tree, the status bar and (while several agents run) the
            transcript are redrawn (see :class:`~nestor.cli.tui.app.NestorTui`).
        output: Where the REPL's lines (banner, commands, the app's notices) are printed, from
            :func:`~nestor.cli.tui.commands.sink_renderer`; a new one when None.

    Raises:
        NestorError: The model cannot be built, or the session is in use.

    """
    from nestor.cli.tui.app import NestorTui

    renderer, lines = output if output is not None else sink_renderer()

    def open_conversation(chosen: Session | None) -> Awaitable[Conversation]:
        return nestor.conversation(session=chosen, interactive=True, env=env)

    controller = ReplController(
        renderer=renderer,
        open_conversation=open_conversation,
        prompter=None,
        project_root=str(nestor.settings.project_root),
        options=options,
        sessions=nestor,
    )
    await controller.open(session)
    return NestorTui(nestor, controller, lines, clock=clock or time.time, redraw_s=redraw_s)


async def tui_main(
    settings: Settings,
    options: CommonOptions,
    *,
    resume: str | None = None,
    continue_latest: bool = False,
    debug: bool = False,
) -> int:
    """Open the app, start (or resume) the main agent and run the TUI until the user exits.

    Returns:
        0 when the user exits, 1 when the model or the session cannot be opened, 128 + the
        signal's number when SIGHUP (the terminal closed) or SIGTERM stopped it.

    """
    from nestor.app import App

    renderer, lines = sink_renderer()
    nestor = App.open(settings, notify=lambda message: renderer.info(message, style="dim"))
    try:
        try:
            session = nestor.find_session(resume=resume, continue_latest=continue_latest)
            tui = await build_tui(nestor, options, session=session, output=(renderer, lines))
        except NestorError as exc:
            return report_error(exc, debug=debug)
        received: list[int] = []
        outputs = terminal_outputs()

        def stop(signum: int) -> None:
            received.append(signum)
            if signum == signal.SIGHUP:
                detach_from_terminal(outputs)
            tui.controller.conversation.stop()
            tui.exit(128 + signum)

        loop = asyncio.get_running_loop()
        for signum in STOP_SIGNALS:
            loop.add_signal_handler(signum, stop, signum)
        try:
            code = await tui.run_async()
        finally:
            for signum in STOP_SIGNALS:
                loop.remove_signal_handler(signum)
        await tui.controller.shutdown()
        for line in tui.leftover_lines():
            print(line)
        return 128 + received[0] if received else code or 0
    finally:
        await nestor.aclose()  # stops the MCP servers the session started
