"""Undo, rewind and fork: what the REPL, the TUI and ``nestor undo`` / ``nestor sessions fork`` call.

:class:`SessionCheckpoints` works on one main session: its prompts (what ``/rewind`` lists), the
plan of an undo (a prompt and every prompt after it, or one agent with its sub-agents) with the
diff it would write, applying it (all or nothing), cutting the conversation back to a prompt (the
whole conversation is kept in a fork first), and forking. A live conversation has one
(:attr:`nestor.app.Conversation.checkpoints`); :func:`stored_session_checkpoints` makes one for a
stored session, with no agent running.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from nestor.checkpoints.recorder import CheckpointRecorder
from nestor.checkpoints.retention import prune_old, prune_project
from nestor.checkpoints.undo import (
    PlannedFile,
    UndoPlan,
    apply_undo,
    latest_undoable_prompt,
    plan_agent_undo,
    plan_prompt_undo,
)
from nestor.config.settings import Settings
from nestor.core.errors import CheckpointError
from nestor.store.checkpoints import Checkpoint, CheckpointStore
from nestor.store.db import Database
from nestor.store.forks import cut_session, fork_session
from nestor.store.messages import MessageStore
from nestor.store.sessions import Session, SessionStore
from nestor.tools.git.shadow import ShadowRepository

__all__ = [
    "Checkpoint",
    "PlannedFile",
    "Prompt",
    "SessionCheckpoints",
    "UndoPlan",
    "prune_after_delete",
    "prune_old_checkpoints",
    "recorder_for",
    "stored_session_checkpoints",
]

_MB = 1_000_000


@dataclass(frozen=True, slots=True)
class Prompt:
    """A prompt of a main session.

    Attributes:
        number: Its number in the session, from 1.
        seq: The position of its message (a fork before it keeps the messages before this).
        text: What the user wrote.
        files: Files nestor's agents changed from this prompt until the next, not undone since.

    """

    number: int
    seq: int
    text: str
    files: int


def recorder_for(
    settings: Settings,
    database: Database,
    session_id: str,
    project: Path,
    notify: Callable[[str], None] = lambda _message: None,
) -> CheckpointRecorder | None:
    """The recorder of a session tree's snapshots; None when ``[checkpoints] enabled = false``."""
    config = settings.checkpoints
    if not config.enabled:
        return None
    return CheckpointRecorder(
        ShadowRepository(settings.data_dir, project),
        CheckpointStore(database),
        MessageStore(database),
        session_id,
        max_file_bytes=int(config.max_file_mb * _MB),
        notify=notify,
    )


class SessionCheckpoints:
    """Undo, rewind and fork for one main session.

    Args:
        recorder: The session tree's recorder (the live one while it runs); None without checkpoints.
        database: The session database.
        session_id: The main session.

    """

    def __init__(self, recorder: CheckpointRecorder | None, database: Database, session_id: str) -> None:
        self.recorder = recorder
        self.session_id = session_id
        self._db = database
        self._sessions = SessionStore(database)
        self._messages = MessageStore(database)
        self._store = CheckpointStore(database)

    def prompts(self) -> list[Prompt]:
        """The session's prompts, oldest first, each with the files changed in it and not undone."""
        return [prompt for prompt, _rows in self.by_prompt()]

    def by_prompt(self) -> list[tuple[Prompt, list[Checkpoint]]]:
        """Each prompt with the snapshots taken from it until the next one."""
        stored = self._messages.prompts(self.session_id)
        rows = self._store.of_session(self.session_id)
        grouped: list[tuple[Prompt, list[Checkpoint]]] = []
        for number, (seq, text) in enumerate(stored, start=1):
            following = stored[number][0] if number < len(stored) else None
            own = [
                row
                for row in rows
                if row.prompt_seq is not None
                and row.prompt_seq >= seq
                and (following is None or row.prompt_seq < following)
            ]
            paths = {c.path for row in own for c in row.changes if c.agent_id is not None and not c.reverted}
            grouped.append((Prompt(number, seq, text, len(paths)), own))
        return grouped

    def checkpoints(self) -> list[Checkpoint]:
        """The session tree's snapshots, oldest first, with their changes."""
        return self._store.of_session(self.session_id)

    def prompt(self, number: int) -> Prompt:
        """The prompt numbered ``number``.

        Raises:
            CheckpointError: The session has no such prompt.

        """
        prompts = self.prompts()
        if not 1 <= number <= len(prompts):
            raise CheckpointError(
                f"session {self.session_id} has no prompt {number} (it has {len(prompts)})",
                hint=f"nestor sessions show {self.session_id} lists its prompts and checkpoints",
            )
        return prompts[number - 1]

    def last_undoable(self) -> Prompt | None:
        """The last prompt whose changes of files are not all undone yet (what ``/undo`` undoes)."""
        if self.recorder is None:
            return None
        seq = latest_undoable_prompt(self.recorder)
        return next((prompt for prompt in self.prompts() if prompt.seq == seq), None)

    async def plan_undo(self, number: int | None = None) -> UndoPlan:
        """What undoing prompt ``number`` and every prompt after it would write.

        None undoes the last prompt whose changes are not undone yet.
        """
        recorder = self._recorder()
        if number is None:
            last = self.last_undoable()
            if last is None:
                return UndoPlan("nothing: no prompt of this session changed files that are not undone")
            prompt = last
        else:
            prompt = self.prompt(number)
        later = len(self.prompts()) - prompt.number
        title = f"prompt {prompt.number} ({_short(prompt.text)})" + (
            f" and the {later} after it" if later else ""
        )
        return await plan_prompt_undo(recorder, prompt.seq, title)

    async def plan_agent_undo(self, agent_id: str) -> UndoPlan:
        """What undoing one sub-agent's changes (its own sub-agents' included) would write."""
        agent = self._sessions.get(agent_id)
        lineage = [agent.id]
        for current in lineage:  # grows while it is walked: every descendant once
            lineage.extend(child.id for child in self._sessions.children(current))
        title = f"agent {agent.agent_name}" + (
            f" ({_short(agent.title)})" if agent.title else f" ({agent.id})"
        )
        return await plan_agent_undo(self._recorder(), lineage, title)

    async def apply(self, plan: UndoPlan) -> None:
        """Write a plan's files, all or none.

        Raises:
            CheckpointError: It cannot be done in full; nothing was changed.

        """
        await apply_undo(self._recorder(), plan)

    def rewind_conversation(self, number: int) -> Session:
        """Cut the conversation back to before prompt ``number``; returns the fork that keeps all of it.

        Call it when no agent of the session runs (a live conversation is built anew after it).
        """
        prompt = self.prompt(number)
        source = self._sessions.get(self.session_id)
        kept = fork_session(
            self._db,
            self._sessions,
            self._store,
            self.session_id,
            title=f"{source.title or 'untitled'} (before the rewind to prompt {number})",
        )
        cut_session(self._db, self._store, self.session_id, prompt.seq)
        return kept

    def fork(self, before_seq: int | None = None) -> Session:
        """A new session with this one's messages before ``before_seq`` (all for None), this one untouched."""
        source = self._sessions.get(self.session_id)
        if before_seq is not None and not 0 <= before_seq <= self._messages.count(self.session_id):
            raise CheckpointError(
                f"session {self.session_id} has no message {before_seq} "
                f"(its messages are 0 to {self._messages.count(self.session_id) - 1})",
                hint=f"nestor sessions show {self.session_id} --json shows each message's seq",
            )
        return fork_session(
            self._db,
            self._sessions,
            self._store,
            self.session_id,
            before_seq=before_seq,
            title=f"{source.title or 'untitled'} (fork)",
        )

    def _recorder(self) -> CheckpointRecorder:
        if self.recorder is None:
            raise CheckpointError(
                "checkpoints are off, so there is nothing to undo",
                hint="set [checkpoints] enabled = true (the default) for the next sessions",
            )
        return self.recorder


def stored_session_checkpoints(
    settings: Settings, database: Database, session: Session
) -> SessionCheckpoints:
    """Undo, rewind and fork for a stored main session, with no agent running it."""
    if session.parent_id is not None:
        raise CheckpointError(
            f"{session.id} is a sub-agent's session: undo and fork work on main sessions",
            hint=f"use its main session; nestor sessions show {session.parent_id} --tree shows the tree",
        )
    recorder = recorder_for(settings, database, session.id, session.project_path)
    return SessionCheckpoints(recorder, database, session.id)


async def prune_after_delete(settings: Settings, database: Database, project: Path) -> None:
    """Remove the snapshots no remaining session of ``project`` needs (after ``sessions delete``)."""
    await prune_project(settings.data_dir, project, CheckpointStore(database))


async def prune_old_checkpoints(settings: Settings, database: Database) -> list[str]:
    """Delete the snapshots older than ``[checkpoints] keep_days``; returns the projects pruned."""
    return await prune_old(settings.data_dir, CheckpointStore(database), settings.checkpoints.keep_days)


def _short(text: str, limit: int = 50) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."
