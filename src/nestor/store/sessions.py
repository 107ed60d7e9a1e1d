"""Stored sessions: one row per conversation, forming a tree of parents and sub-agent children.

A session's token and cost columns hold its own usage plus that of every descendant
(:meth:`SessionStore.add_usage` rolls usage up the tree with the SQL of :mod:`.rollup`), so a
parent's totals are live while its sub-agents run.

A session is run by one process at a time: :meth:`SessionStore.acquire` records this process as
its holder (see :mod:`nestor.store.lease`) and refuses while another live process holds it. A
session stored as ``running`` whose holder is gone (killed, crashed) reads as ``interrupted``.
"""

from __future__ import annotations

import builtins
import json
import sqlite3
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nestor.core.errors import SessionInUseError, SessionNotFoundError, StoreError
from nestor.core.ids import new_session_id
from nestor.core.usage import USAGE_COUNTS, Usage
from nestor.store.db import Database
from nestor.store.lease import ProcessIdentity, holder_is_live, holder_of
from nestor.store.rollup import LINEAGE_IDS, add_usage_statement

LIST_HINT = "run `nestor sessions list` to see the stored sessions and their ids"

# A character above every character an id can hold: ids starting with p sort in [p, p + this).
_PREFIX_END = "\U0010ffff"


@dataclass(slots=True)
class Session:
    """One stored conversation, as read from the database.

    Attributes:
        id: The session id (``ses_...``), also the id of the agent that runs it.
        parent_id: The session that started this one as a sub-agent, or ``None`` at the top.
        parent_tool_call_id: The parent's tool call that started this session, if any.
        project_path: The directory the session works in.
        title: A short human title, empty until one is set.
        agent_name: The agent spec the session runs.
        model: The ``provider:model`` string the session used last.
        status: ``idle``, ``running``, ``completed``, ``cancelled``, ``error`` or a stop reason;
            ``interrupted`` for a session stored as running whose process is gone.
        usage: Tokens and cost of this session and all its descendants.
        created_at: Creation time, seconds since the epoch.
        updated_at: Time of the last change, seconds since the epoch.
        metadata: Free-form JSON data other layers attach to the session.

    """

    id: str
    parent_id: str | None
    parent_tool_call_id: str | None
    project_path: Path
    title: str
    agent_name: str
    model: str
    status: str
    usage: Usage
    created_at: float
    updated_at: float
    metadata: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Session:
        """Build a session from a ``SELECT * FROM sessions`` row."""
        usage = Usage(**{column: row[column] for column in USAGE_COUNTS}, cost_usd=row["cost_usd"])
        return cls(
            id=row["id"],
            parent_id=row["parent_id"],
            parent_tool_call_id=row["parent_tool_call_id"],
            project_path=Path(row["project_path"]),
            title=row["title"],
            agent_name=row["agent_name"],
            model=row["model"],
            status=row["status"],
            usage=usage,
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            metadata=json.loads(row["metadata"]),
        )


class SessionStore:
    """Create, find, update and delete stored sessions, and hold the ones this process runs.

    Args:
        db: The open database.
        clock: Returns the current time in seconds; tests pass a fake one.
        holder: The process this store holds sessions for; this process by default.

    """

    def __init__(
        self,
        db: Database,
        *,
        clock: Callable[[], float] = time.time,
        holder: ProcessIdentity | None = None,
    ) -> None:
        self._db = db
        self._clock = clock
        self._holder = holder or ProcessIdentity.current()

    def create(
        self,
        project_path: Path | str,
        *,
        agent_name: str = "coder",
        model: str = "",
        title: str = "",
        parent_id: str | None = None,
        parent_tool_call_id: str | None = None,
        session_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Session:
        """Create and store a new idle session.

        Args:
            project_path: The directory the session works in.
            agent_name: The agent spec the session runs.
            model: The ``provider:model`` string it uses.
            title: A short human title.
            parent_id: The parent session, for a sub-agent's session.
            parent_tool_call_id: The parent's tool call that starts this session.
            session_id: The id to use; a new one is made when ``None``.
            metadata: Initial free-form data.

        Returns:
            The stored session.

        Raises:
            SessionNotFoundError: ``parent_id`` names no stored session.
            StoreError: The id is taken, or the database failed.

        """
        now = self._clock()
        session = Session(
            id=session_id or new_session_id(),
            parent_id=parent_id,
            parent_tool_call_id=parent_tool_call_id,
            project_path=Path(project_path),
            title=title,
            agent_name=agent_name,
            model=model,
            status="idle",
            usage=Usage(),
            created_at=now,
            updated_at=now,
            metadata=dict(metadata or {}),
        )
        with self._db.transaction() as connection:
            if parent_id is not None and not _exists(connection, parent_id):
                raise _not_found(parent_id)
            connection.execute(
                "INSERT INTO sessions (id, parent_id, parent_tool_call_id, project_path, title, agent_name,"
                " model, status, created_at, updated_at, metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    session.id,
                    parent_id,
                    parent_tool_call_id,
                    str(session.project_path),
                    title,
                    agent_name,
                    model,
                    session.status,
                    now,
                    now,
                    json.dumps(session.metadata),
                ),
            )
        return session

    def get(self, id_or_prefix: str) -> Session:
        """Return the session with this id, or the only session whose id starts with it.

        Raises:
            SessionNotFoundError: No session matches, or the prefix matches several.

        """
        if not id_or_prefix:
            raise _not_found(id_or_prefix)
        row = self._db.fetch_one("SELECT * FROM sessions WHERE id = ?", (id_or_prefix,))
        if row is not None:
            return self._session(row)
        rows = self._db.fetch_all(
            "SELECT * FROM sessions WHERE id >= ? AND id < ? ORDER BY id LIMIT 6",
            (id_or_prefix, id_or_prefix + _PREFIX_END),
        )
        if len(rows) == 1:
            return self._session(rows[0])
        if len(rows) > 1:
            shown = ", ".join(row["id"] for row in rows[:5])
            raise SessionNotFoundError(
                f"'{id_or_prefix}' matches several sessions ({shown}{', ...' if len(rows) > 5 else ''})",
                hint=f"give more characters of the id; {LIST_HINT}",
            )
        raise _not_found(id_or_prefix)

    def list(
        self,
        project_path: Path | str | None = None,
        *,
        include_children: bool = False,
        limit: int | None = 50,
    ) -> builtins.list[Session]:
        """Return sessions, most recently updated first.

        Args:
            project_path: Only sessions of this directory; all when ``None``.
            include_children: Include sub-agent sessions, not only top-level ones.
            limit: At most this many; no limit when ``None``.

        """
        conditions: builtins.list[str] = []
        params: builtins.list[Any] = []
        if project_path is not None:
            conditions.append("project_path = ?")
            params.append(str(project_path))
        if not include_children:
            conditions.append("parent_id IS NULL")
        where = f"WHERE {' AND '.join(conditions)}" if conditions else ""
        params.append(-1 if limit is None else limit)
        rows = self._db.fetch_all(
            f"SELECT * FROM sessions {where} ORDER BY updated_at DESC, id DESC LIMIT ?", params
        )
        return [self._session(row) for row in rows]

    def latest(self, project_path: Path | str) -> Session | None:
        """Return the most recently updated top-level session of a directory, if any."""
        sessions = self.list(project_path, limit=1)
        return sessions[0] if sessions else None

    def children(self, session_id: str) -> builtins.list[Session]:
        """Return the direct sub-agent sessions of a session, oldest first."""
        rows = self._db.fetch_all(
            "SELECT * FROM sessions WHERE parent_id = ? ORDER BY created_at, id", (session_id,)
        )
        return [self._session(row) for row in rows]

    def set_status(self, session_id: str, status: str) -> None:
        """Set a session's status (``running``, ``completed``, a stop reason, ...).

        ``running`` also records this process as the session's holder, so that the session reads
        as ``interrupted`` if the process dies before setting another status.

        Raises:
            SessionNotFoundError: No session has this id.

        """
        if status == "running":
            holder, now = self._holder, self._clock()
            cursor = self._db.execute(
                "UPDATE sessions SET status = ?, lease_pid = ?, lease_host = ?, lease_start = ?,"
                " lease_heartbeat = ?, updated_at = ? WHERE id = ?",
                (status, holder.pid, holder.host, holder.start, now, now, session_id),
            )
            if cursor.rowcount == 0:
                raise _not_found(session_id)
        else:
            self._update(session_id, "status = ?", (status,))

    def acquire(self, session_id: str) -> None:
        """Hold a session for this process until :meth:`release`; holding it again is harmless.

        Raises:
            SessionInUseError: Another live process holds it (its holder is named).
            SessionNotFoundError: No session has this id.

        """
        holder = self._holder
        now = self._clock()
        with self._db.transaction() as connection:
            row = connection.execute(
                "SELECT lease_pid, lease_host, lease_start, lease_heartbeat FROM sessions WHERE id = ?",
                (session_id,),
            ).fetchone()
            if row is None:
                raise _not_found(session_id)
            current = holder_of(row)
            live = current is not None and holder_is_live(current, row[3] or 0.0, clock=lambda: now)
            if current is not None and current != holder and live:
                where = "" if current.host == holder.host else f" on {current.host}"
                raise SessionInUseError(
                    f"session {session_id} is in use by another nestor (pid {current.pid}{where})",
                    hint=f"let that run end or stop it (kill {current.pid}), then resume; "
                    "or start a new session without --resume",
                )
            connection.execute(
                "UPDATE sessions SET lease_pid = ?, lease_host = ?, lease_start = ?, lease_heartbeat = ?"
                " WHERE id = ?",
                (holder.pid, holder.host, holder.start, now, session_id),
            )

    def release(self, session_id: str) -> None:
        """Stop holding a session (nothing happens when this process does not hold it)."""
        holder = self._holder
        self._db.execute(
            "UPDATE sessions SET lease_pid = NULL, lease_host = NULL, lease_start = NULL,"
            " lease_heartbeat = NULL WHERE id = ? AND lease_pid = ? AND lease_host = ? AND lease_start = ?",
            (session_id, holder.pid, holder.host, holder.start),
        )

    def heartbeat(self) -> None:
        """Tell other processes that this one still runs the sessions it holds."""
        holder = self._holder
        self._db.execute(
            "UPDATE sessions SET lease_heartbeat = ?"
            " WHERE lease_pid = ? AND lease_host = ? AND lease_start = ?",
            (self._clock(), holder.pid, holder.host, holder.start),
        )

    def set_title(self, session_id: str, title: str) -> None:
        """Set a session's title.

        Raises:
            SessionNotFoundError: No session has this id.

        """
        self._update(session_id, "title = ?", (title,))

    def set_model(self, session_id: str, model: str) -> None:
        """Record the ``provider:model`` a session now uses.

        Raises:
            SessionNotFoundError: No session has this id.

        """
        self._update(session_id, "model = ?", (model,))

    def reparent(self, session_id: str, parent_id: str) -> None:
        """Make ``session_id`` a child of ``parent_id`` (a sub-agent resumed under another parent).

        Usage already counted stays with the old ancestors; what the session spends from now on
        rolls up to the new ones.

        Raises:
            SessionNotFoundError: Either session does not exist.
            StoreError: ``parent_id`` is ``session_id`` or one of its descendants (a cycle).

        """
        with self._db.transaction() as connection:
            if not _exists(connection, parent_id):
                raise _not_found(parent_id)
            ancestors = connection.execute(LINEAGE_IDS, (parent_id,)).fetchall()
            if any(row[0] == session_id for row in ancestors):
                raise StoreError(
                    f"cannot make {session_id} a child of its own descendant {parent_id}",
                    hint="resume the sub-agent from an agent outside its own tree",
                )
            cursor = connection.execute(
                "UPDATE sessions SET parent_id = ?, updated_at = ? WHERE id = ?",
                (parent_id, self._clock(), session_id),
            )
            if cursor.rowcount == 0:
                raise _not_found(session_id)

    def update_metadata(self, session_id: str, values: Mapping[str, Any]) -> dict[str, Any]:
        """Merge ``values`` into a session's metadata (a key set to ``None`` is removed).

        Returns:
            The metadata after the change.

        Raises:
            SessionNotFoundError: No session has this id.

        """
        with self._db.transaction() as connection:
            row = connection.execute("SELECT metadata FROM sessions WHERE id = ?", (session_id,)).fetchone()
            if row is None:
                raise _not_found(session_id)
            metadata: dict[str, Any] = json.loads(row[0])
            for key, value in values.items():
                if value is None:
                    metadata.pop(key, None)
                else:
                    metadata[key] = value
            connection.execute(
                "UPDATE sessions SET metadata = ?, updated_at = ? WHERE id = ?",
                (json.dumps(metadata), self._clock(), session_id),
            )
        return metadata

    def add_usage(self, session_id: str, usage: Usage, *, roll_up: bool = True) -> None:
        """Add usage to a session and, when ``roll_up``, to every ancestor, in one transaction.

        A ``None`` cost adds nothing to the cost columns, so a total stays ``None`` until some
        request had a price.

        Raises:
            SessionNotFoundError: No session has this id.

        """
        cursor = self._db.execute(*add_usage_statement(session_id, usage, now=self._clock(), roll_up=roll_up))
        if cursor.rowcount == 0:
            raise _not_found(session_id)

    def delete(self, session_id: str) -> None:
        """Delete a session with its messages and, recursively, its sub-agent sessions.

        Raises:
            SessionNotFoundError: No session has this id.

        """
        if self._db.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount == 0:
            raise _not_found(session_id)

    def delete_if_unused(self, session_id: str) -> bool:
        """Delete an unused session (no holder, request, message nor sub-agent); True if it was."""
        deleted = self._db.execute(
            "DELETE FROM sessions WHERE id = ?1 AND lease_pid IS NULL AND requests = 0"
            " AND NOT EXISTS (SELECT 1 FROM messages WHERE session_id = ?1)"
            " AND NOT EXISTS (SELECT 1 FROM sessions WHERE parent_id = ?1)",
            (session_id,),
        )
        return deleted.rowcount > 0

    def _session(self, row: sqlite3.Row) -> Session:
        """The session of a ``SELECT *`` row; ``running`` becomes ``interrupted`` when its holder is gone."""
        session = Session.from_row(row)
        if session.status == "running":
            holder = holder_of((row["lease_pid"], row["lease_host"], row["lease_start"]))
            heartbeat = row["lease_heartbeat"] or 0.0
            if holder is None or not holder_is_live(holder, heartbeat, clock=self._clock):
                session.status = "interrupted"
        return session

    def _update(self, session_id: str, assignment: str, params: tuple[Any, ...]) -> None:
        cursor = self._db.execute(
            f"UPDATE sessions SET {assignment}, updated_at = ? WHERE id = ?",
            (*params, self._clock(), session_id),
        )
        if cursor.rowcount == 0:
            raise _not_found(session_id)


def _exists(connection: sqlite3.Connection, session_id: str) -> bool:
    return connection.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is not None


def _not_found(session_id: str) -> SessionNotFoundError:
    return SessionNotFoundError(f"no session matches '{session_id}'", hint=LIST_HINT)
