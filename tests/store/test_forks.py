"""Forks of a session tree under new ids, and a conversation cut back to a prompt."""

from __future__ import annotations

from pathlib import Path

from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from nestor.store.checkpoints import CheckpointStore, NewChange
from nestor.store.db import open_database
from nestor.store.forks import cut_session, fork_session
from nestor.store.messages import MessageStore
from nestor.store.sessions import SessionStore


def test_a_fork_copies_the_messages_before_a_point_and_the_sub_agents_they_started(tmp_path: Path) -> None:
    db = open_database(tmp_path / "nestor.db")
    sessions, messages, checkpoints = SessionStore(db), MessageStore(db), CheckpointStore(db)
    root = sessions.create(tmp_path, title="work")
    early = sessions.create(
        tmp_path, parent_id=root.id, parent_tool_call_id="call_early", agent_name="explore"
    )
    late = sessions.create(tmp_path, parent_id=root.id, parent_tool_call_id="call_late")
    grandchild = sessions.create(tmp_path, parent_id=early.id, parent_tool_call_id="call_deep")
    messages.append(root.id, ModelRequest([UserPromptPart("first")]))
    messages.append(
        root.id, ModelResponse([ToolCallPart("task", {"prompt": "look"}, tool_call_id="call_early")])
    )
    messages.append(
        root.id,
        ModelRequest([ToolReturnPart("task", f"report [agent {early.id}]", tool_call_id="call_early")]),
    )
    messages.append(root.id, ModelRequest([UserPromptPart("second")]))
    messages.append(
        root.id, ModelResponse([ToolCallPart("task", {"prompt": "more"}, tool_call_id="call_late")])
    )
    messages.append(early.id, ModelResponse([TextPart(f"I am {early.id}")]))
    messages.append(grandchild.id, ModelResponse([TextPart("deep")]))
    checkpoints.add(
        session_id=root.id,
        project_path="/p",
        prompt_seq=0,
        kind="tool",
        tree="t1",
        parent_tree="t0",
        agent_id=early.id,
        changes=[NewChange("a.txt", "A", early.id, "c")],
    )

    fork = fork_session(db, sessions, checkpoints, root.id, before_seq=3, title="work (fork)")

    assert fork.title == "work (fork)" and fork.metadata == {"forked_from": root.id, "forked_at": 3}
    assert messages.count(fork.id) == 3 and messages.count(root.id) == 5
    copies = sessions.children(fork.id)
    assert [copy.agent_name for copy in copies] == ["explore"] and copies[0].id != early.id
    assert (
        copies[0].id in messages.export_rows(fork.id)[2][2]
        and early.id not in messages.export_rows(fork.id)[2][2]
    )
    assert f"I am {copies[0].id}" in messages.export_rows(copies[0].id)[0][2]
    assert len(sessions.children(copies[0].id)) == 1  # the grandchild, copied too
    assert checkpoints.of_session(fork.id)[0].changes[0].agent_id == copies[0].id
    assert [child.id for child in sessions.children(root.id)] == [
        early.id,
        late.id,
    ]  # the original is untouched


def test_cutting_a_conversation_removes_the_later_messages_and_what_only_they_started(tmp_path: Path) -> None:
    db = open_database(tmp_path / "nestor.db")
    sessions, messages, checkpoints = SessionStore(db), MessageStore(db), CheckpointStore(db)
    root = sessions.create(tmp_path)
    kept = sessions.create(tmp_path, parent_id=root.id, parent_tool_call_id="call_kept")
    dropped = sessions.create(tmp_path, parent_id=root.id, parent_tool_call_id="call_dropped")
    messages.append(root.id, ModelResponse([ToolCallPart("task", {}, tool_call_id="call_kept")]))
    messages.append(root.id, ModelResponse([ToolCallPart("task", {}, tool_call_id="call_dropped")]))
    for seq in (0, 1):
        checkpoints.add(
            session_id=root.id, project_path="/p", prompt_seq=seq, kind="prompt", tree="t", parent_tree=None
        )

    cut_session(db, checkpoints, root.id, 1)

    assert messages.count(root.id) == 1
    assert [child.id for child in sessions.children(root.id)] == [kept.id]
    assert dropped.id not in {session.id for session in sessions.list(include_children=True)}
    assert [row.prompt_seq for row in checkpoints.of_session(root.id)] == [0]
