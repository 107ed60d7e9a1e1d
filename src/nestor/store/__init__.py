"""The session store, one SQLite file holding every session and message.

A layer above ``core``, beside ``providers``, ``config`` and ``bus``.

``open_database`` opens (and migrates) the file; ``SessionStore`` keeps the tree of sessions
with their live usage totals; ``MessageStore`` appends each message the moment it completes.
"""

from nestor.store.db import MIGRATIONS, SCHEMA_VERSION, Database, open_database
from nestor.store.messages import MessageRecord, MessageStore
from nestor.store.sessions import Session, SessionStore

__all__ = [
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "Database",
    "MessageRecord",
    "MessageStore",
    "Session",
    "SessionStore",
    "open_database",
]
