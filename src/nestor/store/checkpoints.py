"""Stored checkpoints: each snapshot of a project a session tree took, and the changes it saw.

A checkpoint row names a snapshot (a tree of the project's shadow repository, see
:mod:`nestor.tools.git.shadow`), the snapshot before it in the same session tree
(``parent_tree``), the prompt of the tree's main session it belongs to, and the agent and tool call
that triggered it. Its changes are the paths that differ between the two trees, each attributed to
the agent and tool call that made it (or to nobody: a change made outside nestor). Rows belong to
the tree's main session and go with it (``ON DELETE CASCADE``).
"""

from __future__ import annotations

import builtins
import json
import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from nestor.store.db import Database

CheckpointKind = Literal["prompt", "tool", "outside", "undo"]
"""``prompt``: before the first change of a prompt; ``tool``: after a tool call that can change
files; ``outside``: before an undo, what changed outside nestor since the last snapshot; ``undo``:
after an undo wrote the project (its ``parent_tree`` is the state it replaced)."""

CHECKPOINTS_SCHEMA: tuple[str, ...] = (
    """
    CREATE TABLE checkpoints (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        project_path TEXT NOT NULL,
        prompt_seq INTEGER,
        kind TEXT NOT NULL CHECK (kind IN ('prompt', 'tool', 'outside', 'undo')),
        agent_id TEXT,
        tool_call_id TEXT,
        tool_name TEXT NOT NULL DEFAULT '',
        tree TEXT NOT NULL,
        parent_tree TEXT,
        skipped TEXT NOT NULL DEFAULT '[]',
        created_at REAL NOT NULL
    )
    """,
    """
    CREATE TABLE checkpoint_changes (
        checkpoint_id INTEGER NOT NULL REFERENCES checkpoints(id) ON DELETE CASCADE,
        path TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('A', 'M', 'D')),
        agent_id TEXT,
        tool_call_id TEXT,
        reverted INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (checkpoint_id, path)
    )
    """,
    "CREATE INDEX checkpoints_by_session ON checkpoints(session_id, id)",
    "CREATE INDEX checkpoints_by_project ON checkpoints(project_path, id)",
    "CREATE INDEX checkpoint_changes_by_path ON checkpoint_changes(path)",
)
"""The schema step that adds the two tables (one migration of :data:`nestor.store.db.MIGRATIONS`)."""


@dataclass(frozen=True, slots=True)
class Change:
    """One path a snapshot saw changed, and who changed it.

    Attributes:
        checkpoint_id: The snapshot that saw it.
        path: The file, relative to the project.
        status: ``A`` (created), ``M`` (changed) or ``D`` (deleted) since the snapshot before.
        agent_id: The agent (its session id) whose tool call made it; None: outside nestor.
        tool_call_id: That tool call.
        reverted: An undo has put the file back since.

    """

    checkpoint_id: int
    path: str
    status: str
    agent_id: str | None
    tool_call_id: str | None
    reverted: bool = False


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """One snapshot of a session tree.

    Attributes:
        id: Its row id (later snapshots have larger ids, across sessions).
        session_id: The tree's main session.
        project_path: The project snapshotted.
        prompt_seq: The position of the main session's prompt it belongs to; None before any.
        kind: See :data:`CheckpointKind`.
        agent_id: The agent whose tool call triggered it (None for ``outside`` and ``undo``).
        tool_call_id: That tool call (None but for ``tool``).
        tool_name: That tool's name.
        tree: The snapshot's tree in the shadow repository.
        parent_tree: The tree of the tree's snapshot before this one (None for its first).
        skipped: Files changed but not stored: over the size limit, or nested repositories.
        created_at: When it was taken, seconds since the epoch.
        changes: The paths that differ from ``parent_tree``, with who changed each.

    """

    id: int
    session_id: str
    project_path: str
    prompt_seq: int | None
    kind: CheckpointKind
    agent_id: str | None
    tool_call_id: str | None
    tool_name: str
    tree: str
    parent_tree: str | None
    skipped: tuple[str, ...]
    created_at: float
    changes: tuple[Change, ...] = ()


@dataclass(frozen=True, slots=True)
class NewChange:
    """A change to record: the path, its status and who made it (None: outside nestor)."""

    path: str
    status: str
    agent_id: str | None
    tool_call_id: str | None


class CheckpointStore:
    """Record and read checkpoints.

    Args:
        db: The open database.
        clock: Returns the current time in seconds; tests pass a fake one.

    """

    def __init__(self, db: Database, *, clock: Callable[[], float] = time.time) -> None:
        self._db = db
        self._clock = clock

    def add(
        self,
        *,
        session_id: str,
        project_path: str,
        prompt_seq: int | None,
        kind: CheckpointKind,
        tree: str,
        parent_tree: str | None,
        agent_id: str | None = None,
        tool_call_id: str | None = None,
        tool_name: str = "",
        skipped: Iterable[str] = (),
        changes: Iterable[NewChange] = (),
    ) -> int:
        """Store a snapshot and its changes in one transaction; returns its id."""
        with self._db.transaction() as connection:
            checkpoint_id: int = connection.execute(
                "INSERT INTO checkpoints (session_id, project_path, prompt_seq, kind, agent_id, tool_call_id,"
                " tool_name, tree, parent_tree, skipped, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " RETURNING id",
                (
                    session_id,
                    project_path,
                    prompt_seq,
                    kind,
                    agent_id,
                    tool_call_id,
                    tool_name,
                    tree,
                    parent_tree,
                    json.dumps(sorted(skipped)),
                    self._clock(),
                ),
            ).fetchone()[0]
            connection.executemany(
                "INSERT INTO checkpoint_changes (checkpoint_id, path, status, agent_id, tool_call_id)"
                " VALUES (?, ?, ?, ?, ?)",
                [(checkpoint_id, c.path, c.status, c.agent_id, c.tool_call_id) for c in changes],
            )
        return checkpoint_id

    def of_session(self, session_id: str) -> builtins.list[Checkpoint]:
        """A tree's checkpoints, oldest first, each with its changes."""
        rows = self._db.fetch_all("SELECT * FROM checkpoints WHERE session_id = ? ORDER BY id", (session_id,))
        changes = self._db.fetch_all(
            "SELECT c.* FROM checkpoint_changes c JOIN checkpoints k ON k.id = c.checkpoint_id"
            " WHERE k.session_id = ? ORDER BY c.checkpoint_id, c.path",
            (session_id,),
        )
        return _with_changes(rows, changes)

    def latest(self, session_id: str) -> Checkpoint | None:
        """A tree's last checkpoint (without its changes), or None."""
        row = self._db.fetch_one(
            "SELECT * FROM checkpoints WHERE session_id = ? ORDER BY id DESC LIMIT 1", (session_id,)
        )
        return None if row is None else _checkpoint(row, ())

    def skipped(self, session_id: str) -> set[str]:
        """Every file a tree's snapshots skipped (too large, nested repositories)."""
        rows = self._db.fetch_all(
            "SELECT DISTINCT value FROM checkpoints, json_each(checkpoints.skipped) WHERE session_id = ?",
            (session_id,),
        )
        return {row[0] for row in rows}

    def changes_after(self, project_path: str, after_id: int, paths: Iterable[str]) -> builtins.list[Change]:
        """Changes to ``paths`` seen by any session of the project after checkpoint ``after_id``."""
        wanted = sorted(set(paths))
        if not wanted:
            return []
        found: builtins.list[Change] = []
        for start in range(0, len(wanted), 500):  # SQLite's limit on bound parameters
            chunk = wanted[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            rows = self._db.fetch_all(
                "SELECT c.* FROM checkpoint_changes c JOIN checkpoints k ON k.id = c.checkpoint_id"
                f" WHERE k.project_path = ? AND c.checkpoint_id > ? AND c.path IN ({marks})"
                " ORDER BY c.checkpoint_id",
                (project_path, after_id, *chunk),
            )
            found += [_change(row) for row in rows]
        return sorted(found, key=lambda change: change.checkpoint_id)

    def mark_reverted(self, changes: Iterable[tuple[int, str]]) -> None:
        """Mark changes (checkpoint id, path) as put back by an undo."""
        with self._db.transaction() as connection:
            connection.executemany(
                "UPDATE checkpoint_changes SET reverted = 1 WHERE checkpoint_id = ? AND path = ?",
                list(changes),
            )

    def copy(
        self, session_id: str, new_session_id: str, ids: Mapping[str, str], *, before_seq: int | None
    ) -> None:
        """Copy a tree's checkpoints to a fork (those of prompts before ``before_seq``; None: all).

        ``ids`` maps the tree's session ids to the fork's (agents are named by them).
        """
        rows = [
            row
            for row in self.of_session(session_id)
            if before_seq is None or (row.prompt_seq is not None and row.prompt_seq < before_seq)
        ]
        for row in rows:
            self.add(
                session_id=new_session_id,
                project_path=row.project_path,
                prompt_seq=row.prompt_seq,
                kind=row.kind,
                tree=row.tree,
                parent_tree=row.parent_tree,
                agent_id=ids.get(row.agent_id, row.agent_id) if row.agent_id else None,
                tool_call_id=row.tool_call_id,
                tool_name=row.tool_name,
                skipped=row.skipped,
                changes=[
                    NewChange(
                        c.path,
                        c.status,
                        ids.get(c.agent_id, c.agent_id) if c.agent_id else None,
                        c.tool_call_id,
                    )
                    for c in row.changes
                ],
            )

    def delete_from(self, session_id: str, prompt_seq: int) -> None:
        """Forget a tree's checkpoints of the prompts from ``prompt_seq`` on (a rewound conversation)."""
        self._db.execute(
            "DELETE FROM checkpoints WHERE session_id = ? AND prompt_seq >= ?", (session_id, prompt_seq)
        )

    def delete_older_than(self, cutoff: float) -> builtins.list[str]:
        """Delete the checkpoints taken before ``cutoff``; returns the projects that lost some."""
        rows = self._db.fetch_all(
            "SELECT DISTINCT project_path FROM checkpoints WHERE created_at < ?", (cutoff,)
        )
        if rows:
            self._db.execute("DELETE FROM checkpoints WHERE created_at < ?", (cutoff,))
        return [row[0] for row in rows]

    def kept_trees(self, project_path: str) -> set[str]:
        """Every tree the project's remaining checkpoints name (snapshots and the ones before them)."""
        rows = self._db.fetch_all(
            "SELECT tree, parent_tree FROM checkpoints WHERE project_path = ?", (project_path,)
        )
        return {tree for row in rows for tree in (row[0], row[1]) if tree}

    def sessions(self, project_path: str) -> set[str]:
        """The sessions that hold checkpoints of the project."""
        rows = self._db.fetch_all(
            "SELECT DISTINCT session_id FROM checkpoints WHERE project_path = ?", (project_path,)
        )
        return {row[0] for row in rows}


def _with_changes(
    rows: builtins.list[sqlite3.Row], changes: builtins.list[sqlite3.Row]
) -> builtins.list[Checkpoint]:
    by_checkpoint: dict[int, builtins.list[Change]] = {}
    for row in changes:
        by_checkpoint.setdefault(row["checkpoint_id"], []).append(_change(row))
    return [_checkpoint(row, tuple(by_checkpoint.get(row["id"], ()))) for row in rows]


def _checkpoint(row: sqlite3.Row, changes: tuple[Change, ...]) -> Checkpoint:
    return Checkpoint(
        id=row["id"],
        session_id=row["session_id"],
        project_path=row["project_path"],
        prompt_seq=row["prompt_seq"],
        kind=row["kind"],
        agent_id=row["agent_id"],
        tool_call_id=row["tool_call_id"],
        tool_name=row["tool_name"],
        tree=row["tree"],
        parent_tree=row["parent_tree"],
        skipped=tuple(json.loads(row["skipped"])),
        created_at=row["created_at"],
        changes=changes,
    )


def _change(row: sqlite3.Row) -> Change:
    return Change(
        checkpoint_id=row["checkpoint_id"],
        path=row["path"],
        status=row["status"],
        agent_id=row["agent_id"],
        tool_call_id=row["tool_call_id"],
        reverted=bool(row["reverted"]),
    )
