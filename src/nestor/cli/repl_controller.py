"""The REPL's logic, apart from keys and the terminal: prompts, cancellation, slash commands, permissions.

:class:`ReplController` sends what the user types to the main agent's conversation (the app's
facade: a new run, or queued while one is going), stops runs, and runs the slash commands.
:class:`PermissionPrompter` answers the permission questions the conversation publishes as events:
it asks one question at a time through an injected function (the REPL's prompt, or a test's
script), maps y / a / n to ``once`` / ``session`` / ``deny`` and answers the conversation by the
question's id.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from nestor.cli.render import EventRenderer, counted, usage_summary
from nestor.cli.slash_commands import COMMAND_HELP as SHARED_HELP
from nestor.cli.slash_commands import SessionCommands, SessionSource, agents_command, models_text
from nestor.cli.undo_commands import COMMAND_HELP as UNDO_HELP
from nestor.cli.undo_commands import Ask, UndoCommands
from nestor.core.errors import NestorError
from nestor.core.events import Event, PermissionRequested, PermissionWithdrawn
from nestor.core.permission import PERMISSION_CHOICES

if TYPE_CHECKING:
    from nestor.app import Conversation, RunResult, Session
    from nestor.cli.options import CommonOptions
    from nestor.core.permission import PermissionAnswer, PermissionRequest

__all__ = ["OpenConversation", "PermissionPrompter", "ReadAnswer", "ReplController", "parse_answer"]

ReadAnswer = Callable[[str], Awaitable[str]]
"""Shows a question and returns the user's raw answer."""

OpenConversation = Callable[["Session | None"], Awaitable["Conversation"]]
"""Starts the main agent on a session (a new one for None), interactive, and returns its conversation."""

Answer = Callable[[str, "PermissionAnswer"], object]
"""Answers the permission question with this id (the conversation's ``answer``)."""


_ANSWERS: dict[str, PermissionAnswer] = {
    "y": "once",
    "yes": "once",
    "once": "once",
    "a": "session",
    "always": "session",
    "session": "session",
    "n": "deny",
    "no": "deny",
    "deny": "deny",
}


def parse_answer(text: str) -> PermissionAnswer | None:
    """Map a typed answer (``y``/``a``/``n`` or a word) to the asker's answer; None if it is neither."""
    return _ANSWERS.get(text.strip().lower())


class PermissionPrompter:
    """Answers the permission questions on the bus: asks the user one question at a time.

    Args:
        read_answer: Shows a question and returns what the user answered; asked again until the
            answer is y / a / n (or a word for them).
        renderer: Formats the question and keeps the answer in the scrollback.
        answer: Sends the user's answer back by the question's id (set by the controller).

    """

    def __init__(
        self, read_answer: ReadAnswer, renderer: EventRenderer, answer: Answer = lambda _id, _answer: None
    ) -> None:
        self._read_answer = read_answer
        self._renderer = renderer
        self.answer = answer
        # Parallel tool calls may ask at the same time; the user answers them one after the other.
        self._lock = asyncio.Lock()
        self._asking: dict[str, asyncio.Task[None]] = {}

    def handle(self, event: Event) -> None:
        """A bus handler: ask about each :class:`PermissionRequested`, drop the withdrawn ones."""
        if isinstance(event, PermissionRequested):
            task = asyncio.get_running_loop().create_task(self._ask_and_answer(event), name="permission")
            self._asking[event.request_id] = task
            task.add_done_callback(lambda _task: self._asking.pop(event.request_id, None))
        elif isinstance(event, PermissionWithdrawn) and event.request_id in self._asking:
            self._asking[event.request_id].cancel()

    async def _ask_and_answer(self, event: PermissionRequested) -> None:
        self.answer(event.request_id, await self.ask(event.request, event.agent_id, event.choices))

    async def ask(
        self,
        request: PermissionRequest,
        agent_id: str,
        choices: tuple[PermissionAnswer, ...] = PERMISSION_CHOICES,
    ) -> PermissionAnswer:
        """Ask about ``request`` from agent ``agent_id``; return one of ``choices``.

        ``choices`` are ``once``, ``session`` and ``deny``, or without ``session`` a yes/no
        question (y or yes is ``once``).
        """
        async with self._lock:
            self._renderer.flush_text()
            question = self._renderer.permission_question(request, agent_id, choices)
            answer = parse_answer(await self._read_answer(question))
            while answer not in choices:
                answer = parse_answer(await self._read_answer(question))
            self._renderer.show_permission_answer(request, agent_id, answer, choices)
            return answer


_COMMAND_HELP = {
    "/help": "show the commands and keys",
    "/cost": "tokens and cost of this session so far (sub-agents included)",
    "/session": "id, title and model of this session",
    "/clear": "start a new session (the current one stays stored)",
    "/compact": "summarise the older conversation to free context (/compact FOCUS to steer the summary)",
    **UNDO_HELP,
    **SHARED_HELP,
    "/exit": "leave nestor (also /quit, Ctrl-D)",
    "/quit": "leave nestor",
}

_KEYS_HELP = (
    "Keys: Enter sends (while a run is going, the prompt is queued for its next turn) · Alt-Enter, "
    "Esc-Enter or a trailing \\ add a line · Esc or Ctrl-C stop the run · Ctrl-C clears the line, "
    "twice on an empty line exits · Ctrl-D exits · at a permission question: y once, a for this "
    "session, n deny"
)


class ReplController:
    """What the REPL does with a line: send it to the main agent, or run a slash command.

    Knows nothing about keys or the terminal: :class:`LinePrompt` calls :meth:`handle_line`,
    :meth:`cancel` and :attr:`busy`; output goes through the renderer.

    Args:
        renderer: Prints.
        open_conversation: Starts the main agent on a session, or on a new one for None.
        prompter: Asks the user the permission questions; answers go to the current conversation.
            None where the UI answers them itself (the TUI's dialogs).
        project_root: Shown in the banner.
        ask: Asks the user to confirm an undo (y or n); None writes nothing (the REPL's question,
            the TUI's dialog).
        options: The command line's flags, for ``/agents`` and ``/model``.
        sessions: The app's sessions, for ``/sessions`` and ``/resume``.

    """

    def __init__(
        self,
        *,
        renderer: EventRenderer,
        open_conversation: OpenConversation,
        prompter: PermissionPrompter | None,
        project_root: str,
        ask: Ask | None = None,
        options: CommonOptions | None = None,
        sessions: SessionSource | None = None,
    ) -> None:
        self.renderer = renderer
        self._open_conversation = open_conversation
        self._project_root = project_root
        self._conversation: Conversation | None = None
        self._compaction: asyncio.Task[None] | None = None
        self._after_compaction: list[str] = []
        self._undoing: asyncio.Task[None] | None = None
        self.undo = UndoCommands(
            renderer,
            ask,
            conversation=lambda: self.conversation,
            busy=lambda: self.busy,
            switch=self._switch_to,
        )
        """``/undo``, ``/rewind``, ``/fork``, and the TUI's undo of one sub-agent."""
        self._options = options
        self.sessions = SessionCommands(
            renderer,
            sessions,
            conversation=lambda: self.conversation,
            busy=lambda: self.busy,
            resume=self._resume,
        )
        """``/sessions`` and ``/resume``."""
        if prompter is not None:
            prompter.answer = self._answer

    @property
    def conversation(self) -> Conversation:
        """The main agent's conversation (after :meth:`open`)."""
        if self._conversation is None:
            raise RuntimeError("ReplController.open() has not been called")
        return self._conversation

    @property
    def busy(self) -> bool:
        """True while the main agent runs or compacts its history."""
        if self._compacting:
            return True
        return self._conversation is not None and self._conversation.busy

    @property
    def _compacting(self) -> bool:
        return self._compaction is not None and not self._compaction.done()

    @staticmethod
    def command_help() -> dict[str, str]:
        """The slash commands and what they do."""
        return dict(_COMMAND_HELP)

    async def open(self, session: Session | None) -> None:
        """Start the main agent on ``session`` (a new session for None) and print the banner."""
        conversation = await self._open_conversation(session)
        self._use(conversation)
        resumed = None
        if session is not None:
            count = conversation.message_count
            resumed = counted(count, "message") + (f", {session.title}" if session.title else "")
        self.renderer.startup(
            model=conversation.model,
            session_id=conversation.session_id,
            project_root=self._project_root,
            resumed=resumed,
        )

    async def handle_line(self, line: str) -> bool:
        """Act on one line the user sent; False when the REPL should end.

        An error a user can act on (a new session whose model cannot be built, a store that fails)
        is printed and the REPL goes on.
        """
        text = line.strip()
        if not text:
            return True
        try:
            if self.undoing:
                self.renderer.info("an undo is waiting for its answer: y or n", style="yellow")
                return True
            if _is_command(text):
                return await self._command(text)
            self.submit(text)
        except NestorError as exc:
            self.renderer.error(exc.message, exc.hint)
        return True

    def submit(self, prompt: str) -> asyncio.Task[RunResult] | None:
        """Send ``prompt`` to the main agent: a new run, or queued (None) when one is going."""
        conversation = self.conversation
        if self._compacting:
            # The agent cannot run while its history is being replaced; the prompt goes right after.
            self._after_compaction.append(prompt)
            self.renderer.info("queued until the compaction ends", style="dim")
            return None
        task = conversation.submit(prompt)
        if task is not None:
            task.add_done_callback(self._report_crash)
        return task

    @property
    def undoing(self) -> bool:
        """True while ``/undo``, ``/rewind``, ``/fork`` or an agent's undo shows, asks or writes."""
        return self._undoing is not None and not self._undoing.done()

    def start_undo(self, work: Awaitable[None]) -> None:
        """Run an undo's dialogue in the background: the prompt stays live for its question."""
        self._undoing = asyncio.ensure_future(work)

    def cancel(self) -> bool:
        """Stop the main agent's run or compaction; False when none was going."""
        if self._compaction is not None and not self._compaction.done():
            self._compaction.cancel()
            return True
        return self._conversation is not None and self._conversation.cancel()

    async def wait(self) -> RunResult | None:
        """Wait for the main agent's run (and an undo going on) to end (None when there is no run)."""
        if self._undoing is not None:
            await asyncio.gather(self._undoing, return_exceptions=True)
        if self._compaction is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._compaction
        if self._conversation is None:
            return None
        return await self._conversation.wait()

    async def shutdown(self) -> None:
        """Stop the run in progress, if any, and wait until what it did is stored."""
        if self._undoing is not None:
            self._undoing.cancel()  # a question nobody will answer; files being written are finished
            await asyncio.gather(self._undoing, return_exceptions=True)
        if self._conversation is None:
            return
        if self.cancel():
            with contextlib.suppress(Exception):
                await self.wait()
        if self._conversation.message_count:
            self.renderer.info(
                f"resume this session with: nestor --resume {self._conversation.session_id}", style="dim"
            )

    # -- slash commands ---------------------------------------------------------------------

    async def _command(self, text: str) -> bool:
        name = text.split(maxsplit=1)[0].lower()
        argument = text.split(maxsplit=1)[1] if len(text.split(maxsplit=1)) > 1 else ""
        if name in ("/exit", "/quit"):
            return False
        if name == "/help":
            for command, help_text in _COMMAND_HELP.items():
                self.renderer.info(f"{command:<10} {help_text}")
            self.renderer.info(_KEYS_HELP, style="dim")
        elif name == "/cost":
            usage = self.conversation.session().usage
            self.renderer.info(f"session {self.conversation.session_id}: {usage_summary(usage)}")
        elif name == "/session":
            self._show_session()
        elif name == "/clear":
            await self._clear()
        elif name == "/compact":
            self._start_compaction(argument or None)
        elif name in UNDO_HELP:
            self.start_undo(self.undo.run(name, argument))
        elif name in ("/agents", "/model"):
            self._run_command(name, argument)
        elif name == "/sessions":
            self.sessions.show()
        elif name == "/resume":
            await self.sessions.resume(argument)
        else:
            known = " ".join(_COMMAND_HELP)
            self.renderer.info(f"unknown command {name}; the commands are: {known}", style="yellow")
        return True

    def _run_command(self, name: str, argument: str) -> None:
        """``/agents`` or ``/model``: what the ``nestor agents`` or ``nestor models`` command prints."""
        if self._options is None:
            self.renderer.info(f"{name} is not available here", style="yellow")
            return
        if name == "/agents":
            text = agents_command(self._options, argument)
        else:
            text = models_text(self._options, self.conversation.model)
        for line in text.splitlines():
            self.renderer.info(line)

    async def _resume(self, session: Session) -> None:
        """Go on in ``session``: its main agent starts and the current conversation is closed."""
        previous = self._conversation
        await self.open(session)
        if previous is not None:
            previous.close()

    def _show_session(self) -> None:
        session = self.conversation.session()
        count = self.conversation.message_count
        self.renderer.info(f"session {session.id}")
        self.renderer.info(f"  title    {session.title or '(none yet)'}")
        self.renderer.info(f"  model    {self.conversation.model}")
        self.renderer.info(f"  project  {session.project_path}")
        self.renderer.info(f"  history  {counted(count, 'message')} · {session.status}")

    async def _clear(self) -> None:
        if self.busy:
            self.renderer.info("a run is in progress: stop it with Esc first, then /clear", style="yellow")
            return
        previous = self._conversation
        conversation = await self._open_conversation(None)
        if previous is not None:
            previous.close()
        self._use(conversation)
        self.renderer.info(
            f"new session {conversation.session_id} (the previous one stays stored)", style="dim"
        )

    async def _switch_to(self, session: Session) -> Conversation:
        """Go on in ``session`` (the same one cut back, or a fork); the current conversation is closed."""
        conversation = await self._open_conversation(session)
        self._use(conversation)
        return conversation

    def _start_compaction(self, focus: str | None) -> None:
        if self.busy:
            self.renderer.info(
                "a run is in progress: /compact when it is done, or stop it with Esc", style="yellow"
            )
            return
        self._compaction = asyncio.create_task(self._compact(self.conversation, focus), name="compact")

    async def _compact(self, conversation: Conversation, focus: str | None) -> None:
        """Compact the conversation's history; progress and results are events the renderer prints."""
        try:
            if await conversation.compact(focus) is None:
                self.renderer.info("nothing to compact yet", style="dim")
        except asyncio.CancelledError:
            self.renderer.info("compaction stopped; the history is unchanged", style="yellow")
        except NestorError as exc:
            self.renderer.error(f"compaction failed: {exc.message}", exc.hint)
        finally:
            queued, self._after_compaction = self._after_compaction, []
            self._compaction = None
            for prompt in queued:
                self.submit(prompt)

    # -- helpers ----------------------------------------------------------------------------

    def _use(self, conversation: Conversation) -> None:
        self._conversation = conversation
        self.renderer.main_agent_id = conversation.session_id

    def _answer(self, request_id: str, answer: PermissionAnswer) -> None:
        if self._conversation is not None:
            self._conversation.answer(request_id, answer)

    def _report_crash(self, task: asyncio.Task[RunResult]) -> None:
        # The loop turns errors into an ErrorEvent; only a bug in it ends here.
        if task.cancelled() or task.exception() is None:
            return
        error = task.exception()
        self.renderer.error(
            f"the run ended unexpectedly: {type(error).__name__}: {error}",
            "the conversation so far is stored; report this with --debug output",
        )


def _is_command(text: str) -> bool:
    """A line is a slash command when its first word is ``/name`` (``/etc/hosts ...`` is a prompt)."""
    first = text.split(maxsplit=1)[0]
    return first.startswith("/") and "/" not in first[1:]
