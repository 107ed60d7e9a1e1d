"""Sessions as JSON files: ``nestor sessions export`` (one session or its whole tree) and ``import``.

An export holds the session's row and every message as stored; with its tree, every sub-agent
session too (``sub_sessions``, parents before their children). ``nestor sessions import`` and a
batch's driver (a job run on another machine) read it back into this store under the same ids.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from nestor.core.errors import NestorError

if TYPE_CHECKING:
    from nestor.store import Database, Session, SessionStore
    from nestor.store.messages import StoredRow

MAX_IMPORT_SESSIONS = 10_000
"""A tree with more sessions than this is not a nestor export."""


def session_to_dict(session: Session) -> dict[str, Any]:
    """The JSON form of a session row (usage and cost included)."""
    return {
        "id": session.id,
        "parent_id": session.parent_id,
        "parent_tool_call_id": session.parent_tool_call_id,
        "project_path": str(session.project_path),
        "title": session.title,
        "agent_name": session.agent_name,
        "model": session.model,
        "status": session.status,
        "usage": session.usage.to_dict(),
        "cost_usd": session.usage.cost_usd,
        "created_at": session.created_at,
        "updated_at": session.updated_at,
        "metadata": session.metadata,
    }


def export_json(session: Session, rows: list[StoredRow], sub_sessions: list[str] | None = None) -> str:
    """A session with its messages as JSON text: each message is pydantic-ai's JSON plus nestor's usage.

    The messages are printed as stored, one per line (neither decoded nor re-encoded: a long
    session's export takes a fraction of the time); the session's fields are indented.
    ``sub_sessions`` are the exports of its descendants (:func:`export_tree_json`).
    """
    session_text = json.dumps(session_to_dict(session), indent=2).replace("\n", "\n  ")
    messages = _message_lines(rows)
    messages_text = "[\n    " + ",\n    ".join(messages) + "\n  ]" if messages else "[]"
    tree = ""
    if sub_sessions is not None:
        tree = ',\n  "sub_sessions": [' + ",".join(f"\n{text}" for text in sub_sessions) + "\n  ]"
    return f'{{\n  "session": {session_text},\n  "messages": {messages_text}{tree}\n}}'


def export_tree_json(database: Database, sessions: SessionStore, session_id: str) -> str:
    """A session and every sub-agent session below it, with all their messages, as one JSON text.

    Raises:
        SessionNotFoundError: No session has this id (or prefix).

    """
    from nestor.store import MessageStore

    messages = MessageStore(database)
    root = sessions.get(session_id)
    pending = list(sessions.children(root.id))
    subs: list[str] = []
    while pending:
        child = pending.pop(0)
        subs.append(export_json(child, messages.export_rows(child.id)))
        pending += sessions.children(child.id)
    return export_json(root, messages.export_rows(root.id), subs)


def import_json(database: Database, text: str, source: str) -> str:
    """Store the session tree of an export (``text``, read from ``source``); return its main session's id.

    Raises:
        NestorError: The text is not a nestor export (one line naming what is wrong in ``source``).
        StoreError: Its session is already stored, or the database failed.

    """
    from nestor.store.imports import ImportedSession, import_sessions, message_row, session_row

    try:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("it is not a JSON object")
        entries: list[Any] = [data, *_list(data, "sub_sessions")]
        if len(entries) > MAX_IMPORT_SESSIONS:
            raise ValueError(f"it holds more than {MAX_IMPORT_SESSIONS} sessions")
        known: set[str] = set()
        parsed: list[ImportedSession] = []
        for index, entry in enumerate(entries):
            if not isinstance(entry, dict) or not isinstance(entry.get("session"), dict):
                raise ValueError("a session entry has no 'session' object")
            fields: dict[str, Any] = entry["session"]
            parent = fields.get("parent_id")
            if index > 0 and parent not in known:
                raise ValueError(f"sub-agent session {fields.get('id')!r} names a parent not before it")
            row = session_row(fields, parent if index > 0 else None)
            known.add(row["id"])
            parsed.append(
                ImportedSession(row, [message_row(message) for message in _list(entry, "messages")])
            )
    except (ValueError, TypeError, KeyError) as error:
        raise NestorError(
            f"{source} is not a nestor session export: {error}",
            hint="give a file written by `nestor sessions export --tree`",
        ) from None
    return import_sessions(database, parsed)


def _list(data: dict[str, Any], name: str) -> list[Any]:
    value = data.get(name, [])
    if not isinstance(value, list):
        raise ValueError(f"its {name!r} is not a list")
    return value  # pyright: ignore[reportUnknownVariableType]


def _message_lines(rows: list[StoredRow]) -> list[str]:
    from nestor.app.records import mark_from_data
    from nestor.core.usage import Usage

    lines: list[str] = []
    for seq, kind, data, usage, created_at in rows:
        message: Any = json.loads(data)[0]
        metadata = message.get("metadata") if kind == "request" else None
        nestor = metadata.get("nestor") if isinstance(metadata, dict) else None
        mark = mark_from_data(nestor.get("compaction")) if isinstance(nestor, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        entry = {
            "seq": seq,
            "kind": kind,
            "created_at": created_at,
            "usage": None if usage is None else Usage.from_dict(json.loads(usage)).to_dict(),
            "compaction": None if mark is None else mark.to_metadata()["nestor"]["compaction"],
            "message": message,
        }
        lines.append(json.dumps(entry))
    return lines
