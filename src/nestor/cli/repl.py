"""The interactive REPL: a prompt_toolkit line editor over the main agent, Rich output above it.

The input prompt stays usable while the agent runs (``prompt_async`` under ``patch_stdout``): a line
sent while busy is queued and the agent takes it at its next turn, Esc or Ctrl-C stop the run, and a
permission question takes over the prompt until it is answered with y / a / n. Because of that
output is append-only, and assistant text streams block by block (see :mod:`nestor.cli.render`).

The logic (prompts, cancellation, slash commands, answering permission questions) lives in
:mod:`nestor.cli.repl_controller` and the output in :mod:`nestor.cli.render`; here are the keys and
the wiring: :class:`LinePrompt` is the prompt_toolkit session (key bindings, toolbar, the pending
permission question), :func:`interact` the read-eval loop, and :func:`run_repl` connects them to the
app and the terminal.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.filters import Condition
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.input import Input
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.output import Output
from prompt_toolkit.patch_stdout import patch_stdout
from prompt_toolkit.styles import Style
from rich.console import Console

from nestor.cli.error_report import report_error
from nestor.cli.formatting import spinner_frame
from nestor.cli.headless import detach_from_terminal, terminal_outputs
from nestor.cli.hooks_cmd import ask_to_approve_hooks
from nestor.cli.mcp_cmd import ask_to_approve_servers
from nestor.cli.options import CommonOptions
from nestor.cli.render import EventRenderer
from nestor.cli.repl_controller import PermissionPrompter, ReplController
from nestor.cli.trust_cmd import settings_after_asking
from nestor.core.errors import NestorError

if TYPE_CHECKING:
    from nestor.app import Conversation, Session
    from nestor.config.settings import Settings

__all__ = [
    "LazyFileHistory",
    "LinePrompt",
    "PendingQuestion",
    "SlashCommandCompleter",
    "Terminal",
    "interact",
    "repl_main",
    "run_repl",
]

_STYLE = Style.from_dict(
    {
        "bottom-toolbar": "noreverse #8a8a8a",
        "question": "bold #d7af00",
        "prompt": "bold",
        "prompt.busy": "#8a8a8a",
    }
)


class PendingQuestion:
    """The question the prompt shows instead of the usual one, and the future its answer resolves."""

    def __init__(self) -> None:
        self._current: tuple[str, asyncio.Future[str]] | None = None
        self._listeners: list[Callable[[], None]] = []
        self.keys: str | None = None
        """What the keys answer, for the status line (None: a permission question's y / a / n)."""

    @property
    def text(self) -> str | None:
        """The question being asked, or None."""
        return self._current[0] if self._current else None

    def on_change(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` whenever a question appears or goes."""
        self._listeners.append(listener)

    async def ask(self, question: str, keys: str | None = None) -> str:
        """Show ``question`` and wait for :meth:`answer`; a ``ReadAnswer`` for the prompter.

        ``keys`` says what the keys answer, when they are not a permission's y / a / n.
        """
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._current, self.keys = (question, future), keys
        self._notify()
        try:
            return await future
        finally:
            self._current, self.keys = None, None
            self._notify()

    def answer(self, text: str) -> bool:
        """Answer the pending question with ``text``; False when none is pending."""
        if self._current is None or self._current[1].done():
            return False
        self._current[1].set_result(text)
        return True

    def _notify(self) -> None:
        for listener in self._listeners:
            listener()


class LazyFileHistory(FileHistory):
    """Prompt history in a file whose directory is created only when the first line is stored."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._directory = path.parent

    def store_string(self, string: str) -> None:
        """Append ``string`` to the file, creating its directory first."""
        self._directory.mkdir(parents=True, exist_ok=True)
        super().store_string(string)


class SlashCommandCompleter(Completer):
    """Completes ``/command`` names at the start of the line."""

    def __init__(self, commands: Mapping[str, str]) -> None:
        self._commands = commands

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterator[Completion]:
        """Yield the commands starting with what is typed, when the line is a bare ``/word``."""
        typed = document.text_before_cursor
        if not typed.startswith("/") or any(char.isspace() for char in typed):
            return
        for name, help_text in self._commands.items():
            if name.startswith(typed):
                yield Completion(name, start_position=-len(typed), display_meta=help_text)


class LinePrompt:
    """The prompt_toolkit line editor of the REPL and its keys.

    Keys: Enter sends; Alt-Enter, Esc-Enter or a trailing backslash add a line; Esc or Ctrl-C stop
    a run; Ctrl-C clears the line, and on an empty line twice in a row exits, as does Ctrl-D; while
    a permission question is pending, y / a / n answer it (Esc or Ctrl-C deny).

    Args:
        controller: What the keys act on.
        question: The permission question to show, if any.
        history: Where sent lines are kept (in memory when None).
        input: The prompt_toolkit input (the terminal when None; tests pass a pipe).
        output: The prompt_toolkit output (the terminal when None).
        servers_starting: The language servers starting now (``App.language_servers_starting``),
            shown on the status line.

    """

    def __init__(
        self,
        controller: ReplController,
        question: PendingQuestion,
        *,
        history: History | None = None,
        input: Input | None = None,
        output: Output | None = None,
        servers_starting: Callable[[], list[str]] = list,
    ) -> None:
        self._controller = controller
        self._servers_starting = servers_starting
        self._question = question
        self.exit_armed = False
        self._stopped = False
        self.session: PromptSession[str] = PromptSession(
            message=self._message,
            key_bindings=self._key_bindings(),
            history=history if history is not None else InMemoryHistory(),
            bottom_toolbar=self._toolbar,
            refresh_interval=0.5,
            prompt_continuation="  ",
            completer=SlashCommandCompleter(controller.command_help()),
            complete_while_typing=True,
            style=_STYLE,
            input=input,
            output=output,
        )
        # Esc alone is known only once no key follows it: first as a byte (ttimeoutlen, vim's
        # default), then as a prefix of Esc-Enter (timeoutlen). prompt_toolkit's 0.5 s + 1 s would
        # make Esc take 1.5 s to stop a run; these keep it under a second.
        self.session.app.ttimeoutlen = 0.1
        self.session.app.timeoutlen = 0.5
        question.on_change(self.session.app.invalidate)
        self.session.default_buffer.on_text_changed += self._disarm_exit

    async def read_line(self) -> str:
        """Read one line (or several, with Alt-Enter); raises EOFError when the user exits."""
        if self._stopped:
            raise EOFError
        return await self.session.prompt_async()

    def stop(self) -> None:
        """End the REPL as Ctrl-D does: the line being read, and any later one, raise EOFError."""
        self._stopped = True
        if self.session.app.is_running:
            self.session.app.exit(exception=EOFError())

    def _disarm_exit(self, _buffer: object) -> None:
        self.exit_armed = False

    def _message(self) -> StyleAndTextTuples:
        question = self._question.text
        if question is not None:
            return [("class:question", f"? {question}\n"), ("class:prompt", "› ")]
        return [("class:prompt.busy" if self._controller.busy else "class:prompt", "› ")]

    def _toolbar(self) -> StyleAndTextTuples:
        question = self._question.text
        if question is not None and self._question.keys is not None:
            return [("", self._question.keys)]
        if question is not None and "[a]" not in question:  # a yes/no question (an MCP server to approve)
            return [("", "y yes · n or Esc no · Ctrl-C no and stop")]
        if question is not None:
            return [("", "y allow once · a allow for this session · n or Esc deny · Ctrl-C deny and stop")]
        if self.exit_armed:
            return [("", "press Ctrl-C again to exit")]
        renderer = self._controller.renderer
        if self._controller.busy:
            frame = spinner_frame(asyncio.get_running_loop().time())
            status = renderer.main_status() or "working"
            first = f"{frame} {status} · Esc to interrupt · Enter queues a prompt"
        else:
            first = "Enter send · Alt-Enter new line · /help · Ctrl-D exit"
        # Running sub-agents (background ones too, after the run) each get a line of live counters.
        lines = [first, *renderer.agent_status()]
        starting = self._servers_starting()
        if starting:
            lines.append(f"  starting {', '.join(starting)} (language server)")
        return [("", "\n".join(lines))]

    def _key_bindings(self) -> KeyBindings:
        bindings = KeyBindings()
        asking = Condition(lambda: self._question.text is not None)
        busy = Condition(lambda: self._controller.busy)

        @bindings.add("c-c")
        def _interrupt(event: KeyPressEvent) -> None:
            buffer = event.current_buffer
            if self._question.text is not None:
                self._question.answer("n")
                self._controller.cancel()
            elif self._controller.busy:
                self._controller.cancel()
            elif buffer.text:
                buffer.reset()
            elif self.exit_armed:
                event.app.exit(exception=EOFError())
            else:
                self.exit_armed = True

        @bindings.add("escape", filter=asking | busy)
        def _stop(event: KeyPressEvent) -> None:
            if not self._question.answer("n"):
                self._controller.cancel()

        @bindings.add("escape", "enter")
        def _new_line(event: KeyPressEvent) -> None:
            event.current_buffer.insert_text("\n")

        continued = Condition(lambda: self.session.default_buffer.document.text_before_cursor.endswith("\\"))

        @bindings.add("enter", filter=continued & ~asking)
        def _continue_line(event: KeyPressEvent) -> None:
            event.current_buffer.delete_before_cursor(1)
            event.current_buffer.insert_text("\n")

        @bindings.add("enter", filter=asking)
        def _ignore_enter(event: KeyPressEvent) -> None:
            """Enter does not answer a question: only an explicit y / a / n does."""

        for key in ("y", "Y", "a", "A", "n", "N"):

            @bindings.add(key, filter=asking)
            def _answer(event: KeyPressEvent) -> None:
                self._question.answer(event.data.lower())

        return bindings


async def interact(controller: ReplController, prompt: LinePrompt) -> int:
    """Read lines and hand them to ``controller`` until the user exits; stop any run; return 0."""
    try:
        while True:
            try:
                line = await prompt.read_line()
            except EOFError:
                break
            except OSError:  # the terminal is gone (hung up): stop as if the user exited
                break
            if not await controller.handle_line(line):
                break
    finally:
        await controller.shutdown()
    return 0


@dataclass
class Terminal:
    """Where the REPL reads and writes; tests pass a pipe input, a dummy output and a string console."""

    console: Console
    input: Input | None = None
    output: Output | None = None


def run_repl(options: CommonOptions, *, resume: str | None, continue_latest: bool) -> int:
    """Open the interactive REPL on the project and return the exit code (0, or 1 on a startup error)."""
    if not sys.stdin.isatty():
        error = NestorError(
            "the interactive REPL needs a terminal on stdin",
            hint='for a prompt from a pipe or a script use: nestor run "prompt" (it reads stdin too)',
        )
        return report_error(error, debug=options.debug)
    try:
        settings = settings_after_asking(options, options.load_settings(), input)
        ask_to_approve_servers(settings, input)
        ask_to_approve_hooks(settings, input)
    except NestorError as exc:
        return report_error(exc, debug=options.debug)
    return asyncio.run(
        repl_main(
            settings, resume=resume, continue_latest=continue_latest, debug=options.debug, options=options
        )
    )


async def repl_main(
    settings: Settings,
    *,
    resume: str | None = None,
    continue_latest: bool = False,
    debug: bool = False,
    terminal: Terminal | None = None,
    env: Mapping[str, str] | None = None,
    options: CommonOptions | None = None,
) -> int:
    """Open the app, start (or resume) the main agent and run the REPL until the user exits.

    Args:
        settings: Loaded settings.
        resume: A session id (or unique prefix) to resume.
        continue_latest: Resume the project's latest session.
        debug: Show tracebacks of startup errors.
        terminal: Where to read and write; the real terminal (with ``patch_stdout``) when None.
        env: Environment for provider credentials; ``os.environ`` when None.
        options: The command line's flags, for ``/agents`` and ``/model`` (the project's own when None).

    Returns:
        0 when the user exits, 1 when the model or the session cannot be opened, 128 + the
        signal's number when SIGHUP (the terminal closed) or SIGTERM stopped it.

    """
    from nestor.app import App

    console = terminal.console if terminal is not None else Console(highlight=False)
    app = App.open(settings, notify=lambda message: console.print(message, style="dim", markup=False))
    try:
        renderer = EventRenderer(console)
        question = PendingQuestion()

        def open_conversation(session: Session | None) -> Awaitable[Conversation]:
            return app.conversation(session=session, interactive=True, env=env)

        prompter = PermissionPrompter(question.ask, renderer)
        controller = ReplController(
            renderer=renderer,
            open_conversation=open_conversation,
            prompter=prompter,
            project_root=str(settings.project_root),
            ask=lambda text: question.ask(text, keys="y yes · n or Esc no"),
            options=options or CommonOptions(directory=settings.project_root),
            sessions=app,
        )
        try:
            await controller.open(app.find_session(resume=resume, continue_latest=continue_latest))
        except NestorError as exc:
            return report_error(exc, debug=debug)
        unsubscribe = app.subscribe(renderer.handle)
        unsubscribe_prompter = app.subscribe(prompter.handle)
        prompt = LinePrompt(
            controller,
            question,
            history=LazyFileHistory(Path(settings.data_dir) / "repl_history"),
            input=terminal.input if terminal else None,
            output=terminal.output if terminal else None,
            servers_starting=app.language_servers_starting,
        )
        received: list[int] = []
        outputs = terminal_outputs() if terminal is None else ()

        def stop(signum: int) -> None:
            received.append(signum)
            if signum == signal.SIGHUP:
                detach_from_terminal(outputs)
            controller.cancel()
            prompt.stop()

        loop = asyncio.get_running_loop()
        # Only on the real terminal: tests drive the REPL inside pytest's own process.
        stop_signals = (signal.SIGTERM, signal.SIGHUP) if terminal is None else ()
        for signum in stop_signals:
            loop.add_signal_handler(signum, stop, signum)
        try:
            with patch_stdout(raw=True) if terminal is None else contextlib.nullcontext():
                code = await interact(controller, prompt)
            # Ended by a signal: the shell's convention, 128 + its number (129 hang-up, 143 kill).
            return 128 + received[0] if received else code
        finally:
            for signum in stop_signals:
                loop.remove_signal_handler(signum)
            unsubscribe_prompter()
            unsubscribe()
    finally:
        # Language servers are shut down; a title still being written is not worth keeping the user
        # waiting: it stops.
        await app.aclose()
