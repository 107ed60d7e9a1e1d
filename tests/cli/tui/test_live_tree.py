"""The agent tree's model: nodes under their parents, states, counters and times from events."""

from __future__ import annotations

from nestor.cli.tui.live_tree import LiveTree
from nestor.core.events import (
    AgentFinished,
    AgentStarted,
    ErrorEvent,
    PermissionRequested,
    PermissionWithdrawn,
    RequestFinished,
    StopReason,
    ToolFinished,
    ToolStarted,
)
from nestor.core.permission import PermissionRequest
from nestor.core.usage import Usage

MAIN = "ses_main"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def started(agent_id: str, parent: str | None, depth: int, description: str = "") -> AgentStarted:
    return AgentStarted(
        agent_id=agent_id, parent_id=parent, depth=depth, agent_type="explore", description=description
    )


def finished(agent_id: str, reason: StopReason, *, is_error: bool = False) -> AgentFinished:
    return AgentFinished(agent_id=agent_id, stop_reason=reason, result="", is_error=is_error)


def test_agents_sit_under_their_parents_with_their_counters_and_state() -> None:
    clock = Clock()
    tree = LiveTree(MAIN, is_background=lambda agent_id: agent_id == "ses_bg", clock=clock)
    assert tree.agents[MAIN].state == "idle"
    tree.handle(AgentStarted(agent_id=MAIN))
    tree.handle(started("ses_a", MAIN, 1, "find auth"))
    tree.handle(started("ses_bg", MAIN, 1, "scan todos"))
    tree.handle(started("ses_a1", "ses_a", 2, "look deeper"))
    tree.handle(ToolStarted(agent_id="ses_a", tool_call_id="c1", tool_name="grep"))
    tree.handle(
        RequestFinished(
            agent_id="ses_a",
            model="m",
            usage=Usage(input_tokens=1000, output_tokens=200, cost_usd=0.01),
            run_usage=Usage(),
        )
    )
    clock.now = 103.5
    assert [agent.agent_id for agent in tree.ordered()] == [MAIN, "ses_a", "ses_a1", "ses_bg"]
    assert tree.descendants("ses_a") == ["ses_a1"] and sorted(tree.descendants(MAIN)) == [
        "ses_a",
        "ses_a1",
        "ses_bg",
    ]
    a = tree.agents["ses_a"]
    assert a.title() == "explore · find auth"
    assert a.counters(clock.now) == "running · 1 tool · 3.5s · 1.2k tok · $0.01 · grep"
    assert tree.agents["ses_bg"].background and not a.background
    assert a.mark(0.0) == "⠋" and a.mark(0.125) == "⠙"  # the spinner follows the clock

    tree.handle(ToolFinished(agent_id="ses_a", tool_call_id="c1", tool_name="grep"))
    tree.handle(finished("ses_a", "completed"))
    clock.now = 110.0
    assert a.state == "done" and a.mark(0.0) == "✓"
    assert a.counters(clock.now) == "done · 1 tool · 3.5s · 1.2k tok · $0.01"  # the time stopped
    assert [agent.agent_id for agent in tree.running()] == [MAIN, "ses_bg", "ses_a1"]


def test_waiting_failed_cancelled_and_stopped() -> None:
    clock = Clock()
    tree = LiveTree(MAIN, clock=clock)
    for agent_id in ("ses_w", "ses_f", "ses_c", "ses_s"):
        tree.handle(started(agent_id, MAIN, 1))
    request = PermissionRequest("bash", "execute", "ls", "Run: ls")
    tree.handle(PermissionRequested(agent_id="ses_w", request_id="q1", request=request))
    tree.handle(PermissionRequested(agent_id="ses_w", request_id="q2", request=request))
    assert tree.agents["ses_w"].state == "waiting"
    assert tree.agents["ses_w"].counters(clock.now).startswith("waiting for permission · ")
    tree.answered("q1")
    assert tree.agents["ses_w"].state == "waiting"  # one question still open
    tree.handle(PermissionWithdrawn(agent_id="ses_w", request_id="q2"))
    assert tree.agents["ses_w"].state == "running"

    tree.handle(ErrorEvent(agent_id="ses_f", message="the model is gone"))
    tree.handle(finished("ses_f", "error", is_error=True))
    tree.handle(finished("ses_c", "cancelled"))
    tree.handle(finished("ses_s", "max_iterations"))
    states = {
        agent_id: (tree.agents[agent_id].state, tree.agents[agent_id].counters(clock.now).split(" · ")[0])
        for agent_id in ("ses_f", "ses_c", "ses_s")
    }
    assert states == {
        "ses_f": ("failed", "failed: the model is gone"),
        "ses_c": ("cancelled", "cancelled"),
        "ses_s": ("stopped", "stopped: max_turns"),
    }


def test_a_pooled_agents_next_run_adds_to_its_time() -> None:
    clock = Clock()
    tree = LiveTree(MAIN, clock=clock)
    tree.handle(started("ses_p", MAIN, 1, "first"))
    clock.now = 102.0
    tree.handle(finished("ses_p", "completed"))
    clock.now = 200.0
    tree.handle(started("ses_p", MAIN, 1, "second"))
    clock.now = 201.0
    agent = tree.agents["ses_p"]
    assert (agent.state, agent.description, agent.elapsed(clock.now)) == ("running", "second", 3.0)
    assert tree.agents[MAIN].children == ["ses_p"]
