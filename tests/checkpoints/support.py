"""Checkpoint test support: a real database, a session with prompts, a project's shadow repository."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pydantic_ai.messages import ModelRequest, UserPromptPart

from nestor.checkpoints.recorder import CheckpointRecorder, ToolCall
from nestor.store.checkpoints import CheckpointStore
from nestor.store.db import Database, open_database
from nestor.store.messages import MessageStore, prompt_metadata
from nestor.store.sessions import SessionStore
from nestor.tools.git.shadow import ShadowRepository

MAX_FILE_BYTES = 1000


@dataclass
class Project:
    """A project with a main session whose snapshots a recorder takes."""

    root: Path
    data_dir: Path
    db: Database
    sessions: SessionStore
    messages: MessageStore
    checkpoints: CheckpointStore
    session_id: str
    recorder: CheckpointRecorder

    def prompt(self, text: str) -> int:
        """Store a prompt of the main session, as the loop does; returns its position."""
        return self.messages.append(
            self.session_id, ModelRequest([UserPromptPart(text)], metadata=prompt_metadata())
        )

    def new_recorder(self, notify: Callable[[str], None] = lambda _message: None) -> CheckpointRecorder:
        """Another recorder over the same session (a resumed session in a new process)."""
        return recorder_for(
            self.root, self.data_dir, self.checkpoints, self.messages, self.session_id, notify
        )

    async def call(
        self, agent: str, call_id: str, tool: str = "bash", paths: frozenset[str] | None = None
    ) -> ToolCall:
        """Start a tool call that can change files (its hook's part)."""
        call = ToolCall(agent, call_id, tool, paths)
        await self.recorder.starting(call)
        return call

    def close(self) -> None:
        self.db.close()


def recorder_for(
    root: Path,
    data_dir: Path,
    checkpoints: CheckpointStore,
    messages: MessageStore,
    session_id: str,
    notify: Callable[[str], None] = lambda _message: None,
) -> CheckpointRecorder:
    return CheckpointRecorder(
        ShadowRepository(data_dir, root),
        checkpoints,
        messages,
        session_id,
        max_file_bytes=MAX_FILE_BYTES,
        notify=notify,
    )


def open_project(root: Path, data_dir: Path) -> Project:
    """A project folder (created if missing) with a new main session and its recorder."""
    root.mkdir(parents=True, exist_ok=True)
    db = open_database(data_dir / "nestor.db")
    sessions, messages, checkpoints = SessionStore(db), MessageStore(db), CheckpointStore(db)
    session = sessions.create(root)
    recorder = recorder_for(root, data_dir, checkpoints, messages, session.id)
    return Project(root, data_dir, db, sessions, messages, checkpoints, session.id, recorder)


def files_of(root: Path) -> dict[str, bytes]:
    """Every regular file under ``root`` (``.git`` left out), by path: what a test compares."""
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and not path.is_symlink() and ".git" not in path.relative_to(root).parts
    }
