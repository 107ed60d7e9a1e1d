"""The UI facade: one main agent's conversation, as every UI (the CLI, a TUI, ACP, an SDK) uses it.

A :class:`Conversation` owns what "run to completion" means: sending prompts (a new run, or queued
while one is going), background sub-agents' notices and waiting for them, the usage of the whole
agent tree, the session's title, stopping, and the answers to permission questions (which travel
as :class:`~nestor.core.events.PermissionRequested` events on the bus). UIs read events from the
bus (:meth:`nestor.app.App.subscribe`) and act through this object only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nestor.core.prompts import UserPrompt, prompt_text
from nestor.core.usage import Usage
from nestor.runtime.kernel.prompt_files import check_prompt_files
from nestor.runtime.tree.tree_usage import TreeUsage

if TYPE_CHECKING:
    from nestor.app.checkpoints import SessionCheckpoints
    from nestor.core.events import Compacted, StopReason
    from nestor.core.permission import PermissionAnswer, PermissionRequest
    from nestor.runtime.features.titles import TitleWriter
    from nestor.runtime.kernel.coordinator import Coordinator
    from nestor.runtime.kernel.loop import SessionAgent
    from nestor.runtime.kernel.permission_questions import PermissionQuestions
    from nestor.runtime.kernel.setup import RunResult
    from nestor.runtime.tree.delegation import AgentTree
    from nestor.store.sessions import Session, SessionStore


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a prompt run to completion ended: what ``nestor run`` reports (the CLI formats it).

    Attributes:
        session_id: The main agent's session.
        text: The answer (or the error's message when ``is_error``).
        is_error: The run ended on an error.
        stop_reason: Why the last run ended.
        num_turns: The main agent's requests in the last run.
        duration_s: How long the last run took.
        model: The main agent's model.
        usage: What the whole tree spent (the main agent's runs and its sub-agents'; the session's
            title, written in the background, counts only in the session's totals).
        main_usage: What the main agent's own runs spent.
        hint: What to do about an error, if known.

    """

    session_id: str
    text: str
    is_error: bool
    stop_reason: StopReason
    num_turns: int
    duration_s: float
    model: str
    usage: Usage
    main_usage: Usage
    hint: str | None = None


class Conversation:
    """A live main agent and its tree, behind the few operations a UI needs.

    Args:
        agent: The main agent, already live in ``coordinator``.
        coordinator: Runs the agent's prompts, one run at a time.
        sessions: The session store (titles, totals).
        tree: The agent's tree (sub-agents, background agents); None for an agent without one.
        questions: Where permission questions wait for :meth:`answer`; None where nobody answers
            (a headless run: "ask" rules deny, with the reason told to the model).
        titles: Returns the writer of sessions' titles, if one was made.
        needs_title: The session has no title yet: the first prompt becomes it.
        checkpoints: Undo, rewind and fork for the session (``/undo``, ``/rewind``, ``/fork``).

    """

    def __init__(
        self,
        agent: SessionAgent,
        *,
        coordinator: Coordinator,
        sessions: SessionStore,
        tree: AgentTree | None = None,
        questions: PermissionQuestions | None = None,
        titles: Callable[[], TitleWriter | None] = lambda: None,
        needs_title: bool = False,
        checkpoints: SessionCheckpoints | None = None,
    ) -> None:
        self._agent = agent
        self._coordinator = coordinator
        self._sessions = sessions
        self._tree = tree
        self._questions = questions
        self._titles = titles
        self._needs_title = needs_title
        self.checkpoints = checkpoints
        """Undo, rewind and fork for this session; None for a conversation built without them."""

    @property
    def session_id(self) -> str:
        """The main agent's session (also its agent id in events)."""
        return self._agent.session_id

    @property
    def model(self) -> str:
        """The main agent's model, ``provider:model``."""
        return self._agent.setup.model_name

    @property
    def message_count(self) -> int:
        """How many messages the conversation's visible history holds."""
        return len(self._agent.history)

    @property
    def busy(self) -> bool:
        """True while the main agent runs."""
        return self._coordinator.busy(self.session_id)

    def session(self) -> Session:
        """The session as stored now: title, project, status, usage of the whole tree."""
        return self._sessions.get(self.session_id)

    def submit(self, prompt: UserPrompt) -> asyncio.Task[RunResult] | None:
        """Send ``prompt``: a new run (its task), or queued for the run going on (None).

        A prompt may carry images (pydantic-ai ``BinaryContent`` or ``ImageUrl`` beside its text).

        Raises:
            NestorError: The prompt has images and the main agent's model takes none.

        """
        self._accept(prompt)
        return self._coordinator.submit(self.session_id, prompt)

    def _accept(self, prompt: UserPrompt) -> None:
        """Check a prompt's images against the model, and title the session by its first prompt."""
        check_prompt_files(self._agent.setup.model, self.model, prompt)
        if self._needs_title:
            self._needs_title = False
            self._sessions.set_title(self.session_id, title_from_prompt(prompt_text(prompt, name_files=True)))

    async def wait(self) -> RunResult | None:
        """Wait for the run going on to end; None when there is none."""
        if not self.busy:
            return None
        return await self._coordinator.wait(self.session_id)

    def cancel(self) -> bool:
        """Stop the main agent's run; False when none was going."""
        return self._coordinator.cancel(self.session_id)

    def cancel_agent(self, agent_id: str) -> bool:
        """Stop one agent of the tree and its descendants, the others going on; False when it was not running.

        The main agent's id stops its run (as :meth:`cancel`). A sub-agent's run ends as cancelled
        and its parent gets that as the ``task`` result (a background one's notice says so), so
        the parent carries on with the others' results.
        """
        if agent_id == self.session_id:
            return self.cancel()
        tree = self._tree
        if tree is None:
            return False
        if tree.background.cancel(agent_id):
            return True
        agent = tree.live.get(agent_id)
        if agent is None or not agent.busy:
            return False
        agent.cancel()
        return True

    def is_background(self, agent_id: str) -> bool:
        """True when ``agent_id`` is a sub-agent started in the background (``run_in_background``)."""
        return self._tree is not None and agent_id in {
            record.agent_id for record in self._tree.background.of_parent()
        }

    def context_use(self) -> tuple[int, int | None]:
        """The main agent's next request in tokens (an estimate) and its model's context window, if known."""
        policy = self._agent.setup.context
        return self._agent.context_tokens(), policy.context_window if policy is not None else None

    def stop(self) -> None:
        """Stop everything: the run, the background agents and the title being written (a signal)."""
        self._coordinator.cancel(self.session_id)
        if self._tree is not None:
            self._tree.background.cancel_all()
        titles = self._titles()
        if titles is not None:
            titles.cancel()

    async def compact(self, focus: str | None = None) -> Compacted | None:
        """Summarise the older history now (``/compact``); None when there was nothing to summarise."""
        return await self._agent.compact(focus)

    def answer(self, request_id: str, decision: PermissionAnswer) -> bool:
        """Answer the permission question ``request_id``; False when it no longer waits (or nobody asks)."""
        return self._questions is not None and self._questions.answer(request_id, decision)

    async def ask_yes_no(self, request: PermissionRequest) -> bool:
        """Ask the user to approve what ``request`` describes, yes or no, as the main agent.

        The question travels as the others do (a yes/no :class:`~nestor.core.events.PermissionRequested`);
        with nobody to ask (a headless conversation) the answer is no.
        """
        from nestor.app.approval_questions import yes_no_asker

        if self._questions is None:
            return False
        return await yes_no_asker(self._questions, self.session_id)(request)

    def waiting(self, request_id: str) -> bool:
        """True while the permission question ``request_id`` waits for an answer."""
        return self._questions is not None and self._questions.waiting(request_id)

    async def run_to_completion(self, prompt: UserPrompt) -> Outcome:
        """Run ``prompt``, then every background agent and the main agent's answers to their notices.

        The conversation ends only after every background agent ended and its notice reached the
        main agent, whose answer to them is the outcome's text. A run that did not complete
        cancels the background agents still going.

        Raises:
            NestorError: The prompt has images and the main agent's model takes none (see :meth:`submit`).

        """
        tree_usage = TreeUsage(self._sessions)
        children_before = tree_usage.children(self.session_id)
        result = await self._run(prompt)
        main_usage = result.usage.copy()
        tree, agent = self._tree, self._agent
        if tree is not None:
            while result.stop_reason == "completed" and (tree.background.any_running() or agent.has_pending):
                await tree.background.wait_all()
                if agent.has_pending:
                    result = await self._run(None)
                    main_usage.add(result.usage)
            if tree.background.any_running():
                tree.background.cancel_all()
                await tree.background.wait_all()
        usage = tree_usage.prompt(self.session_id, main_runs=main_usage, children_before=children_before)
        return Outcome(
            session_id=self.session_id,
            text=result.text,
            is_error=result.is_error,
            stop_reason=result.stop_reason,
            num_turns=result.num_turns,
            duration_s=result.duration_s,
            model=self.model,
            usage=usage,
            main_usage=main_usage,
            hint=result.hint,
        )

    async def wait_for_title(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the session's title being written, if any."""
        titles = self._titles()
        if titles is not None:
            await titles.wait(timeout)

    def close(self) -> None:
        """Leave this conversation (the REPL's ``/clear``): its background agents stop, it is no longer live.

        Call it when no run is going (:meth:`cancel` and :meth:`wait` first).
        """
        self._agent.cancel()  # idle: this stops its background sub-agents, whose notices would be lost
        self._coordinator.remove(self.session_id)

    async def _run(self, prompt: UserPrompt | None) -> RunResult:
        if prompt is not None:
            self._accept(prompt)
        return await self._coordinator.run(self.session_id, prompt)


def title_from_prompt(prompt: str) -> str:
    """A session title from the first line of its first prompt (cut at 80 characters)."""
    first_line = prompt.strip().splitlines()[0] if prompt.strip() else ""
    return first_line if len(first_line) <= 80 else first_line[:77] + "..."
