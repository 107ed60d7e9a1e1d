from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic_ai.messages import (
    BinaryContent,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.usage import RequestUsage

from nestor.core.errors import SessionNotFoundError, StoreError
from nestor.core.usage import Usage
from nestor.store import Database, MessageStore, SessionStore, open_database
from nestor.store.messages import prompt_metadata


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    with open_database(tmp_path / "nestor.db") as database:
        yield database


@pytest.fixture
def sessions(db: Database) -> SessionStore:
    return SessionStore(db)


@pytest.fixture
def messages(db: Database) -> MessageStore:
    return MessageStore(db)


def _conversation() -> list[ModelMessage]:
    """A turn with every part kind the agent loop stores."""
    return [
        ModelRequest(
            parts=[
                SystemPromptPart(content="You are nestor."),
                UserPromptPart(content="Read setup.py and tell me the version."),
            ],
            instructions="be brief",
        ),
        ModelResponse(
            parts=[
                ThinkingPart(content="I should read the file.", signature="sig-1"),
                TextPart(content="Reading it."),
                ToolCallPart(tool_name="read", args={"path": "setup.py", "limit": 40}, tool_call_id="call_1"),
                ToolCallPart(tool_name="grep", args='{"pattern": "version"}', tool_call_id="call_2"),
            ],
            usage=RequestUsage(input_tokens=120, output_tokens=30, cache_read_tokens=100),
            model_name="test-model",
            provider_name="test",
            finish_reason="tool_call",
        ),
        ModelRequest(
            parts=[
                ToolReturnPart(tool_name="read", content="version='1.2.3'\n", tool_call_id="call_1"),
                ToolReturnPart(
                    tool_name="grep",
                    content={"matches": [{"line": 3, "text": "version"}]},
                    tool_call_id="call_2",
                ),
            ]
        ),
        ModelResponse(
            parts=[TextPart(content="The version is 1.2.3 — ünïcödé kept.")], model_name="test-model"
        ),
    ]


def _dump(history: list[ModelMessage]) -> bytes:
    return ModelMessagesTypeAdapter.dump_json(history)


def test_messages_round_trip_exactly_in_order(sessions: SessionStore, messages: MessageStore) -> None:
    session = sessions.create("/p")
    history = _conversation()
    seqs = [messages.append(session.id, message) for message in history]
    assert seqs == [0, 1, 2, 3]
    loaded = messages.list(session.id)
    assert [type(m) for m in loaded] == [ModelRequest, ModelResponse, ModelRequest, ModelResponse]
    assert _dump(loaded) == _dump(history)
    assert messages.count(session.id) == 4


def test_messages_survive_reopening(tmp_path: Path) -> None:
    path = tmp_path / "nestor.db"
    history = _conversation()
    with open_database(path) as db:
        session = SessionStore(db).create("/p")
        for message in history:
            MessageStore(db).append(session.id, message)
    with open_database(path) as db:
        assert _dump(MessageStore(db).list(session.id)) == _dump(history)


def test_sessions_keep_separate_sequences(sessions: SessionStore, messages: MessageStore) -> None:
    first = sessions.create("/p")
    second = sessions.create("/p")
    assert messages.append(first.id, ModelRequest(parts=[UserPromptPart(content="a0")])) == 0
    assert messages.append(second.id, ModelRequest(parts=[UserPromptPart(content="b0")])) == 0
    assert messages.append(first.id, ModelRequest(parts=[UserPromptPart(content="a1")])) == 1
    contents = [
        part.content for m in messages.list(first.id) for part in m.parts if isinstance(part, UserPromptPart)
    ]
    assert contents == ["a0", "a1"]
    assert messages.count(second.id) == 1


def test_list_reads_by_seq_not_by_insertion_order(
    db: Database, sessions: SessionStore, messages: MessageStore
) -> None:
    session = sessions.create("/p")
    for text in ("zero", "one", "two"):
        messages.append(session.id, ModelRequest(parts=[UserPromptPart(content=text)]))
    # Reverse the order of seq against row ids: reading must follow seq.
    db.execute("UPDATE messages SET seq = 10 - seq WHERE session_id = ?", (session.id,))
    loaded = messages.list(session.id)
    contents = [m.parts[0].content for m in loaded if isinstance(m.parts[0], UserPromptPart)]
    assert contents == ["two", "one", "zero"]


def test_prompts_are_the_marked_requests_with_the_text_of_a_prompt_that_carries_an_image(
    sessions: SessionStore, messages: MessageStore
) -> None:
    session = sessions.create("/p")
    image = BinaryContent(data=b"\x89PNG-bytes", media_type="image/png")
    messages.append(session.id, ModelRequest(parts=[UserPromptPart("plain")], metadata=prompt_metadata()))
    messages.append(session.id, ModelResponse(parts=[TextPart("ok")]))
    messages.append(session.id, ModelRequest(parts=[UserPromptPart("a notice")]))  # not a prompt's run
    prompt = UserPromptPart(["what is", image, "this?"])
    messages.append(session.id, ModelRequest(parts=[prompt], metadata=prompt_metadata()))

    assert messages.prompts(session.id) == [(0, "plain"), (3, "what is\nthis?")]


def test_records_carry_seq_kind_usage_and_time(db: Database, sessions: SessionStore) -> None:
    times = iter([50.0, 60.0])
    messages = MessageStore(db, clock=lambda: next(times))
    session = sessions.create("/p")
    request, response = _conversation()[:2]
    usage = Usage(input_tokens=120, output_tokens=30, cache_read_tokens=100, requests=1, cost_usd=None)
    messages.append(session.id, request)
    messages.append(session.id, response, usage=usage)

    records = messages.list_records(session.id)

    assert [(r.seq, r.kind, r.created_at) for r in records] == [(0, "request", 50.0), (1, "response", 60.0)]
    assert records[0].usage is None
    assert records[1].usage == usage
    assert _dump([r.message for r in records]) == _dump([request, response])


def test_append_marks_the_session_updated(db: Database, sessions: SessionStore) -> None:
    session = sessions.create("/p")
    MessageStore(db, clock=lambda: session.updated_at + 500).append(
        session.id, ModelRequest(parts=[UserPromptPart(content="hi")])
    )
    assert sessions.get(session.id).updated_at == session.updated_at + 500


def test_append_to_an_unknown_session_stores_nothing(db: Database, messages: MessageStore) -> None:
    with pytest.raises(SessionNotFoundError):
        messages.append("ses_nope", ModelRequest(parts=[UserPromptPart(content="lost")]))
    row = db.fetch_one("SELECT count(*) FROM messages")
    assert row is not None and row[0] == 0


def test_an_unknown_session_has_no_messages(messages: MessageStore) -> None:
    assert messages.list("ses_nope") == []
    assert messages.list_records("ses_nope") == []
    assert messages.count("ses_nope") == 0


def test_deleting_a_session_deletes_its_messages(
    db: Database, sessions: SessionStore, messages: MessageStore
) -> None:
    session = sessions.create("/p")
    for message in _conversation():
        messages.append(session.id, message)
    sessions.delete(session.id)
    assert messages.count(session.id) == 0
    row = db.fetch_one("SELECT count(*) FROM messages")
    assert row is not None and row[0] == 0


def test_an_unreadable_stored_message_raises_store_error(
    db: Database, sessions: SessionStore, messages: MessageStore
) -> None:
    session = sessions.create("/p")
    messages.append(session.id, ModelRequest(parts=[UserPromptPart(content="hi")]))
    db.execute('UPDATE messages SET data = \'[{"kind": "telegram"}]\'')
    with pytest.raises(StoreError) as caught:
        messages.list(session.id)
    assert "message 0" in caught.value.message and session.id in caught.value.message


CHILD_WRITER = """
import sys, time
from pathlib import Path
from pydantic_ai.messages import ModelRequest, UserPromptPart
from nestor.store import MessageStore, open_database

db = open_database(Path(sys.argv[1]))
store = MessageStore(db)
for index in range(3):
    store.append(sys.argv[2], ModelRequest(parts=[UserPromptPart(content=f"message {index}")]))
    print(f"appended {index}", flush=True)
with db.transaction() as connection:
    connection.execute(
        "INSERT INTO messages (session_id, seq, kind, data, created_at) VALUES (?, 3, 'request', '[]', 0)",
        (sys.argv[2],),
    )
    print("fourth in flight", flush=True)
    time.sleep(600)
"""


def test_a_killed_writer_loses_only_the_message_in_flight(tmp_path: Path) -> None:
    path = tmp_path / "nestor.db"
    with open_database(path) as db:
        session_id = SessionStore(db).create("/p").id

    child = subprocess.Popen(
        [sys.executable, "-c", CHILD_WRITER, str(path), session_id],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        reported = [child.stdout.readline().strip() for _ in range(4)]
        assert reported == ["appended 0", "appended 1", "appended 2", "fourth in flight"], (
            child.stderr.read() if child.stderr else ""
        )
        child.send_signal(signal.SIGKILL)
        assert child.wait() == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()

    with open_database(path) as db:
        store = MessageStore(db)
        loaded = store.list(session_id)
        assert [m.parts[0].content for m in loaded if isinstance(m.parts[0], UserPromptPart)] == [
            "message 0",
            "message 1",
            "message 2",
        ]
        assert len(loaded) == 3
        # The killed transaction left no lock behind: the next message takes the lost one's place.
        assert store.append(session_id, ModelRequest(parts=[UserPromptPart(content="after")])) == 3


def test_append_with_totals_adds_usage_to_the_session_and_its_ancestors(tmp_path: Path) -> None:
    database = open_database(tmp_path / "db.sqlite")
    sessions, messages = SessionStore(database), MessageStore(database)
    parent = sessions.create(tmp_path)
    child = sessions.create(tmp_path, parent_id=parent.id)
    response = ModelResponse(parts=[TextPart("hi")])
    messages.append(
        child.id, response, usage=Usage(input_tokens=10, output_tokens=5, requests=1, cost_usd=0.5)
    )
    assert sessions.get(child.id).usage.total_tokens == 0  # not asked to add to totals
    messages.append(
        child.id,
        response,
        usage=Usage(input_tokens=10, output_tokens=5, requests=1, cost_usd=0.5),
        add_to_totals=True,
    )
    for session_id in (child.id, parent.id):
        usage = sessions.get(session_id).usage
        assert (usage.total_tokens, usage.requests, usage.cost_usd) == (15, 1, 0.5)
    database.close()
