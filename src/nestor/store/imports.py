"""Sessions brought in from an export: a session tree run elsewhere (another machine, a batch's worker).

The rows keep their ids (a session id is random, so a tree exported from another store does not
collide with this one's), their usage as exported (the totals already include the descendants')
and their messages as stored there. A tree whose main session is already here is refused.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from nestor.core.errors import StoreError
from nestor.core.usage import Usage
from nestor.store.db import Database


@dataclass(frozen=True, slots=True)
class ImportedSession:
    """One session of an export, checked: its row's values and its messages' rows.

    Attributes:
        row: The ``sessions`` columns, by name.
        messages: ``(seq, kind, data, usage, created_at)`` per message, ``data`` as stored.

    """

    row: dict[str, Any]
    messages: list[tuple[int, str, str, str | None, float]]


def import_sessions(db: Database, sessions: list[ImportedSession]) -> str:
    """Insert a session tree (its main session first) in one transaction; return the main session's id.

    Raises:
        StoreError: The main session is already stored, or the database failed (nothing is kept).

    """
    main = sessions[0].row["id"]
    if db.fetch_one("SELECT 1 FROM sessions WHERE id = ?", (main,)) is not None:
        raise StoreError(f"session {main} is already in the store", hint="`nestor sessions show` shows it")
    columns = list(sessions[0].row)
    with db.transaction() as connection:
        for session in sessions:
            connection.execute(
                f"INSERT INTO sessions ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                [session.row[column] for column in columns],
            )
            connection.executemany(
                "INSERT INTO messages (session_id, seq, kind, data, usage, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                [(session.row["id"], *message) for message in session.messages],
            )
    return main


def session_row(data: dict[str, Any], parent_id: str | None) -> dict[str, Any]:
    """The ``sessions`` columns of an exported session's fields (``ValueError`` when one is wrong)."""
    usage = Usage.from_dict(_field(data, "usage", dict))
    return {
        "id": _field(data, "id", str),
        "parent_id": parent_id,
        "parent_tool_call_id": data.get("parent_tool_call_id")
        if isinstance(data.get("parent_tool_call_id"), str)
        else None,
        "project_path": _field(data, "project_path", str),
        "title": _field(data, "title", str),
        "agent_name": _field(data, "agent_name", str),
        "model": _field(data, "model", str),
        "status": _field(data, "status", str),
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
        "requests": usage.requests,
        "cost_usd": usage.cost_usd,
        "unpriced_requests": usage.unpriced_requests,
        "created_at": float(_field(data, "created_at", (int, float))),
        "updated_at": float(_field(data, "updated_at", (int, float))),
        "metadata": json.dumps(data.get("metadata") if isinstance(data.get("metadata"), dict) else {}),
    }


def message_row(entry: dict[str, Any]) -> tuple[int, str, str, str | None, float]:
    """A message's row from its exported entry (``ValueError`` when a field is wrong)."""
    kind = _field(entry, "kind", str)
    if kind not in ("request", "response"):
        raise ValueError(f"a message's kind is {kind!r}")
    usage = entry.get("usage")
    return (
        _field(entry, "seq", int),
        kind,
        json.dumps([_field(entry, "message", dict)]),
        None if usage is None else json.dumps(Usage.from_dict(_field(entry, "usage", dict)).to_dict()),
        float(_field(entry, "created_at", (int, float))),
    )


def _optional_text(data: dict[str, Any], name: str) -> str | None:
    value = data.get(name)
    return value if isinstance(value, str) else None


def _field(data: dict[str, Any], name: str, kind: type | tuple[type, ...]) -> Any:
    value = data.get(name)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ValueError(f"its {name!r} is missing or not a {getattr(kind, '__name__', 'number')}")
    return value
