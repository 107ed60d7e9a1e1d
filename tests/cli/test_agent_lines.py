"""Sub-agent start, live and done lines, fed events directly."""

from __future__ import annotations

from nestor.cli.agent_lines import (
    SubAgentTracker,
    background_line,
    done_line,
    error_lines,
    start_line,
    todo_lines,
)
from nestor.core.events import (
    AgentFinished,
    AgentStarted,
    BackgroundNotice,
    ErrorEvent,
    ToolFinished,
    ToolStarted,
)
from nestor.core.usage import Usage

MAIN = "ses_main"
T0 = 1_000.0


def started(
    agent_id: str, parent: str, depth: int, agent_type: str, description: str, at: float
) -> AgentStarted:
    return AgentStarted(
        agent_id=agent_id,
        parent_id=parent,
        depth=depth,
        agent_type=agent_type,
        description=description,
        timestamp=at,
    )


def finished(agent_id: str, stop_reason: str = "completed", **changes: object) -> AgentFinished:
    fields: dict[str, object] = {
        "agent_id": agent_id,
        "parent_id": MAIN,
        "depth": 1,
        "agent_type": "explore",
        "description": "find auth code",
        "stop_reason": stop_reason,
        "result": "auth is in src/auth.py",
        "usage": Usage(input_tokens=12_000, output_tokens=400).to_dict(),
        "cost_usd": 0.004,
        "duration_s": 5.1,
    }
    fields.update(changes)
    return AgentFinished.model_validate(fields)


def tool(agent_id: str, call_id: str, name: str) -> ToolStarted:
    return ToolStarted(agent_id=agent_id, tool_call_id=call_id, tool_name=name, args={})


def test_live_lines_count_tools_and_follow_the_tree_order() -> None:
    tracker = SubAgentTracker()
    tracker.started(started("ses_a", MAIN, 1, "explore", "find auth code", T0))
    tracker.started(started("ses_b", MAIN, 1, "general", "fix tests", T0 + 1))
    # A grandchild starts after its parent's sibling, yet is listed right under its parent.
    tracker.started(started("ses_a1", "ses_a", 2, "explore", "look deeper", T0 + 2))
    for index, name in enumerate(("grep", "view", "grep")):
        tracker.tool_started(tool("ses_a", f"c{index}", name))
    tracker.tool_finished(ToolFinished(agent_id="ses_a", tool_call_id="c0", tool_name="grep"))
    tracker.tool_finished(ToolFinished(agent_id="ses_a", tool_call_id="c1", tool_name="view"))
    assert tracker.tool_started(tool(MAIN, "m1", "bash")) is None  # not a sub-agent: not counted

    assert tracker.live_lines(now=T0 + 3.2) == [
        "  [explore] find auth code … 3 tools, 3.2s · grep",
        "    [explore] look deeper … 0 tools, 1.2s",
        "  [general] fix tests … 0 tools, 2.2s",
    ]
    tracker.finished(finished("ses_a"))
    # An orphan (its parent ended first) joins the top level, in start order, keeping its indent.
    assert tracker.live_lines(now=T0 + 4) == [
        "  [general] fix tests … 0 tools, 3.0s",
        "    [explore] look deeper … 0 tools, 2.0s",
    ]
    assert tracker.get("ses_a") is not None  # still known after it ended, for late events


def test_start_and_done_lines_by_outcome() -> None:
    tracker = SubAgentTracker()
    agent = tracker.started(started("ses_a", MAIN, 1, "explore", "find auth code", T0))
    for index in range(8):
        tracker.tool_started(tool("ses_a", f"c{index}", "grep"))
    assert start_line(agent) == "  [explore] find auth code …"
    assert done_line(finished("ses_a"), agent) == (
        "  [explore] find auth code - done (8 tools, 5.1s, 12.4k tok, $0.0040)"
    )
    assert done_line(finished("ses_a", "timeout"), agent).endswith(
        "- stopped: timeout (8 tools, 5.1s, 12.4k tok, $0.0040)"
    )
    assert " - stopped: max_turns (" in done_line(finished("ses_a", "max_iterations"), agent)
    assert " - cancelled (" in done_line(finished("ses_a", "cancelled"), agent)
    failed = finished(
        "ses_a", "error", is_error=True, result="HTTP 500 from the provider\nmore", cost_usd=None
    )
    assert done_line(failed, agent) == (
        "  [explore] find auth code - failed: HTTP 500 from the provider… "
        "(8 tools, 5.1s, 12.4k tok, cost unknown)"
    )


def test_a_done_line_without_a_seen_start_leaves_the_tool_count_out() -> None:
    event = finished("ses_x", depth=2, agent_type="general", description="")
    assert done_line(event, None) == "    [general] - done (5.1s, 12.4k tok, $0.0040)"


def test_errors_of_a_failed_run_go_on_its_done_line_then_hints_and_further_errors() -> None:
    tracker = SubAgentTracker()
    agent = tracker.started(started("ses_a", MAIN, 1, "web", "search docs", T0))
    tracker.error(ErrorEvent(agent_id="ses_a", message="no API key", hint="set OPENAI_API_KEY"))
    tracker.error(ErrorEvent(agent_id="ses_a", message="the final report request failed"))
    assert tracker.error(ErrorEvent(agent_id=MAIN, message="main's own")) is None
    event = finished("ses_a", "error", is_error=True, result="no API key")
    assert tracker.finished(event) is agent
    assert done_line(event, agent).startswith("  [web] search docs - failed: no API key (")
    assert error_lines(event, agent) == [
        "    hint: set OPENAI_API_KEY",
        "    error: the final report request failed",
    ]
    assert error_lines(finished("ses_a", "timeout"), agent)[0] == "    error: no API key"


def test_a_pooled_agent_starts_its_counters_afresh() -> None:
    tracker = SubAgentTracker()
    tracker.started(started("ses_a", MAIN, 1, "explore", "first task", T0))
    tracker.tool_started(tool("ses_a", "c1", "grep"))
    tracker.finished(finished("ses_a"))
    again = tracker.started(started("ses_a", MAIN, 1, "explore", "second task", T0 + 10))
    assert again.tools == 0 and again.label == "[explore] second task"


def test_background_and_todo_lines() -> None:
    notice = BackgroundNotice(
        agent_id=MAIN, child_id="ses_bg", child_type="general", status="completed", text="x"
    )
    assert background_line(notice) == "⇠ background agent ses_bg (general) completed"
    tracker = SubAgentTracker()
    parent = tracker.started(started("ses_a", MAIN, 1, "general", "orchestrate", T0))
    assert background_line(notice, parent) == "    ⇠ background agent ses_bg (general) completed"

    todos = [
        {"content": "Read the parser", "status": "completed"},
        {"content": "Fix the bug", "status": "in_progress"},
        {"content": "Add a test", "status": "pending"},
    ]
    assert todo_lines(todos) == [
        "todos: 1/3 done",
        "  ☑ Read the parser",
        "  ◐ Fix the bug",
        "  ☐ Add a test",
    ]
    assert todo_lines([]) == ["todos: cleared"]
