"""Stored messages: a session's history, one pydantic-ai message per row, in order.

Each message is committed on its own as soon as it is appended, so a process killed at any
moment loses at most the message it was writing. A row holds one ``ModelMessage`` serialized
by pydantic-ai's ``ModelMessagesTypeAdapter``, which keeps every part (tool calls, tool
returns, thinking, ...) exactly as the model layer produced it.
"""

from __future__ import annotations

import builtins
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nestor.core.errors import SessionNotFoundError, StoreError
from nestor.core.usage import Usage
from nestor.store.db import MOVE_ASIDE_HINT, Database
from nestor.store.rollup import add_usage_statement
from nestor.store.sessions import LIST_HINT

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage


@dataclass(frozen=True, slots=True)
class MessageRecord:
    """One stored message with its bookkeeping, as ``nestor sessions show`` displays it.

    Attributes:
        seq: The message's 0-based position in its session.
        kind: ``request`` (to the model) or ``response`` (from it).
        message: The pydantic-ai message.
        usage: The tokens and cost of the request that produced a response, if recorded.
        created_at: When the message was stored, seconds since the epoch.

    """

    seq: int
    kind: str
    message: ModelMessage
    usage: Usage | None
    created_at: float


def prompt_metadata() -> dict[str, Any]:
    """The metadata that marks the request starting a run with a prompt (what ``/rewind`` lists)."""
    return {"nestor": {"prompt": True}}


StoredRow = tuple[int, str, str, str | None, float]
"""A message as stored: seq, kind, the message's JSON, its usage's JSON (or None), created_at."""

_INSERT_AT_END = """
    INSERT INTO messages (session_id, seq, kind, data, usage, created_at)
    SELECT ?1, coalesce(max(seq) + 1, 0), ?2, ?3, ?4, ?5 FROM messages WHERE session_id = ?1
    RETURNING seq
"""


class MessageStore:
    """Append and read the messages of stored sessions.

    Args:
        db: The open database.
        clock: Returns the current time in seconds; tests pass a fake one.

    """

    def __init__(self, db: Database, *, clock: Callable[[], float] = time.time) -> None:
        self._db = db
        self._clock = clock

    def append(
        self,
        session_id: str,
        message: ModelMessage,
        *,
        usage: Usage | None = None,
        add_to_totals: bool = False,
    ) -> int:
        """Store a message at the end of a session's history and commit it at once.

        Also marks the session as updated now.

        Args:
            session_id: The session the message belongs to.
            message: The request or response to store.
            usage: The usage of the request that produced a response.
            add_to_totals: Also add ``usage`` to the session's totals and every ancestor's, in the
                same transaction (one commit per response instead of two).

        Returns:
            The message's 0-based position in the session.

        Raises:
            SessionNotFoundError: No session has this id.
            StoreError: The database failed.

        """
        from pydantic_ai.messages import ModelMessagesTypeAdapter

        # Serialize before taking the database lock: it is the slow part of an append.
        data = ModelMessagesTypeAdapter.dump_json([message]).decode()
        usage_json = None if usage is None else json.dumps(usage.to_dict())
        now = self._clock()
        with self._db.transaction() as connection:
            # The totals update also stamps updated_at (on the whole lineage): one statement less.
            if add_to_totals and usage is not None:
                touched = connection.execute(*add_usage_statement(session_id, usage, now=now, roll_up=True))
            else:
                touched = connection.execute(
                    "UPDATE sessions SET updated_at = ? WHERE id = ?", (now, session_id)
                )
            if touched.rowcount == 0:
                raise SessionNotFoundError(f"no session matches '{session_id}'", hint=LIST_HINT)
            seq: int = connection.execute(
                _INSERT_AT_END, (session_id, message.kind, data, usage_json, now)
            ).fetchone()[0]
        return seq

    def list(self, session_id: str, *, since: int = 0) -> builtins.list[ModelMessage]:
        """Return a session's messages in order (empty for an unknown session).

        Args:
            session_id: The session.
            since: Only the messages from this position on (decoding is the slow part of a load).

        Raises:
            StoreError: A stored message cannot be read back.

        """
        rows = self._db.fetch_all(
            "SELECT seq, data FROM messages WHERE session_id = ? AND seq >= ? ORDER BY seq",
            (session_id, since),
        )
        return [self._decode(session_id, row["seq"], row["data"]) for row in rows]

    def marked(self, session_id: str, key: str) -> builtins.list[tuple[int, Any]]:
        """Return the position and value of every request whose metadata holds ``key``, in order.

        Read by SQLite from the stored JSON, without decoding the messages.

        Args:
            session_id: The session.
            key: A dotted path inside a request's metadata (``nestor.compaction``).

        """
        path = f"$[0].metadata.{key}"
        needle = json.dumps(key.rsplit(".", 1)[-1])  # a cheap test before parsing the row's JSON
        rows = self._db.fetch_all(
            "SELECT seq, json_extract(data, ?1), json_type(data, ?1) FROM messages"
            " WHERE session_id = ?2 AND kind = 'request'"
            " AND instr(data, ?3) > 0 AND json_extract(data, ?1) IS NOT NULL ORDER BY seq",
            (path, session_id, needle),
        )
        # json_extract returns objects and arrays as JSON text, other values as they are.
        return [(row[0], json.loads(row[1]) if row[2] in ("object", "array") else row[1]) for row in rows]

    def prompts(self, session_id: str) -> builtins.list[tuple[int, str]]:
        """The position and text of each request that started a run with a prompt, in order.

        Read by SQLite from the stored JSON (the mark is :func:`prompt_metadata`); the text is
        the request's last part (prompts queued before it come first), the text items of a
        prompt that carries images too.
        """
        rows = self._db.fetch_all(
            "SELECT seq, json_extract(data, '$[0].parts[#-1].content'),"
            " json_type(data, '$[0].parts[#-1].content') FROM messages"
            " WHERE session_id = ? AND kind = 'request' AND instr(data, '\"prompt\"') > 0"
            " AND json_extract(data, '$[0].metadata.nestor.prompt') = 1 ORDER BY seq",
            (session_id,),
        )
        return [(row[0], _prompt_text(row[1], row[2])) for row in rows]

    def export_rows(self, session_id: str) -> builtins.list[StoredRow]:
        """Return a session's rows as stored: seq, kind, the message's JSON, the usage's JSON, time.

        For exports, which print the stored JSON as it is instead of decoding and re-encoding it.
        """
        rows = self._db.fetch_all(
            "SELECT seq, kind, data, usage, created_at FROM messages WHERE session_id = ? ORDER BY seq",
            (session_id,),
        )
        return [(row[0], row[1], row[2], row[3], row[4]) for row in rows]

    def list_records(self, session_id: str) -> builtins.list[MessageRecord]:
        """Return a session's messages in order with their position, kind, usage and time.

        Raises:
            StoreError: A stored message cannot be read back.

        """
        rows = self._db.fetch_all(
            "SELECT seq, kind, data, usage, created_at FROM messages WHERE session_id = ? ORDER BY seq",
            (session_id,),
        )
        return [
            MessageRecord(
                seq=row["seq"],
                kind=row["kind"],
                message=self._decode(session_id, row["seq"], row["data"]),
                usage=None if row["usage"] is None else Usage.from_dict(json.loads(row["usage"])),
                created_at=row["created_at"],
            )
            for row in rows
        ]

    def count(self, session_id: str) -> int:
        """Return how many messages a session has (0 for an unknown session)."""
        row = self._db.fetch_one("SELECT count(*) FROM messages WHERE session_id = ?", (session_id,))
        return 0 if row is None else int(row[0])

    def _decode(self, session_id: str, seq: int, data: str) -> ModelMessage:
        # Imported here: pydantic-ai costs start-up time to commands that only list or export.
        import pydantic
        from pydantic_ai.messages import ModelMessagesTypeAdapter

        try:
            return ModelMessagesTypeAdapter.validate_json(data)[0]
        except (pydantic.ValidationError, IndexError) as exc:
            raise StoreError(
                f"message {seq} of session {session_id} in {self._db.path} cannot be read: "
                f"{(str(exc).splitlines() or [type(exc).__name__])[0]}",
                hint=f"it may come from another nestor version; if the file is damaged, {MOVE_ASIDE_HINT}",
            ) from exc


def _prompt_text(content: Any, json_type: str | None) -> str:
    """A stored prompt's text: the content itself, or the text items of a list (images left out)."""
    if json_type != "array":
        return content if isinstance(content, str) else str(content or "")
    items: list[Any] = json.loads(content)
    return "\n".join(item for item in items if isinstance(item, str))
