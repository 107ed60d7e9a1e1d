"""The roll-up of usage up the agent tree, read from a real store: totals, gains, children, the cost cap."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nestor.core.usage import Usage
from nestor.runtime.kernel.hooks import RunState, Stop
from nestor.runtime.tree.tree_usage import TreeCostHook, TreeUsage, cost_cap_stop
from nestor.store import SessionStore, open_database


@pytest.fixture
def sessions(tmp_path: Path) -> Iterator[SessionStore]:
    with open_database(tmp_path / "nestor.db") as database:
        yield SessionStore(database)


def priced(tokens: int, cost: float | None) -> Usage:
    unpriced = 0 if cost is not None else 1
    return Usage(input_tokens=tokens, requests=1, cost_usd=cost, unpriced_requests=unpriced)


def test_a_total_is_the_session_and_its_descendants_and_a_gain_is_what_a_run_added(
    sessions: SessionStore,
) -> None:
    root = sessions.create("/p")
    child = sessions.create("/p", parent_id=root.id, agent_name="explore")
    grandchild = sessions.create("/p", parent_id=child.id, agent_name="explore")
    usage = TreeUsage(sessions)
    sessions.add_usage(root.id, priced(10, 0.01))

    before = usage.total(child.id)
    sessions.add_usage(child.id, priced(20, 0.02))
    sessions.add_usage(grandchild.id, priced(30, None))  # no price known: tokens only

    gained = usage.gained(child.id, before)
    assert (gained.input_tokens, gained.requests, gained.unpriced_requests) == (50, 2, 1)
    assert gained.cost_usd == pytest.approx(0.02)
    assert usage.total(root.id).input_tokens == 60 and usage.cost(root.id) == pytest.approx(0.03)
    assert usage.children(root.id).input_tokens == 50  # the root's own 10 left out


def test_a_gain_of_unpriced_requests_only_has_no_cost(sessions: SessionStore) -> None:
    session = sessions.create("/p")
    usage = TreeUsage(sessions)
    sessions.add_usage(session.id, priced(10, 0.01))
    before = usage.total(session.id)
    sessions.add_usage(session.id, priced(5, None))
    assert usage.gained(session.id, before).cost_usd is None


def test_a_prompts_usage_is_the_main_agents_runs_and_what_its_children_gained(sessions: SessionStore) -> None:
    root = sessions.create("/p")
    child = sessions.create("/p", parent_id=root.id)
    usage = TreeUsage(sessions)
    sessions.add_usage(child.id, priced(7, 0.007))  # an earlier prompt's sub-agent
    before = usage.children(root.id)
    sessions.add_usage(child.id, priced(3, 0.003))
    sessions.add_usage(root.id, priced(100, 0.1))  # the title, written in the background: not this prompt's
    total = usage.prompt(root.id, main_runs=priced(40, 0.04), children_before=before)
    assert total.input_tokens == 43 and total.cost_usd == pytest.approx(0.043)


def test_the_cost_cap_stops_once_reached_and_never_without_a_price() -> None:
    assert cost_cap_stop(None, 0.01) is None
    assert cost_cap_stop(0.0099, 0.01) is None
    stop = cost_cap_stop(0.01, 0.01)
    assert isinstance(stop, Stop) and stop.reason == "token_budget"
    assert "$0.0100" in stop.message and "max_cost_usd = 0.01" in stop.message


async def test_tree_cost_hook_stops_once_the_tree_reached_the_cap() -> None:
    spent: list[float | None] = [None]
    hook = TreeCostHook(0.01, lambda: spent[0])
    state = RunState(agent_id="ses_child", agent_type="general")
    assert await hook.before_request(state) is None  # nothing priced yet
    spent[0] = 0.01
    action = await hook.before_request(state)
    assert isinstance(action, Stop) and "max_cost_usd = 0.01" in action.message
