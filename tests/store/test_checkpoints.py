"""Stored checkpoints: rows and changes, copies for forks, pruning by age, and deletion with the session."""

from __future__ import annotations

from pathlib import Path

from nestor.store.checkpoints import CheckpointStore, NewChange
from nestor.store.db import open_database
from nestor.store.sessions import SessionStore


def test_checkpoints_are_read_back_with_their_changes_and_go_with_their_session(tmp_path: Path) -> None:
    db = open_database(tmp_path / "nestor.db")
    sessions, store = SessionStore(db), CheckpointStore(db)
    session = sessions.create(tmp_path)
    first = store.add(
        session_id=session.id, project_path="/p", prompt_seq=0, kind="prompt", tree="t1", parent_tree=None
    )
    second = store.add(
        session_id=session.id,
        project_path="/p",
        prompt_seq=0,
        kind="tool",
        tree="t2",
        parent_tree="t1",
        agent_id="ses_a",
        tool_call_id="c1",
        tool_name="bash",
        skipped=["big.bin"],
        changes=[NewChange("a.txt", "M", "ses_a", "c1"), NewChange("b.txt", "A", None, None)],
    )

    rows = store.of_session(session.id)
    assert [row.id for row in rows] == [first, second]
    assert rows[1].skipped == ("big.bin",) and [c.path for c in rows[1].changes] == ["a.txt", "b.txt"]
    assert [c.agent_id for c in store.changes_after("/p", first, ["a.txt", "b.txt"])] == ["ses_a", None]
    assert store.changes_after("/p", second, ["a.txt"]) == []
    assert store.kept_trees("/p") == {"t1", "t2"} and store.sessions("/p") == {session.id}

    store.mark_reverted([(second, "a.txt")])
    assert store.of_session(session.id)[1].changes[0].reverted

    sessions.delete(session.id)
    assert store.of_session(session.id) == [] and store.kept_trees("/p") == set()


def test_a_fork_copies_the_checkpoints_of_the_prompts_it_keeps(tmp_path: Path) -> None:
    db = open_database(tmp_path / "nestor.db")
    sessions, store = SessionStore(db), CheckpointStore(db)
    source, fork = sessions.create(tmp_path), sessions.create(tmp_path)
    for seq in (0, 4):
        store.add(
            session_id=source.id,
            project_path="/p",
            prompt_seq=seq,
            kind="tool",
            tree=f"t{seq}",
            parent_tree="t",
            agent_id="ses_child",
            changes=[NewChange("a.txt", "M", "ses_child", "c")],
        )

    store.copy(source.id, fork.id, {"ses_child": "ses_copy"}, before_seq=4)

    copied = store.of_session(fork.id)
    assert [row.tree for row in copied] == ["t0"]
    assert copied[0].agent_id == "ses_copy" and copied[0].changes[0].agent_id == "ses_copy"
    store.delete_from(source.id, 4)
    assert [row.tree for row in store.of_session(source.id)] == ["t0"]


def test_old_checkpoints_are_deleted_by_age(tmp_path: Path) -> None:
    db = open_database(tmp_path / "nestor.db")
    sessions = SessionStore(db)
    session = sessions.create(tmp_path)
    now = [1000.0]
    store = CheckpointStore(db, clock=lambda: now[0])
    store.add(
        session_id=session.id, project_path="/old", prompt_seq=0, kind="prompt", tree="t1", parent_tree=None
    )
    now[0] = 5000.0
    store.add(
        session_id=session.id, project_path="/new", prompt_seq=0, kind="prompt", tree="t2", parent_tree=None
    )

    assert store.delete_older_than(2000.0) == ["/old"]
    assert [row.tree for row in store.of_session(session.id)] == ["t2"]
