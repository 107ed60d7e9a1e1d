"""What the model sees of a stored history; making it fit to continue after a crash or a kill.

A compaction (``features/compaction.py``) appends a summary marked in its metadata with how many
messages before it stay visible; :func:`visible_history` is the latest summary, the kept messages,
and everything after it.

A process killed while tools ran leaves a response whose tool calls have no results; every
provider rejects such a history. :func:`repair` answers each such call with an ``interrupted``
result, so the conversation can go on and the model knows those calls did not finish.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
)

from nestor.runtime.kernel.compaction_mark import MARK_PATH, METADATA_KEY, CompactionMark, mark_from_data

if TYPE_CHECKING:
    from nestor.store.messages import MessageStore

INTERRUPTED_TEXT = "Interrupted: nestor stopped before this call finished; its effects, if any, are unknown."


def repair(history: list[ModelMessage]) -> ModelRequest | None:
    """Return the request that answers unanswered tool calls at the end of ``history``, if any."""
    if not history or not isinstance(history[-1], ModelResponse):
        return None
    calls = [part for part in history[-1].parts if isinstance(part, ToolCallPart)]
    if not calls:
        return None
    parts: list[ModelRequestPart] = [
        ToolReturnPart(
            call.tool_name, INTERRUPTED_TEXT, tool_call_id=call.tool_call_id, outcome="interrupted"
        )
        for call in calls
    ]
    return ModelRequest(parts=parts)


def compaction_mark(message: ModelMessage) -> CompactionMark | None:
    """Return the mark of a summary message, or None for any other message."""
    if not isinstance(message, ModelRequest) or not message.metadata:
        return None
    data = message.metadata.get(METADATA_KEY)
    if not isinstance(data, dict):
        return None
    return mark_from_data(data.get("compaction"))  # pyright: ignore[reportUnknownMemberType]


def visible_history(stored: Sequence[ModelMessage]) -> list[ModelMessage]:
    """Return what the model sees of a stored history: the latest summary onwards.

    That is the latest summary, then the messages it kept (the ones just before it in the store,
    earlier summaries skipped), then every message after it. Without a summary it is all of them.
    """
    for index in range(len(stored) - 1, -1, -1):
        mark = compaction_mark(stored[index])
        if mark is None:
            continue
        kept: list[ModelMessage] = []
        cursor = index - 1
        while cursor >= 0 and len(kept) < mark.kept_messages:
            if compaction_mark(stored[cursor]) is None:
                kept.append(stored[cursor])
            cursor -= 1
        kept.reverse()
        return [stored[index], *kept, *stored[index + 1 :]]
    return list(stored)


def load_visible_history(messages: MessageStore, session_id: str) -> list[ModelMessage]:
    """Read what the model sees of a stored session: :func:`visible_history`, decoding only that part.

    A long session's history is mostly summarised: the marks are found by SQLite in the stored
    JSON, and only the messages from the first kept one on are decoded.
    """
    stored = messages.marked(session_id, MARK_PATH)
    marks = [(seq, mark) for seq, data in stored if (mark := mark_from_data(data)) is not None]
    if not marks:
        return messages.list(session_id)
    mark_positions = {seq for seq, _ in marks}
    start, mark = marks[-1]
    kept = 0
    while start > 0 and kept < mark.kept_messages:  # earlier summaries are skipped, as visible_history does
        start -= 1
        if start not in mark_positions:
            kept += 1
    return visible_history(messages.list(session_id, since=start))


def measured_from(history: Sequence[ModelMessage]) -> int:
    """Index of the first message whose reported usage measures this visible history.

    Responses kept from before a leading summary reported the size of the uncompacted history.
    """
    mark = compaction_mark(history[0]) if history else None
    return 0 if mark is None else 1 + mark.kept_messages
