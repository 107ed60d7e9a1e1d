"""Copies of a session tree: a fork at a message, and a conversation cut back to a prompt.

A fork is a new main session holding the first messages of another, with a copy of each sub-agent
session those messages started (and theirs, all their messages), under new ids: the copied
messages name the copies, so resuming a sub-agent from the fork never touches the original. The
checkpoints of the prompts it keeps are copied too. The original is left as it was.

Cutting a conversation back (a rewind) first forks it whole (nothing is lost: the fork keeps what
the rewind removes), then deletes the messages from the prompt on, the sub-agent sessions no
remaining message names, and the checkpoints of the removed prompts.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from nestor.core.ids import new_session_id
from nestor.store.checkpoints import CheckpointStore
from nestor.store.db import Database
from nestor.store.sessions import Session, SessionStore


def fork_session(
    db: Database,
    sessions: SessionStore,
    checkpoints: CheckpointStore,
    session_id: str,
    *,
    before_seq: int | None = None,
    title: str | None = None,
) -> Session:
    """Copy a main session's first messages (all when ``before_seq`` is None) into a new session.

    Raises:
        SessionNotFoundError: No session has this id.
        StoreError: The database failed (nothing is copied).

    """
    source = sessions.get(session_id)
    rows = _rows(db, source.id, before_seq)
    tree = _descendants(db, source.id, [row["data"] for row in rows])
    ids = {source.id: new_session_id(), **{child["id"]: new_session_id() for child in tree}}
    metadata = {"forked_from": source.id, **({"forked_at": before_seq} if before_seq is not None else {})}
    copies = [(_session_row(db, source.id), rows), *((child, _rows(db, child["id"], None)) for child in tree)]
    with db.transaction() as connection:
        for original, messages in copies:
            _insert_session(
                connection, original, ids, title if original["id"] == source.id else None, metadata
            )
            connection.executemany(
                "INSERT INTO messages (session_id, seq, kind, data, usage, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (
                        ids[original["id"]],
                        row["seq"],
                        row["kind"],
                        _renamed(row["data"], ids),
                        row["usage"],
                        row["created_at"],
                    )
                    for row in messages
                ],
            )
    checkpoints.copy(source.id, ids[source.id], ids, before_seq=before_seq)
    return sessions.get(ids[source.id])


def cut_session(db: Database, checkpoints: CheckpointStore, session_id: str, from_seq: int) -> None:
    """Delete a main session's messages from ``from_seq`` on, and what only they referred to."""
    with db.transaction() as connection:
        connection.execute("DELETE FROM messages WHERE session_id = ? AND seq >= ?", (session_id, from_seq))
        kept = [
            row[0]
            for row in connection.execute("SELECT data FROM messages WHERE session_id = ?", (session_id,))
        ]
        children = connection.execute(
            "SELECT id, parent_tool_call_id FROM sessions WHERE parent_id = ?", (session_id,)
        ).fetchall()
        for child_id, call_id in children:
            if not any(child_id in data or (call_id and call_id in data) for data in kept):
                connection.execute("DELETE FROM sessions WHERE id = ?", (child_id,))
    checkpoints.delete_from(session_id, from_seq)


def _rows(db: Database, session_id: str, before_seq: int | None) -> list[Any]:
    columns = "SELECT seq, kind, data, usage, created_at FROM messages WHERE session_id = ?"
    if before_seq is None:
        return db.fetch_all(f"{columns} ORDER BY seq", (session_id,))
    return db.fetch_all(f"{columns} AND seq < ? ORDER BY seq", (session_id, before_seq))


def _descendants(db: Database, session_id: str, kept: list[str]) -> list[Any]:
    """The sub-agent sessions the kept messages started, and all of their descendants."""
    found: list[Any] = []
    children = db.fetch_all(
        "SELECT * FROM sessions WHERE parent_id = ? ORDER BY created_at, id", (session_id,)
    )
    pending = [
        child
        for child in children
        if any(
            child["id"] in data or (child["parent_tool_call_id"] and child["parent_tool_call_id"] in data)
            for data in kept
        )
    ]
    while pending:
        child = pending.pop(0)
        found.append(child)
        pending += db.fetch_all(
            "SELECT * FROM sessions WHERE parent_id = ? ORDER BY created_at, id", (child["id"],)
        )
    return found


def _session_row(db: Database, session_id: str) -> Any:
    return db.fetch_one("SELECT * FROM sessions WHERE id = ?", (session_id,))


def _insert_session(
    connection: sqlite3.Connection, row: Any, ids: dict[str, str], title: str | None, metadata: dict[str, Any]
) -> None:
    """A session row's copy under its new id (a main session's is idle and says where it came from)."""
    main = row["parent_id"] is None or row["parent_id"] not in ids
    stored = json.loads(row["metadata"])
    connection.execute(
        "INSERT INTO sessions (id, parent_id, parent_tool_call_id, project_path, title, agent_name, model,"
        " status, created_at, updated_at, metadata)"
        " SELECT ?, ?, parent_tool_call_id, project_path, ?, agent_name, model,"
        " CASE WHEN ? THEN 'idle' ELSE status END, created_at, updated_at, ?"
        " FROM sessions WHERE id = ?",
        (
            ids[row["id"]],
            None if main else ids[row["parent_id"]],
            title if title is not None else row["title"],
            main,
            json.dumps({**stored, **metadata} if main else stored),
            row["id"],
        ),
    )


def _renamed(data: str, ids: dict[str, str]) -> str:
    """A stored message with every session id of the tree replaced by its copy's."""
    for old, new in ids.items():
        if old in data:
            data = data.replace(old, new)
    return data
