"""The REPL's and the TUI's ``/undo``, ``/rewind`` and ``/fork``, and undoing one sub-agent's changes.

Each shows what it would do (the files and their diffs, or the prompts to pick from), asks, and
only then writes: the files all or none, the conversation cut back after the whole of it is kept
in a new session, which the user can resume. The conversation goes on from the cut (the main
agent is built again on the session) or, after ``/fork``, on the copy.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from nestor.cli.undo_cmd import plan_lines, prompt_lines
from nestor.core.errors import NestorError

if TYPE_CHECKING:
    from nestor.app import Conversation, Session
    from nestor.app.checkpoints import SessionCheckpoints, UndoPlan
    from nestor.cli.render import EventRenderer

Ask = Callable[[str], Awaitable[str]]
"""Asks a yes-or-no question and returns the user's raw answer (``y`` is yes)."""

_MODES = ("code", "conversation", "both")

COMMAND_HELP = {
    "/undo": "put back the last prompt's changes, files and conversation (/undo code, /undo conversation)",
    "/rewind": "list the prompts; /rewind N [code|conversation|both] goes back to before prompt N",
    "/fork": "continue in a copy of this session (the original stays as it is)",
}


class UndoCommands:
    """``/undo``, ``/rewind``, ``/fork`` and an agent's undo, over the controller's conversation.

    Args:
        renderer: Prints.
        ask: Asks the user to confirm (y or n); None where nobody can answer (nothing is written).
        conversation: The current conversation.
        busy: Whether a run (or a compaction) is going on.
        switch: Leaves the current conversation and opens one on a session (the same one, cut
            back, or a fork); returns it.

    """

    def __init__(
        self,
        renderer: EventRenderer,
        ask: Ask | None,
        *,
        conversation: Callable[[], Conversation],
        busy: Callable[[], bool],
        switch: Callable[[Session], Awaitable[Conversation]],
    ) -> None:
        self._renderer = renderer
        self.ask = ask
        """Asks the user to confirm (the TUI sets its dialog once it runs)."""
        self._conversation = conversation
        self._busy = busy
        self._switch = switch

    async def run(self, name: str, argument: str) -> None:
        """Run ``/undo``, ``/rewind`` or ``/fork`` with what follows it; errors become one line."""
        if self._busy():
            self._renderer.info(f"a run is in progress: stop it with Esc first, then {name}", style="yellow")
            return
        try:
            if name == "/undo":
                await self._undo(argument.strip().lower())
            elif name == "/rewind":
                await self._rewind(argument.split())
            else:
                await self._fork()
        except NestorError as exc:
            self._renderer.error(exc.message, exc.hint)

    async def undo_agent(self, agent_id: str) -> None:
        """Show what undoing one sub-agent's changes writes, ask, and write it."""
        if self._busy():
            self._renderer.info(
                "agents are at work: undo an agent's changes once they are done", style="yellow"
            )
            return
        try:
            checkpoints = self._checkpoints()
            plan = await checkpoints.plan_agent_undo(agent_id)
            if await self._confirm(plan):
                await asyncio.shield(checkpoints.apply(plan))  # once begun, it ends
                self._renderer.info(f"undone: {plan.title}", style="green")
        except NestorError as exc:
            self._renderer.error(exc.message, exc.hint)

    async def _undo(self, mode: str) -> None:
        if mode not in ("", "code", "conversation"):
            self._renderer.info("/undo takes nothing, code or conversation", style="yellow")
            return
        checkpoints = self._checkpoints()
        last = checkpoints.last_undoable() if mode != "conversation" else None
        prompts = checkpoints.prompts()
        if last is None and (mode == "code" or not prompts):
            self._renderer.info("nothing to undo: no prompt changed files that are not undone", style="dim")
            return
        number = last.number if last is not None else prompts[-1].number
        await self._go_back(checkpoints, number, mode or "both")

    async def _rewind(self, words: list[str]) -> None:
        checkpoints = self._checkpoints()
        prompts = checkpoints.prompts()
        if not prompts:
            self._renderer.info("this session has no prompt yet", style="dim")
            return
        number = next((int(word) for word in words if word.isdigit()), None)
        mode = next((word for word in words if word in _MODES), "both")
        unknown = [word for word in words if not word.isdigit() and word not in _MODES]
        if number is None or unknown:
            for line in ["the prompts of this session:", *prompt_lines(prompts)]:
                self._renderer.info(line)
            self._renderer.info(
                "go back to before one with /rewind N, adding code, conversation or both (the default)",
                style="dim",
            )
            return
        checkpoints.prompt(number)  # a number out of range says so
        await self._go_back(checkpoints, number, mode)

    async def _go_back(self, checkpoints: SessionCheckpoints, number: int, mode: str) -> None:
        """Back to before prompt ``number``: the files (shown and confirmed), then the conversation."""
        plan = await checkpoints.plan_undo(number) if mode != "conversation" else None
        if plan is not None and plan.refusal is not None:
            self._renderer.info(plan_lines(plan, diffs=False)[0], style="yellow")
            return
        if plan is not None and not await self._confirm(plan, conversation=mode == "both"):
            return
        if plan is None and not await self._yes(f"cut the conversation back to before prompt {number}?"):
            return
        if plan is not None and plan.files:
            await asyncio.shield(checkpoints.apply(plan))  # once begun, it ends
            self._renderer.info(f"undone: {plan.title}", style="green")
        if mode != "code":
            await self._cut(checkpoints, number)

    async def _cut(self, checkpoints: SessionCheckpoints, number: int) -> None:
        conversation = self._conversation()
        conversation.close()  # no agent of it may run while its messages are cut
        try:
            kept = checkpoints.rewind_conversation(number)
        finally:  # cut back or not, the conversation goes on
            await self._switch(conversation.session())
        self._renderer.info(
            f"the conversation is back to before prompt {number}; all of it is kept in session {kept.id}",
            style="dim",
        )

    async def _fork(self) -> None:
        conversation = self._conversation()
        fork = self._checkpoints().fork()
        conversation.close()
        await self._switch(fork)
        self._renderer.info(
            f"you are now in {fork.id}, a copy of {conversation.session_id} (which stays as it was)",
            style="dim",
        )

    async def _confirm(self, plan: UndoPlan, *, conversation: bool = False) -> bool:
        """Show the plan with its diffs and ask; False when there is nothing to do or the user says no."""
        lines = plan_lines(plan, diffs=True)
        if plan.refusal is not None:
            self._renderer.info(lines[0], style="yellow")
            return False
        for line in lines:
            self._renderer.info(line, style=_diff_style(line))
        if not plan.files and not conversation:
            return False
        files = ", ".join(file.path for file in plan.files[:4]) + (", ..." if len(plan.files) > 4 else "")
        actions = [f"put back {files}"] if plan.files else []
        actions += ["cut the conversation back"] if conversation else []
        return await self._yes(f"undo {plan.title}: {' and '.join(actions)}?")

    async def _yes(self, question: str) -> bool:
        """Ask a yes-or-no question; no when nobody can answer."""
        if self.ask is None:
            return False
        self._renderer.flush_text()
        yes = (await self.ask(question)).strip().lower() in ("y", "yes")
        self._renderer.info(f"{question} {'yes' if yes else 'no'}", style="dim")
        return yes

    def _checkpoints(self) -> SessionCheckpoints:
        checkpoints = self._conversation().checkpoints
        if checkpoints is None:
            raise NestorError("this conversation has no checkpoints")
        return checkpoints


def _diff_style(line: str) -> str:
    if line.startswith("+") and not line.startswith("+++"):
        return "green"
    if line.startswith("-") and not line.startswith("---"):
        return "red"
    return ""
