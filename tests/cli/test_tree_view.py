"""Session trees, read from stores filled by a real delegated run or through the store's own API."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic_ai.messages import ModelRequest, ModelResponse, ToolCallPart, ToolReturnPart, UserPromptPart

from nestor.cli.tree_view import count_descendants, load_tree, tree_lines
from nestor.core.usage import Usage
from nestor.store import MessageStore, SessionStore, open_database
from tests.cli.delegation_support import EXPLORE, GENERAL, delegated_run


async def test_a_delegated_run_reads_back_as_a_tree(tmp_path: Path) -> None:
    run = await delegated_run(tmp_path)
    sessions, messages = run.harness.sessions, run.harness.messages
    root = load_tree(sessions, messages, sessions.get(run.main.session_id))

    assert root.session.id == run.main.session_id and root.tools_used == {"task": 2}
    by_title = {child.session.title: child for child in root.children}
    assert set(by_title) == {EXPLORE, GENERAL}
    explore, general = by_title[EXPLORE], by_title[GENERAL]
    # Taken from the task results' metadata: tools by name, the stop reason, the execution time.
    assert explore.session.agent_name == "explore" and explore.outcome == "completed"
    assert explore.tools_used == {"grep": 1, "view": 1}
    assert general.tools_used == {"ls": 1} and general.outcome == "completed"
    stored = [
        part.metadata["subagent"]
        for message in messages.list(root.session.id)
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart) and part.metadata
    ]
    times = {result["agent_id"]: result["execution_time"] for result in stored}
    assert explore.duration_s == pytest.approx(times[explore.session.id])

    # Totals include the descendants; the root's own share is its 2 requests.
    assert root.session.usage.cost_usd == pytest.approx(0.007)
    own = root.own_usage
    assert own.requests == 2 and own.cost_usd == pytest.approx(0.002)
    assert own.total_tokens == 2 * 110
    assert count_descendants(sessions, root.session.id) == 2

    lines = tree_lines(root)
    # The main session has no task result: its stored status shows, not a stop reason.
    assert re.fullmatch(
        rf"{root.session.id}  coder  \(untitled\)  idle · 2 tools \(task 2\) · [\d.]+s · "
        r"770 tok, \$0\.0070 incl\. sub-agents \(own: 220 tok, \$0\.0020\)",
        lines[0],
    )
    children = sorted(lines[1:])
    assert re.fullmatch(
        rf"[├└]─ {explore.session.id}  explore  \"{EXPLORE}\"  completed · 2 tools \(grep 1, view 1\) · "
        r"[\d.]+s · 330 tok, \$0\.0030",
        next(line for line in children if EXPLORE in line),
    )
    assert {line[0] for line in lines[1:]} == {"├", "└"}


def store_in(path: Path) -> tuple[SessionStore, MessageStore]:
    database = open_database(path / "nestor.db")
    return SessionStore(database), MessageStore(database)


def test_without_task_results_the_sessions_own_calls_and_lifespan_are_used(tmp_path: Path) -> None:
    clock = iter([100.0, 101.0, 102.0, 103.0, 104.0, 105.0, 106.0, 107.0, 108.0, 109.0, 110.0, 111.0])
    database = open_database(tmp_path / "nestor.db")
    sessions = SessionStore(database, clock=lambda: next(clock))
    messages = MessageStore(database, clock=lambda: 0.0)
    root = sessions.create(tmp_path, title="root")
    child = sessions.create(tmp_path, agent_name="plan", title="make a plan", parent_id=root.id)
    grandchild = sessions.create(tmp_path, agent_name="explore", title="dig", parent_id=child.id)
    calls = [
        ToolCallPart("grep", {"pattern": "x"}),
        ToolCallPart("grep", {"pattern": "y"}),
        ToolCallPart("view"),
    ]
    messages.append(child.id, ModelRequest(parts=[UserPromptPart("plan it")]))
    messages.append(child.id, ModelResponse(parts=calls))
    sessions.set_status(grandchild.id, "running")
    sessions.add_usage(grandchild.id, Usage(input_tokens=500, output_tokens=50, requests=1))

    tree = load_tree(sessions, messages, sessions.get(root.id))
    [plan] = tree.children
    [dig] = plan.children
    assert plan.tools_used == {"grep": 2, "view": 1}
    fresh = sessions.get(child.id)
    assert plan.duration_s == pytest.approx(fresh.updated_at - fresh.created_at)
    assert dig.outcome == "running" and plan.outcome == "idle"
    # Nothing was priced: the totals and the own shares say so rather than $0.
    assert tree.own_usage.total_tokens == 0 and tree.own_usage.cost_usd is None
    assert tree_lines(tree)[1:] == [
        f'└─ {child.id}  plan  "make a plan"  idle · 3 tools (grep 2, view 1) · '
        f"{plan.duration_s:.1f}s · 550 tok, cost unknown incl. sub-agents (own: 0 tok, cost unknown)",
        f'   └─ {grandchild.id}  explore  "dig"  running · 0 tools · 2.0s · 550 tok, cost unknown',
    ]
    assert count_descendants(sessions, root.id) == 2 and count_descendants(sessions, grandchild.id) == 0


def test_a_background_result_fetched_twice_counts_once(tmp_path: Path) -> None:
    sessions, messages = store_in(tmp_path)
    root = sessions.create(tmp_path)
    child = sessions.create(tmp_path, agent_name="general", parent_id=root.id)
    started = {"agent_id": child.id, "background": True}
    result = {
        "agent_id": child.id,
        "agent_type": "general",
        "tools_used": {"bash": 3},
        "execution_time": 4.5,
        "stop_reason": "timeout",
        "success": False,
    }
    parts = [
        ToolReturnPart("task", "started", tool_call_id="a", metadata={"subagent": started}),
        ToolReturnPart("task_output", "report", tool_call_id="b", metadata={"subagent": result}),
        ToolReturnPart("task_output", "report", tool_call_id="c", metadata={"subagent": dict(result)}),
        ToolReturnPart("grep", "no metadata", tool_call_id="d"),
    ]
    messages.append(root.id, ModelRequest(parts=parts))

    [node] = load_tree(sessions, messages, sessions.get(root.id)).children
    assert node.tools_used == {"bash": 3} and node.duration_s == 4.5 and node.outcome == "timeout"
