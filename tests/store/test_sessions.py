from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic_ai.messages import ModelRequest, UserPromptPart

from nestor.core.errors import SessionNotFoundError, StoreError
from nestor.core.usage import Usage
from nestor.store import Database, MessageStore, SessionStore, open_database


class TickingClock:
    """A clock that moves one second forward at every reading."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    with open_database(tmp_path / "nestor.db") as database:
        yield database


@pytest.fixture
def clock() -> TickingClock:
    return TickingClock()


@pytest.fixture
def store(db: Database, clock: TickingClock) -> SessionStore:
    return SessionStore(db, clock=clock)


def test_create_stores_an_idle_session_with_defaults(store: SessionStore) -> None:
    created = store.create("/work/project")
    assert created.id.startswith("ses_")
    loaded = store.get(created.id)
    assert loaded == created
    assert loaded.project_path == Path("/work/project")
    assert loaded.agent_name == "coder"
    assert loaded.status == "idle"
    assert loaded.parent_id is None
    assert loaded.usage == Usage()
    assert loaded.usage.cost_usd is None
    assert loaded.metadata == {}
    assert loaded.created_at == loaded.updated_at


def test_create_keeps_every_given_field(store: SessionStore) -> None:
    parent = store.create(Path("/p"))
    child = store.create(
        Path("/p"),
        agent_name="explore",
        model="openai:gpt-5",
        title="look around",
        parent_id=parent.id,
        parent_tool_call_id="call_7",
        session_id="ses_chosen",
        metadata={"budget": 3},
    )
    assert child.id == "ses_chosen"
    assert store.get("ses_chosen") == child
    assert (child.agent_name, child.model, child.title) == ("explore", "openai:gpt-5", "look around")
    assert (child.parent_id, child.parent_tool_call_id) == (parent.id, "call_7")
    assert child.metadata == {"budget": 3}


def test_create_with_an_unknown_parent_is_refused(store: SessionStore) -> None:
    with pytest.raises(SessionNotFoundError):
        store.create("/p", parent_id="ses_missing")
    assert store.list(include_children=True) == []


def test_create_with_a_taken_id_is_refused(store: SessionStore) -> None:
    store.create("/p", session_id="ses_same")
    with pytest.raises(StoreError):
        store.create("/p", session_id="ses_same")


def test_sessions_survive_reopening(tmp_path: Path) -> None:
    path = tmp_path / "nestor.db"
    with open_database(path) as db:
        created = SessionStore(db).create("/p", title="kept", metadata={"k": [1, 2]})
    with open_database(path) as db:
        assert SessionStore(db).get(created.id) == created


def test_get_accepts_a_unique_prefix(store: SessionStore) -> None:
    first = store.create("/p", session_id="ses_aaa111")
    store.create("/p", session_id="ses_bbb222")
    assert store.get("ses_aa").id == first.id
    assert store.get("ses_aaa111").id == first.id


def test_get_refuses_an_ambiguous_prefix_and_names_the_matches(store: SessionStore) -> None:
    store.create("/p", session_id="ses_abc1")
    store.create("/p", session_id="ses_abc2")
    with pytest.raises(SessionNotFoundError) as caught:
        store.get("ses_abc")
    assert "ses_abc1" in caught.value.message and "ses_abc2" in caught.value.message
    assert caught.value.hint is not None and "more characters" in caught.value.hint


def test_an_exact_id_wins_over_longer_ids_it_prefixes(store: SessionStore) -> None:
    store.create("/p", session_id="ses_x")
    store.create("/p", session_id="ses_xy")
    assert store.get("ses_x").id == "ses_x"


@pytest.mark.parametrize("wanted", ["ses_nope", "", "ses_a%", "ses__"])
def test_get_of_an_unknown_id_says_how_to_find_one(store: SessionStore, wanted: str) -> None:
    store.create("/p", session_id="ses_abc")
    with pytest.raises(SessionNotFoundError) as caught:
        store.get(wanted)
    assert caught.value.hint is not None and "nestor sessions list" in caught.value.hint


def test_list_is_newest_first_and_filters_by_project(store: SessionStore) -> None:
    first = store.create("/one")
    second = store.create("/two")
    third = store.create("/one")
    assert [s.id for s in store.list()] == [third.id, second.id, first.id]
    assert [s.id for s in store.list("/one")] == [third.id, first.id]
    assert [s.id for s in store.list(Path("/two"))] == [second.id]
    assert store.list("/elsewhere") == []


def test_list_orders_by_last_update(store: SessionStore) -> None:
    first = store.create("/p")
    second = store.create("/p")
    store.set_title(first.id, "touched later")
    assert [s.id for s in store.list("/p")] == [first.id, second.id]


def test_list_hides_children_unless_asked_and_honours_limit(store: SessionStore) -> None:
    parent = store.create("/p")
    child = store.create("/p", parent_id=parent.id)
    assert [s.id for s in store.list()] == [parent.id]
    assert [s.id for s in store.list(include_children=True)] == [child.id, parent.id]
    for _ in range(5):
        store.create("/p")
    assert len(store.list(limit=3)) == 3
    assert len(store.list(include_children=True, limit=None)) == 7


def test_latest_is_the_newest_top_level_session_of_the_project(store: SessionStore) -> None:
    assert store.latest("/p") is None
    store.create("/p")
    newest = store.create("/p")
    store.create("/other")
    store.create("/p", parent_id=newest.id)  # a newer child is not a candidate
    latest = store.latest("/p")
    assert latest is not None and latest.id == newest.id


def test_children_are_the_direct_children_oldest_first(store: SessionStore) -> None:
    parent = store.create("/p")
    first = store.create("/p", parent_id=parent.id)
    second = store.create("/p", parent_id=parent.id)
    store.create("/p", parent_id=first.id)
    assert [s.id for s in store.children(parent.id)] == [first.id, second.id]
    assert store.children(second.id) == []


def test_setters_change_the_field_and_the_update_time(store: SessionStore) -> None:
    session = store.create("/p")
    store.set_status(session.id, "running")
    store.set_title(session.id, "fix the bug")
    store.set_model(session.id, "anthropic:claude")
    loaded = store.get(session.id)
    assert (loaded.status, loaded.title, loaded.model) == ("running", "fix the bug", "anthropic:claude")
    assert loaded.updated_at > session.updated_at
    store.set_status(session.id, "max_turns")  # any stop reason is a valid status
    assert store.get(session.id).status == "max_turns"


def test_setters_on_an_unknown_session_raise(store: SessionStore) -> None:
    with pytest.raises(SessionNotFoundError):
        store.set_status("ses_nope", "running")
    with pytest.raises(SessionNotFoundError):
        store.set_title("ses_nope", "x")
    with pytest.raises(SessionNotFoundError):
        store.update_metadata("ses_nope", {"a": 1})
    with pytest.raises(SessionNotFoundError):
        store.add_usage("ses_nope", Usage(requests=1))
    with pytest.raises(SessionNotFoundError):
        store.add_usage("ses_nope", Usage(requests=1), roll_up=False)
    with pytest.raises(SessionNotFoundError):
        store.delete("ses_nope")


def test_update_metadata_merges_and_removes_keys_set_to_none(store: SessionStore) -> None:
    session = store.create("/p", metadata={"keep": 1, "drop": 2})
    result = store.update_metadata(session.id, {"drop": None, "new": {"nested": True}})
    assert result == {"keep": 1, "new": {"nested": True}}
    assert store.get(session.id).metadata == result


def test_add_usage_rolls_up_through_every_ancestor(store: SessionStore) -> None:
    grandparent = store.create("/p")
    parent = store.create("/p", parent_id=grandparent.id)
    child = store.create("/p", parent_id=parent.id)
    uncle = store.create("/p", parent_id=grandparent.id)
    step = Usage(
        input_tokens=100,
        output_tokens=20,
        cache_read_tokens=50,
        cache_write_tokens=5,
        reasoning_tokens=7,
        requests=1,
        cost_usd=0.25,
    )

    store.add_usage(child.id, step)
    for session_id in (child.id, parent.id, grandparent.id):
        assert store.get(session_id).usage == step
    assert store.get(uncle.id).usage == Usage()

    store.add_usage(parent.id, step)
    assert store.get(child.id).usage == step
    assert store.get(parent.id).usage == step + step
    assert store.get(grandparent.id).usage == step + step


def test_add_usage_without_roll_up_touches_only_the_session(store: SessionStore) -> None:
    parent = store.create("/p")
    child = store.create("/p", parent_id=parent.id)
    store.add_usage(child.id, Usage(input_tokens=3, requests=1, cost_usd=0.5), roll_up=False)
    assert store.get(child.id).usage == Usage(input_tokens=3, requests=1, cost_usd=0.5)
    assert store.get(parent.id).usage == Usage()


def test_cost_stays_none_while_no_request_had_a_price(store: SessionStore) -> None:
    parent = store.create("/p")
    child = store.create("/p", parent_id=parent.id)
    unpriced = Usage(input_tokens=10, output_tokens=2, requests=1, unpriced_requests=1)
    store.add_usage(child.id, unpriced)
    store.add_usage(child.id, unpriced)
    for session_id in (child.id, parent.id):
        usage = store.get(session_id).usage
        assert usage.cost_usd is None
        assert (usage.input_tokens, usage.requests, usage.unpriced_requests) == (20, 2, 2)


def test_mixed_priced_and_unpriced_usage_keeps_the_known_cost(store: SessionStore) -> None:
    parent = store.create("/p")
    child = store.create("/p", parent_id=parent.id)
    store.add_usage(child.id, Usage(input_tokens=10, requests=1, unpriced_requests=1))
    store.add_usage(child.id, Usage(input_tokens=10, requests=1, cost_usd=0.125))
    store.add_usage(child.id, Usage(input_tokens=10, requests=1, unpriced_requests=1))
    for session_id in (child.id, parent.id):
        usage = store.get(session_id).usage
        assert usage.cost_usd == pytest.approx(0.125)
        assert (usage.requests, usage.unpriced_requests) == (3, 2)


def test_delete_cascades_to_descendants_and_their_messages(db: Database, store: SessionStore) -> None:
    messages = MessageStore(db)
    root = store.create("/p")
    child = store.create("/p", parent_id=root.id)
    grandchild = store.create("/p", parent_id=child.id)
    survivor = store.create("/p")
    for session in (root, child, grandchild, survivor):
        messages.append(session.id, ModelRequest(parts=[UserPromptPart(content="hi")]))

    store.delete(root.id)

    assert [s.id for s in store.list(include_children=True)] == [survivor.id]
    for session in (root, child, grandchild):
        with pytest.raises(SessionNotFoundError):
            store.get(session.id)
    row = db.fetch_one("SELECT count(*) FROM messages")
    assert row is not None and row[0] == 1
    assert messages.count(survivor.id) == 1


def test_delete_if_unused_keeps_a_session_with_a_message_a_child_or_a_holder(
    db: Database, store: SessionStore
) -> None:
    unused, spoken, parent, held, rewound = (store.create("/p") for _ in range(5))
    MessageStore(db).append(spoken.id, ModelRequest(parts=[UserPromptPart(content="hi")]))
    store.create("/p", parent_id=parent.id)
    store.acquire(held.id)
    store.add_usage(rewound.id, Usage(requests=1), roll_up=False)

    sessions = (unused, spoken, parent, held, rewound)
    assert [store.delete_if_unused(session.id) for session in sessions] == [True, False, False, False, False]
    with pytest.raises(SessionNotFoundError):
        store.get(unused.id)


def test_reparent_moves_a_child_and_future_usage_rolls_up_to_the_new_parent(store: SessionStore) -> None:
    old = store.create("/p")
    new = store.create("/p")
    child = store.create("/p", parent_id=old.id)
    store.add_usage(child.id, Usage(input_tokens=10, requests=1, cost_usd=0.5))
    store.reparent(child.id, new.id)
    store.add_usage(child.id, Usage(input_tokens=5, requests=1, cost_usd=0.25))
    assert store.get(child.id).parent_id == new.id
    assert [c.id for c in store.children(new.id)] == [child.id] and store.children(old.id) == []
    assert store.get(old.id).usage.input_tokens == 10  # what was spent before stays counted there
    assert store.get(new.id).usage.input_tokens == 5 and store.get(new.id).usage.cost_usd == 0.25


def test_reparent_refuses_a_cycle_and_unknown_sessions(store: SessionStore) -> None:
    top = store.create("/p")
    child = store.create("/p", parent_id=top.id)
    grandchild = store.create("/p", parent_id=child.id)
    with pytest.raises(StoreError, match="own descendant"):
        store.reparent(child.id, grandchild.id)
    with pytest.raises(StoreError, match="own descendant"):
        store.reparent(child.id, child.id)
    with pytest.raises(SessionNotFoundError):
        store.reparent(child.id, "ses_missing")
    with pytest.raises(SessionNotFoundError):
        store.reparent("ses_missing", top.id)
    assert store.get(child.id).parent_id == top.id
