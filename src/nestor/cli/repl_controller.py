"""The REPL's logic, apart from keys and the terminal: prompts, cancellation, slash commands, permissions.

:class:`ReplController` sends what the user types to the main agent through the coordinator (a new
run, or queued while one is going), stops runs, and runs the slash commands. :class:`PermissionPrompter`
is the main agent's permission asker: it asks one question at a time through an injected function
(the REPL's prompt, or a test's script) and maps y / a / n to ``once`` / ``session`` / ``deny``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from nestor.app import title_from_prompt
from nestor.cli.render import EventRenderer, counted, usage_summary
from nestor.core.errors import NestorError

if TYPE_CHECKING:
    from nestor.core.permission import PermissionRequest
    from nestor.runtime.kernel.coordinator import Coordinator
    from nestor.runtime.kernel.loop import SessionAgent
    from nestor.runtime.kernel.permission_gate import PermissionAnswer, PermissionAsker
    from nestor.runtime.kernel.setup import RunResult
    from nestor.store.sessions import Session, SessionStore

__all__ = ["PermissionPrompter", "ReadAnswer", "ReplController", "StartAgent", "parse_answer"]

ReadAnswer = Callable[[str], Awaitable[str]]
"""Shows a question and returns the user's raw answer."""

StartAgent = Callable[["Session | None", "PermissionAsker"], Awaitable["SessionAgent"]]
"""Builds the main agent on a session (a new one for None) with this permission asker, and makes it live."""


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
    """The main agent's permission asker: asks the user one question at a time.

    Args:
        read_answer: Shows a question and returns what the user answered; asked again until the
            answer is y / a / n (or a word for them).
        renderer: Formats the question and keeps the answer in the scrollback.

    """

    def __init__(self, read_answer: ReadAnswer, renderer: EventRenderer) -> None:
        self._read_answer = read_answer
        self._renderer = renderer
        # Parallel tool calls may ask at the same time; the user answers them one after the other.
        self._lock = asyncio.Lock()

    async def __call__(self, request: PermissionRequest, agent_id: str) -> PermissionAnswer:
        """Ask about ``request`` from agent ``agent_id``; return ``once``, ``session`` or ``deny``."""
        async with self._lock:
            self._renderer.flush_text()
            question = self._renderer.permission_question(request, agent_id)
            answer = parse_answer(await self._read_answer(question))
            while answer is None:
                answer = parse_answer(await self._read_answer(question))
            self._renderer.show_permission_answer(request, agent_id, answer)
            return answer


_COMMAND_HELP = {
    "/help": "show the commands and keys",
    "/cost": "tokens and cost of this session so far (sub-agents included)",
    "/session": "id, title and model of this session",
    "/clear": "start a new session (the current one stays stored)",
    "/compact": "summarise the older conversation to free context (/compact FOCUS to steer the summary)",
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
        coordinator: Runs the agents.
        sessions: The session store (titles, totals for ``/cost``).
        renderer: Prints.
        start_agent: Builds the main agent on a session, or on a new one for None.
        asker: The permission asker given to every main agent.
        project_root: Shown in the banner.

    """

    def __init__(
        self,
        *,
        coordinator: Coordinator,
        sessions: SessionStore,
        renderer: EventRenderer,
        start_agent: StartAgent,
        asker: PermissionAsker,
        project_root: str,
    ) -> None:
        self.renderer = renderer
        self._coordinator = coordinator
        self._sessions = sessions
        self._start_agent = start_agent
        self._asker = asker
        self._project_root = project_root
        self._agent: SessionAgent | None = None
        self._needs_title = False
        self._compaction: asyncio.Task[None] | None = None
        self._after_compaction: list[str] = []

    @property
    def agent(self) -> SessionAgent:
        """The main agent (after :meth:`open`)."""
        if self._agent is None:
            raise RuntimeError("ReplController.open() has not been called")
        return self._agent

    @property
    def busy(self) -> bool:
        """True while the main agent runs or compacts its history."""
        if self._compacting:
            return True
        return self._agent is not None and self._coordinator.busy(self._agent.session_id)

    @property
    def _compacting(self) -> bool:
        return self._compaction is not None and not self._compaction.done()

    @staticmethod
    def command_help() -> dict[str, str]:
        """The slash commands and what they do."""
        return dict(_COMMAND_HELP)

    async def open(self, session: Session | None) -> None:
        """Start the main agent on ``session`` (a new session for None) and print the banner."""
        agent = await self._start_agent(session, self._asker)
        self._use(agent, title=session.title if session else "")
        resumed = None
        if session is not None:
            count = len(agent.history)
            resumed = counted(count, "message") + (f", {session.title}" if session.title else "")
        self.renderer.startup(
            model=agent.setup.model_name,
            session_id=agent.session_id,
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
            if _is_command(text):
                return await self._command(text)
            self.submit(text)
        except NestorError as exc:
            self.renderer.error(exc.message, exc.hint)
        return True

    def submit(self, prompt: str) -> asyncio.Task[RunResult] | None:
        """Send ``prompt`` to the main agent: a new run, or queued (None) when one is going."""
        agent = self.agent
        if self._compacting:
            # The agent cannot run while its history is being replaced; the prompt goes right after.
            self._after_compaction.append(prompt)
            self.renderer.info("queued until the compaction ends", style="dim")
            return None
        if self._needs_title:
            self._needs_title = False
            self._sessions.set_title(agent.session_id, title_from_prompt(prompt))
        task = self._coordinator.submit(agent.session_id, prompt)
        if task is not None:
            task.add_done_callback(self._report_crash)
        return task

    def cancel(self) -> bool:
        """Stop the main agent's run or compaction; False when none was going."""
        if self._compaction is not None and not self._compaction.done():
            self._compaction.cancel()
            return True
        return self._agent is not None and self._coordinator.cancel(self._agent.session_id)

    async def wait(self) -> RunResult | None:
        """Wait for the main agent's run to end (None when there is none)."""
        if self._compaction is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._compaction
        if self._agent is None or not self._coordinator.busy(self._agent.session_id):
            return None
        return await self._coordinator.wait(self._agent.session_id)

    async def shutdown(self) -> None:
        """Stop the run in progress, if any, and wait until what it did is stored."""
        if self._agent is None:
            return
        if self.cancel():
            with contextlib.suppress(Exception):
                await self.wait()
        if self._agent.history:
            self.renderer.info(
                f"resume this session with: nestor --resume {self._agent.session_id}", style="dim"
            )

    # -- slash commands ---------------------------------------------------------------------

    async def _command(self, text: str) -> bool:
        name = text.split(maxsplit=1)[0].lower()
        if name in ("/exit", "/quit"):
            return False
        if name == "/help":
            for command, help_text in _COMMAND_HELP.items():
                self.renderer.info(f"{command:<10} {help_text}")
            self.renderer.info(_KEYS_HELP, style="dim")
        elif name == "/cost":
            usage = self._sessions.get(self.agent.session_id).usage
            self.renderer.info(f"session {self.agent.session_id}: {usage_summary(usage)}")
        elif name == "/session":
            self._show_session()
        elif name == "/clear":
            await self._clear()
        elif name == "/compact":
            focus = text.split(maxsplit=1)[1] if len(text.split(maxsplit=1)) > 1 else None
            self._start_compaction(focus)
        else:
            known = " ".join(_COMMAND_HELP)
            self.renderer.info(f"unknown command {name}; the commands are: {known}", style="yellow")
        return True

    def _show_session(self) -> None:
        session = self._sessions.get(self.agent.session_id)
        count = len(self.agent.history)
        self.renderer.info(f"session {session.id}")
        self.renderer.info(f"  title    {session.title or '(none yet)'}")
        self.renderer.info(f"  model    {self.agent.setup.model_name}")
        self.renderer.info(f"  project  {session.project_path}")
        self.renderer.info(f"  history  {counted(count, 'message')} · {session.status}")

    async def _clear(self) -> None:
        if self.busy:
            self.renderer.info("a run is in progress: stop it with Esc first, then /clear", style="yellow")
            return
        previous = self._agent
        agent = await self._start_agent(None, self._asker)
        if previous is not None:
            previous.cancel()  # idle: this only stops its background sub-agents, whose notices would be lost
            self._coordinator.remove(previous.session_id)
        self._use(agent, title="")
        self.renderer.info(f"new session {agent.session_id} (the previous one stays stored)", style="dim")

    def _start_compaction(self, focus: str | None) -> None:
        if self.busy:
            self.renderer.info(
                "a run is in progress: /compact when it is done, or stop it with Esc", style="yellow"
            )
            return
        self._compaction = asyncio.create_task(self._compact(self.agent, focus), name="compact")

    async def _compact(self, agent: SessionAgent, focus: str | None) -> None:
        """Compact ``agent``'s history; progress and results are events the renderer prints."""
        try:
            if await agent.compact(focus) is None:
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

    def _use(self, agent: SessionAgent, *, title: str) -> None:
        self._agent = agent
        self._needs_title = not title
        self.renderer.main_agent_id = agent.session_id

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
