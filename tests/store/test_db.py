from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path

import pytest

from nestor.core.errors import StoreError
from nestor.store.db import APPLICATION_ID, SCHEMA_VERSION, Database, Migration, open_database

MIGRATION_A: Migration = (f"PRAGMA application_id = {APPLICATION_ID}", "CREATE TABLE a (x TEXT)")
MIGRATION_B: Migration = ("CREATE TABLE b (y TEXT)",)


def _raw(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


def _tables(db: Database) -> set[str]:
    return {row[0] for row in db.fetch_all("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _pragma(db: Database, name: str) -> object:
    row = db.fetch_one(f"PRAGMA {name}")
    assert row is not None
    return row[0]


def _insert_session(db: Database, session_id: str) -> None:
    db.execute(
        "INSERT INTO sessions (id, project_path, agent_name, created_at, updated_at)"
        " VALUES (?, '/p', 'coder', 1, 1)",
        (session_id,),
    )


def test_fresh_database_is_migrated_to_the_current_version(tmp_path: Path) -> None:
    with open_database(tmp_path / "nestor.db") as db:
        assert _pragma(db, "user_version") == SCHEMA_VERSION
        assert _pragma(db, "application_id") == APPLICATION_ID
        assert {"sessions", "messages"} <= _tables(db)
        indexes = {row[0] for row in db.fetch_all("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert {"sessions_by_project", "sessions_by_parent"} <= indexes


def test_open_creates_missing_parent_directories(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "data" / "nestor.db"
    with open_database(path) as db:
        assert db.path == path
    assert path.is_file()


def test_connection_runs_in_wal_mode_with_the_documented_pragmas(tmp_path: Path) -> None:
    with open_database(tmp_path / "nestor.db") as db:
        assert _pragma(db, "journal_mode") == "wal"
        assert _pragma(db, "synchronous") == 1  # NORMAL
        assert _pragma(db, "foreign_keys") == 1
        assert _pragma(db, "busy_timeout") == 5000


def test_reopening_keeps_data_and_does_not_migrate_again(tmp_path: Path) -> None:
    path = tmp_path / "nestor.db"
    with open_database(path) as db:
        _insert_session(db, "ses_1")
    with open_database(path) as db:
        assert _pragma(db, "user_version") == SCHEMA_VERSION
        assert [row["id"] for row in db.fetch_all("SELECT id FROM sessions")] == ["ses_1"]


def test_migrations_are_applied_in_order_from_the_stored_version(tmp_path: Path) -> None:
    path = tmp_path / "nestor.db"
    with open_database(path, migrations=[MIGRATION_A]) as db:
        assert _pragma(db, "user_version") == 1
        db.execute("INSERT INTO a VALUES ('kept')")
    with open_database(path, migrations=[MIGRATION_A, MIGRATION_B]) as db:
        assert _pragma(db, "user_version") == 2
        assert {"a", "b"} <= _tables(db)
        assert [row[0] for row in db.fetch_all("SELECT x FROM a")] == ["kept"]


def test_a_failing_migration_is_rolled_back_entirely(tmp_path: Path) -> None:
    path = tmp_path / "nestor.db"
    open_database(path, migrations=[MIGRATION_A]).close()
    broken: Migration = ("CREATE TABLE c (z TEXT)", "THIS IS NOT SQL")
    with pytest.raises(StoreError) as caught:
        open_database(path, migrations=[MIGRATION_A, broken])
    assert str(path) in caught.value.message
    with open_database(path, migrations=[MIGRATION_A]) as db:
        assert _pragma(db, "user_version") == 1
        assert "c" not in _tables(db)


def test_a_database_from_a_newer_nestor_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "nestor.db"
    open_database(path).close()
    with _raw(path) as raw:
        raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    raw.close()
    before = path.read_bytes()
    with pytest.raises(StoreError) as caught:
        open_database(path)
    assert f"version {SCHEMA_VERSION + 5}" in caught.value.message
    assert str(path) in caught.value.message
    assert caught.value.hint is not None and "upgrade nestor" in caught.value.hint
    assert path.read_bytes() == before


def test_a_garbage_file_is_refused_and_left_byte_for_byte_untouched(tmp_path: Path) -> None:
    path = tmp_path / "nestor.db"
    garbage = b"these bytes are not a database\x00\xff" * 300
    path.write_bytes(garbage)
    with pytest.raises(StoreError) as caught:
        open_database(path)
    assert str(path) in caught.value.message
    assert "not a SQLite database" in caught.value.message
    assert "\n" not in caught.value.message
    assert caught.value.hint is not None and "NESTOR_HOME" in caught.value.hint
    assert path.read_bytes() == garbage
    assert sorted(os.listdir(tmp_path)) == ["nestor.db"]  # no -wal or -shm left beside it


def test_a_directory_in_place_of_the_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "nestor.db"
    path.mkdir()
    with pytest.raises(StoreError) as caught:
        open_database(path)
    assert "directory" in caught.value.message
    assert str(path) in caught.value.message
    assert path.is_dir()


def test_a_parent_that_is_a_file_is_refused(tmp_path: Path) -> None:
    blocker = tmp_path / "data"
    blocker.write_text("not a directory")
    with pytest.raises(StoreError) as caught:
        open_database(blocker / "nestor.db")
    assert "directory" in caught.value.message
    assert blocker.read_text() == "not a directory"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their permissions")
def test_an_unreadable_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "nestor.db"
    open_database(path).close()
    path.chmod(0)
    try:
        with pytest.raises(StoreError) as caught:
            open_database(path)
        assert str(path) in caught.value.message
    finally:
        path.chmod(0o600)


def test_another_programs_sqlite_database_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with _raw(path) as raw:
        raw.execute("CREATE TABLE bookmarks (url TEXT)")
    raw.close()
    before = path.read_bytes()
    with pytest.raises(StoreError) as caught:
        open_database(path)
    assert "another program" in caught.value.message
    assert path.read_bytes() == before


def test_transaction_commits_on_success_and_rolls_back_on_error(tmp_path: Path) -> None:
    with open_database(tmp_path / "nestor.db") as db:
        with db.transaction() as connection:
            connection.execute(
                "INSERT INTO sessions (id, project_path, agent_name, created_at, updated_at)"
                " VALUES ('ses_ok', '/p', 'coder', 1, 1)"
            )
        with pytest.raises(RuntimeError), db.transaction() as connection:
            connection.execute(
                "INSERT INTO sessions (id, project_path, agent_name, created_at, updated_at)"
                " VALUES ('ses_lost', '/p', 'coder', 1, 1)"
            )
            raise RuntimeError("abort")
        assert [row["id"] for row in db.fetch_all("SELECT id FROM sessions")] == ["ses_ok"]
        # The rolled-back transaction released the write lock: writing still works.
        _insert_session(db, "ses_after")


def test_sqlite_failures_become_store_errors_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "nestor.db"
    with open_database(path) as db:
        with pytest.raises(StoreError) as caught:
            db.fetch_all("SELECT * FROM no_such_table")
        assert str(path) in caught.value.message
        assert "no such table" in caught.value.message
        _insert_session(db, "ses_1")
        with pytest.raises(StoreError):
            _insert_session(db, "ses_1")


def test_a_closed_database_raises_store_error(tmp_path: Path) -> None:
    db = open_database(tmp_path / "nestor.db")
    with db:
        pass
    with pytest.raises(StoreError):
        db.fetch_one("SELECT 1")
    db.close()  # closing twice is harmless


def test_writes_from_many_threads_are_serialized(tmp_path: Path) -> None:
    errors: list[BaseException] = []

    def write(worker: int) -> None:
        try:
            for index in range(40):
                with db.transaction() as connection:
                    connection.execute(
                        "INSERT INTO sessions (id, project_path, agent_name, created_at, updated_at)"
                        " VALUES (?, '/p', 'coder', 1, 1)",
                        (f"ses_{worker}_{index}",),
                    )
                db.fetch_one("SELECT count(*) FROM sessions")
        except BaseException as exc:
            errors.append(exc)

    with open_database(tmp_path / "nestor.db") as db:
        threads = [threading.Thread(target=write, args=(worker,)) for worker in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        row = db.fetch_one("SELECT count(*) FROM sessions")
        assert row is not None and row[0] == 8 * 40


def test_two_connections_to_one_file_see_each_others_commits(tmp_path: Path) -> None:
    path = tmp_path / "nestor.db"
    with open_database(path) as first, open_database(path) as second:
        _insert_session(first, "ses_shared")
        row = second.fetch_one("SELECT id FROM sessions")
        assert row is not None and row["id"] == "ses_shared"


def test_the_lease_migration_keeps_every_session_and_message_of_a_version_1_database(tmp_path: Path) -> None:
    from nestor.store.db import MIGRATIONS

    path = tmp_path / "nestor.db"
    with open_database(path, migrations=MIGRATIONS[:1]) as db:
        _insert_session(db, "ses_1")
        db.execute(
            "INSERT INTO messages (session_id, seq, kind, data, created_at)"
            " VALUES ('ses_1', 0, 'request', '[]', 1)"
        )
    with open_database(path) as db:
        assert _pragma(db, "user_version") == SCHEMA_VERSION
        row = db.fetch_one("SELECT id, status, lease_pid FROM sessions")
        assert row is not None and tuple(row) == ("ses_1", "idle", None)
        assert db.fetch_one("SELECT count(*) FROM messages")[0] == 1  # type: ignore[index]
