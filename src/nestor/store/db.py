"""The SQLite connection behind the session store: open, configure, migrate, guard.

One database file holds every session and message. It runs in WAL mode with
``synchronous=NORMAL``: a commit survives the process being killed (only a power loss can
drop the last commits), and readers never block the writer. The schema is versioned with
``PRAGMA user_version`` and moved forward by an ordered list of migrations, each applied in
its own transaction. Any failure reaches the caller as a :class:`~nestor.core.errors.StoreError`
naming the file, and nestor never deletes or rewrites a file it cannot read.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any

from nestor.core.errors import StoreError
from nestor.store.checkpoints import CHECKPOINTS_SCHEMA

Migration = tuple[str, ...]
"""One schema step: SQL statements applied together in one transaction."""

# 'nest' in ASCII: marks the file as nestor's, so nestor never migrates another program's database.
APPLICATION_ID = 0x6E657374

BUSY_TIMEOUT_SECONDS = 5.0

MOVE_ASIDE_HINT = "move it aside or set NESTOR_HOME to another directory; your other data is untouched"

_SCHEMA_V1: Migration = (
    f"PRAGMA application_id = {APPLICATION_ID}",
    """
    CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        parent_id TEXT REFERENCES sessions(id) ON DELETE CASCADE,
        parent_tool_call_id TEXT,
        project_path TEXT NOT NULL,
        title TEXT NOT NULL DEFAULT '',
        agent_name TEXT NOT NULL,
        model TEXT NOT NULL DEFAULT '',
        status TEXT NOT NULL DEFAULT 'idle',
        input_tokens INTEGER NOT NULL DEFAULT 0,
        output_tokens INTEGER NOT NULL DEFAULT 0,
        cache_read_tokens INTEGER NOT NULL DEFAULT 0,
        cache_write_tokens INTEGER NOT NULL DEFAULT 0,
        reasoning_tokens INTEGER NOT NULL DEFAULT 0,
        requests INTEGER NOT NULL DEFAULT 0,
        cost_usd REAL,
        unpriced_requests INTEGER NOT NULL DEFAULT 0,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        metadata TEXT NOT NULL DEFAULT '{}'
    )
    """,
    """
    CREATE TABLE messages (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('request', 'response')),
        data TEXT NOT NULL,
        usage TEXT,
        created_at REAL NOT NULL,
        UNIQUE (session_id, seq)
    )
    """,
    "CREATE INDEX sessions_by_project ON sessions(project_path, updated_at)",
    "CREATE INDEX sessions_by_parent ON sessions(parent_id)",
)

# Who runs a session (see store/lease.py); NULL columns mean nobody holds it.
_SCHEMA_V2: Migration = (
    "ALTER TABLE sessions ADD COLUMN lease_pid INTEGER",
    "ALTER TABLE sessions ADD COLUMN lease_host TEXT",
    "ALTER TABLE sessions ADD COLUMN lease_start TEXT",
    "ALTER TABLE sessions ADD COLUMN lease_heartbeat REAL",
)

# What the user approved of a project's definitions (see store/approvals.py).
_SCHEMA_V3: Migration = (
    """
    CREATE TABLE approvals (
        kind TEXT NOT NULL,
        project_path TEXT NOT NULL,
        name TEXT NOT NULL,
        digest TEXT NOT NULL,
        approved_at REAL NOT NULL,
        PRIMARY KEY (kind, project_path, name, digest)
    )
    """,
)

# What the user declined of a project's definitions, so that it is not asked again (store/approvals.py).
_SCHEMA_V5: Migration = (
    """
    CREATE TABLE declines (
        kind TEXT NOT NULL,
        project_path TEXT NOT NULL,
        name TEXT NOT NULL,
        digest TEXT NOT NULL,
        declined_at REAL NOT NULL,
        PRIMARY KEY (kind, project_path, name, digest)
    )
    """,
)

MIGRATIONS: tuple[Migration, ...] = (_SCHEMA_V1, _SCHEMA_V2, _SCHEMA_V3, CHECKPOINTS_SCHEMA, _SCHEMA_V5)
"""Every schema step in order; migration ``i`` brings the database to version ``i + 1``."""

SCHEMA_VERSION = len(MIGRATIONS)
"""The schema version this nestor writes."""


class Database:
    """A SQLite connection shared by the stores, safe to call from several threads.

    The connection runs in autocommit mode; :meth:`transaction` opens explicit transactions.
    Every statement runs under one lock, because a connection shared across threads must not
    interleave one thread's reads with another thread's open transaction.
    """

    def __init__(self, connection: sqlite3.Connection, path: Path) -> None:
        self._connection = connection
        self._path = path
        self._lock = threading.Lock()

    @property
    def path(self) -> Path:
        """The database file."""
        return self._path

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """Run the block in one write transaction, committed when the block ends without error.

        Yields:
            The connection, to execute the transaction's statements on.

        Raises:
            StoreError: SQLite failed; the transaction was rolled back.

        """
        with self._lock, self._sqlite_errors():
            self._connection.execute("BEGIN IMMEDIATE")
            try:
                yield self._connection
            except BaseException:
                self._connection.rollback()
                raise
            self._connection.execute("COMMIT")

    def execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        """Run one statement on its own (it commits at once) and return its cursor.

        Raises:
            StoreError: SQLite failed.

        """
        with self._lock, self._sqlite_errors():
            return self._connection.execute(sql, params)

    def fetch_one(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Row | None:
        """Run a query and return its first row, or ``None`` when it has none.

        Raises:
            StoreError: SQLite failed.

        """
        with self._lock, self._sqlite_errors():
            return self._connection.execute(sql, params).fetchone()

    def fetch_all(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        """Run a query and return all its rows.

        Raises:
            StoreError: SQLite failed.

        """
        with self._lock, self._sqlite_errors():
            return self._connection.execute(sql, params).fetchall()

    def close(self) -> None:
        """Close the connection; closing twice is harmless."""
        with self._lock:
            self._connection.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @contextmanager
    def _sqlite_errors(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise StoreError(
                f"the session database {self._path} failed: {_describe(exc)}",
                hint=f"check the disk and the file; if it is damaged, {MOVE_ASIDE_HINT}",
            ) from exc


def open_database(path: Path, *, migrations: Sequence[Migration] = MIGRATIONS) -> Database:
    """Open (creating if needed) the session database at ``path`` and bring its schema up to date.

    Args:
        path: The database file; its parent directory is created when missing.
        migrations: The schema steps to apply; tests pass a shorter or longer list.

    Returns:
        The open database.

    Raises:
        StoreError: The file cannot be opened, is not a nestor database, is damaged, or was
            written by a newer nestor. The file is left exactly as it was.

    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _open_error(path, f"cannot create its directory ({exc.strerror or exc})") from exc
    if path.is_dir():
        raise _open_error(path, "it is a directory, not a file")
    try:
        connection = sqlite3.connect(
            path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None, check_same_thread=False
        )
    except sqlite3.Error as exc:
        raise _open_error(path, _describe(exc)) from exc
    try:
        _configure(connection, path, len(migrations))
        _migrate(connection, migrations)
    except sqlite3.Error as exc:
        connection.close()
        raise _open_error(path, _describe(exc)) from exc
    except BaseException:
        connection.close()
        raise
    connection.row_factory = sqlite3.Row
    return Database(connection, path)


def _configure(connection: sqlite3.Connection, path: Path, known_version: int) -> None:
    """Set the connection's pragmas, after checking (read-only) that the file is ours and not too new."""
    connection.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")
    connection.execute("PRAGMA foreign_keys = ON")
    # The checks come before journal_mode, which would write to a file we must leave alone.
    version = _user_version(connection)
    if version > known_version:
        raise StoreError(
            f"the session database {path} has schema version {version}, "
            f"but this nestor knows only up to version {known_version}",
            hint="upgrade nestor to use it, or set NESTOR_HOME to another directory",
        )
    application_id = connection.execute("PRAGMA application_id").fetchone()[0]
    has_tables = connection.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] > 0
    if (version > 0 and application_id != APPLICATION_ID) or (version == 0 and has_tables):
        raise _open_error(path, "it is a SQLite database of another program, not nestor's")
    connection.execute("PRAGMA journal_mode = WAL")
    connection.execute("PRAGMA synchronous = NORMAL")


def _migrate(connection: sqlite3.Connection, migrations: Sequence[Migration]) -> None:
    """Apply every migration past the file's version, each in its own transaction."""
    for target_version, statements in enumerate(migrations, start=1):
        if _user_version(connection) >= target_version:
            continue
        connection.execute("BEGIN IMMEDIATE")
        try:
            # Another process may have migrated while we waited for the write lock.
            if _user_version(connection) < target_version:
                for statement in statements:
                    connection.execute(statement)
                connection.execute(f"PRAGMA user_version = {target_version}")
            connection.execute("COMMIT")
        except BaseException:
            connection.rollback()
            raise


def _user_version(connection: sqlite3.Connection) -> int:
    return int(connection.execute("PRAGMA user_version").fetchone()[0])


def _describe(exc: sqlite3.Error) -> str:
    """Turn a SQLite error into a short cause a user can act on."""
    text = str(exc)
    if text == "file is not a database":
        return "it is not a SQLite database (damaged, or another kind of file)"
    if text == "unable to open database file":
        return "it cannot be opened (check its permissions)"
    if text == "database disk image is malformed":
        return "it is damaged"
    return text.splitlines()[0] if text else type(exc).__name__


def _open_error(path: Path, cause: str) -> StoreError:
    return StoreError(f"cannot use the session database {path}: {cause}", hint=MOVE_ASIDE_HINT)
