"""``/agents``, ``/model``, ``/sessions`` and ``/resume``: the slash commands both UIs run the same way.

The line REPL and the TUI share one command set through
:class:`~nestor.cli.repl_controller.ReplController`, which hands these to :class:`SessionCommands`
and the functions here. ``/agents`` and ``/model`` run the ``nestor agents`` and ``nestor models``
commands and show what they print; ``/sessions`` lists the project's sessions, numbered, and
``/resume N`` (or an id) goes on in one. The TUI shows the same list as a picker.
"""

from __future__ import annotations

import contextlib
import io
import shlex
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol

from nestor.core.errors import NestorError
from nestor.core.usage import format_cost, format_tokens

if TYPE_CHECKING:
    from nestor.app import Conversation, Session
    from nestor.cli.options import CommonOptions
    from nestor.cli.render import EventRenderer

COMMAND_HELP = {
    "/agents": "list the agents; /agents show NAME; /agents create NAME --description ... --prompt ...",
    "/model": "the model of each role, and how to change it",
    "/sessions": "list this project's sessions, numbered (/resume N goes on in one)",
    "/resume": "resume a session: /resume N (from /sessions) or /resume ID",
}


class SessionSource(Protocol):
    """Where the sessions a user can resume come from (the app)."""

    def project_sessions(self, limit: int = 50) -> list[Session]:
        """The main sessions of the project, the most recently updated first."""
        ...

    def find_session(self, *, resume: str | None, continue_latest: bool) -> Session | None:
        """The session with this id (or unique prefix)."""
        ...


def session_line(session: Session) -> str:
    """One session in a list: title, id, state, tokens and cost."""
    usage = session.usage
    return (
        f"{session.title or '(untitled)'} · {session.id} · {session.status} · "
        f"{format_tokens(usage.total_tokens)} tok · {format_cost(usage.cost_usd)}"
    )


class SessionCommands:
    """``/sessions`` (a numbered list) and ``/resume N`` or ``/resume ID``.

    Args:
        renderer: Prints.
        sources: The app's sessions; None where there are none to offer (nothing is listed).
        conversation: The current conversation.
        busy: Whether a run (or a compaction) is going on.
        resume: Goes on in a session (the current conversation is closed).

    """

    def __init__(
        self,
        renderer: EventRenderer,
        sources: SessionSource | None,
        *,
        conversation: Callable[[], Conversation],
        busy: Callable[[], bool],
        resume: Callable[[Session], Awaitable[None]],
    ) -> None:
        self._renderer = renderer
        self._sources = sources
        self._conversation = conversation
        self._busy = busy
        self._resume = resume
        self._listed: list[Session] = []

    def listing(self) -> list[Session]:
        """The project's sessions, newest first (what ``/sessions`` numbers)."""
        return [] if self._sources is None else self._sources.project_sessions()

    def show(self) -> None:
        """Print the sessions, numbered from 1, the current one marked."""
        self._listed = self.listing()
        if not self._listed:
            self._renderer.info("no stored session of this project yet", style="dim")
            return
        current = self._conversation().session_id
        for number, session in enumerate(self._listed, 1):
            mark = "*" if session.id == current else " "
            self._renderer.info(f"{number:>3}{mark} {session_line(session)}")
        self._renderer.info("go on in one with /resume N (or /resume ID); * is this one", style="dim")

    async def resume(self, argument: str) -> None:
        """Go on in session ``argument`` (a number of the last list, or an id); no argument lists them."""
        reference = argument.strip()
        if not reference:
            self.show()
            return
        if self._busy():
            self._renderer.info("a run is in progress: stop it with Esc first, then /resume", style="yellow")
            return
        try:
            session = self._chosen(reference)
        except NestorError as exc:
            self._renderer.error(exc.message, exc.hint)
            return
        if session.id == self._conversation().session_id:
            self._renderer.info(f"already in session {session.id}", style="dim")
            return
        await self._resume(session)

    def _chosen(self, reference: str) -> Session:
        if reference.isdigit():
            listed = self._listed or self.listing()
            number = int(reference)
            if not 1 <= number <= len(listed):
                raise NestorError(
                    f"no session numbered {number}", hint="/sessions lists them, numbered from 1"
                )
            return listed[number - 1]
        found = (
            None
            if self._sources is None
            else self._sources.find_session(resume=reference, continue_latest=False)
        )
        if found is None:
            raise NestorError(f"no session {reference!r}", hint="/sessions lists them")
        return found


def agents_command(options: CommonOptions, argument: str) -> str:
    """Run ``nestor agents ARGUMENT`` (``list`` when empty) without asking anything; return what it printed.

    ``create`` needs ``--description`` and ``--prompt`` (or ``--from-description``): nothing can
    be asked mid-conversation, so tools and model default to the parent's.
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
