"""What UIs read and change besides a conversation: stored sessions and messages, trusted folders.

``nestor sessions`` and ``nestor trust`` need neither a model nor the runtime: this module names
the stores they use and imports nothing heavier than the store itself (no model layer).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nestor.runtime.kernel.compaction_mark import CompactionMark, mark_from_data
from nestor.store import Database, MessageRecord, MessageStore, Session, SessionStore, open_database
from nestor.store.messages import StoredRow
from nestor.store.trust import TrustedFolders

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = [
    "CompactionMark",
    "Database",
    "MessageRecord",
    "MessageStore",
    "Session",
    "SessionStore",
    "StoredRow",
    "TrustedFolders",
    "compaction_mark",
    "mark_from_data",
    "open_database",
]


def compaction_mark(message: ModelMessage) -> CompactionMark | None:
    """The mark of a compaction's summary message, or None for any other message."""
    # Imported here: the history module brings pydantic-ai, which listing sessions does not need.
    from nestor.runtime.kernel.history import compaction_mark as mark_of

    return mark_of(message)
