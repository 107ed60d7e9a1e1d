"""Session leases: one live process holds a session; a dead holder's lease is stale."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from nestor.core.errors import SessionInUseError
from nestor.store import Database, SessionStore, open_database
from nestor.store.lease import STALE_AFTER_S, ProcessIdentity, holder_is_live, process_start


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    with open_database(tmp_path / "nestor.db") as database:
        yield database


@pytest.fixture
def other_process() -> Iterator[subprocess.Popen[bytes]]:
    """A real live process of this host, to hold sessions in its name."""
    process = subprocess.Popen(["sleep", "60"])
    yield process
    process.kill()
    process.wait()


def test_a_session_held_by_a_live_process_is_refused_with_its_pid(
    db: Database, other_process: subprocess.Popen[bytes]
) -> None:
    mine = SessionStore(db)
    theirs = SessionStore(db, holder=ProcessIdentity.of(other_process.pid))
    session = mine.create("/p")
    theirs.acquire(session.id)
    with pytest.raises(SessionInUseError) as caught:
        mine.acquire(session.id)
    expected = f"session {session.id} is in use by another nestor (pid {other_process.pid})"
    assert caught.value.message == expected
    assert caught.value.hint is not None and f"kill {other_process.pid}" in caught.value.hint
    theirs.acquire(session.id)  # the holder itself may take it again


def test_the_lease_of_a_dead_process_is_stale_and_its_running_session_is_interrupted(
    db: Database, other_process: subprocess.Popen[bytes]
) -> None:
    mine = SessionStore(db)
    theirs = SessionStore(db, holder=ProcessIdentity.of(other_process.pid))
    session = mine.create("/p")
    theirs.acquire(session.id)
    theirs.set_status(session.id, "running")
    assert mine.get(session.id).status == "running"
    other_process.kill()
    other_process.wait()
    assert mine.get(session.id).status == "interrupted"
    assert [s.status for s in mine.list("/p")] == ["interrupted"]
    mine.acquire(session.id)  # a stale lease does not block


def test_running_without_any_holder_reads_as_interrupted(db: Database) -> None:
    store = SessionStore(db)
    session = store.create("/p")
    # A row written by a nestor from before leases: running, nobody recorded.
    db.execute("UPDATE sessions SET status = 'running' WHERE id = ?", (session.id,))
    assert store.get(session.id).status == "interrupted"
    store.set_status(session.id, "running")
    assert store.get(session.id).status == "running"


def test_a_reused_pid_does_not_keep_the_lease(db: Database) -> None:
    mine = SessionStore(db)
    session = mine.create("/p")
    me = ProcessIdentity.current()
    assert me.start  # this test runs where /proc exists
    # Our own pid, but recorded with another start: the holder was an earlier process with that pid.
    earlier = SessionStore(db, holder=ProcessIdentity(pid=me.pid, host=me.host, start="1"))
    earlier.acquire(session.id)
    mine.acquire(session.id)


def test_a_holder_on_another_host_is_live_while_its_heartbeat_is_fresh() -> None:
    remote = ProcessIdentity(pid=1, host=socket.gethostname() + "-elsewhere", start="5")
    assert holder_is_live(remote, 1000.0, clock=lambda: 1000.0 + STALE_AFTER_S - 1)
    assert not holder_is_live(remote, 1000.0, clock=lambda: 1000.0 + STALE_AFTER_S + 1)


def test_heartbeat_refreshes_and_release_frees_only_the_own_lease(
    db: Database, other_process: subprocess.Popen[bytes]
) -> None:
    now = [1000.0]
    mine = SessionStore(db, clock=lambda: now[0])
    theirs = SessionStore(db, clock=lambda: now[0], holder=ProcessIdentity.of(other_process.pid))
    held, other = mine.create("/p"), mine.create("/p")
    mine.acquire(held.id)
    theirs.acquire(other.id)
    now[0] = 2000.0
    mine.heartbeat()
    beats = {row[0]: row[1] for row in db.fetch_all("SELECT id, lease_heartbeat FROM sessions")}
    assert beats == {held.id: 2000.0, other.id: 1000.0}
    mine.release(other.id)  # not ours: still held
    with pytest.raises(SessionInUseError):
        mine.acquire(other.id)
    mine.release(held.id)
    assert db.fetch_one("SELECT lease_pid FROM sessions WHERE id = ?", (held.id,))[0] is None  # type: ignore[index]


def test_process_start_is_empty_for_a_pid_that_does_not_exist() -> None:
    assert process_start(2**22 + 12345) == ""
