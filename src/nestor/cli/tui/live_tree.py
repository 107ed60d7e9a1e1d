"""The agent tree as the TUI shows it: every agent of the session, its state and counters, from events.

:class:`LiveTree` follows the bus's events (no Textual here, so it is cheap to test and to feed at
any rate): each :class:`AgentStarted` adds or restarts a node under its parent, tool calls, model
requests and compactions count into it, a permission question marks it waiting, and
:class:`AgentFinished` gives its outcome. The widget draws from it
(:class:`~nestor.cli.tui.panes.AgentTreePanel`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from nestor.cli.agent_lines import outcome_words
from nestor.cli.formatting import counted, format_duration, one_line, spinner_frame
from nestor.core.events import (
    AgentFinished,
    AgentStarted,
    Compacted,
    ErrorEvent,
    Event,
    PermissionRequested,
    PermissionWithdrawn,
    RequestFinished,
    ToolFinished,
    ToolStarted,
)
from nestor.core.usage import Usage, format_cost, format_tokens

__all__ = ["AgentState", "LiveAgent", "LiveTree"]

AgentState = Literal["idle", "running", "waiting", "done", "failed", "cancelled", "stopped"]
"""What an agent is doing: ``idle`` is the main agent before its first prompt; ``waiting`` is
waiting for the user's answer to a permission question; ``stopped`` a budget or the loop guard
ended its run."""

_STATE_MARKS: dict[AgentState, str] = {
    "idle": "·",
    "done": "✓",
    "failed": "✗",
    "cancelled": "⊘",
    "stopped": "■",
    "waiting": "?",
}


@dataclass(slots=True)
class LiveAgent:
    """One agent of the tree, as far as its events tell.

    Attributes:
        agent_id: Its session id.
        agent_type: Its spec's name (``coder``, ``explore``, ...).
        description: What it was asked to do (empty for the main agent).
        parent_id: The agent that started it; None for the main agent.
        depth: 0 for the main agent.
        state: See :data:`AgentState`.
        background: Started with ``run_in_background``.
        tools: Tool calls it made.
        usage: What its own requests spent (tokens, cost), over every run.
        started_at: When its current (or last) run began.
        ended_at: When its last run ended; None while it runs.
        earlier_s: Time spent in its earlier runs (a pooled or resumed agent runs again).
        outcome: How its last run ended, in the task tool's words (``done``, ``failed: ...``).
        running_tools: Tool calls going on, by call id.
        questions: Ids of its permission questions waiting for an answer.
        children: Its sub-agents' ids, in the order they started.

    """

    agent_id: str
    agent_type: str
    description: str
    parent_id: str | None
    depth: int
    started_at: float
    state: AgentState = "running"
    background: bool = False
    tools: int = 0
    usage: Usage = field(default_factory=Usage)
    ended_at: float | None = None
    earlier_s: float = 0.0
    outcome: str = ""
    running_tools: dict[str, str] = field(default_factory=dict[str, str])
    questions: set[str] = field(default_factory=set[str])
    children: list[str] = field(default_factory=list[str])

    @property
    def running(self) -> bool:
        """True while its run goes on (waiting for an answer included)."""
        return self.ended_at is None

    def elapsed(self, now: float) -> float:
        """Seconds it has run, over every run."""
        end = self.ended_at if self.ended_at is not None else now
        return self.earlier_s + max(end - self.started_at, 0.0)

    def title(self, width: int = 60) -> str:
        """``explore · find auth code``: its type and task; the main agent's is its type."""
        description = one_line(self.description, width)
        return f"{self.agent_type} · {description}" if description else self.agent_type

    def mark(self, now: float) -> str:
        """A spinner frame while it runs (a fixed clock draws a fixed frame), else its state's mark."""
        if self.state == "running":
            return spinner_frame(now)
        return _STATE_MARKS[self.state]

    def counters(self, now: float) -> str:
        """``running · 3 tools · 4.2s · 1.2k tok · $0.0010``: its state and totals (the done lines' order)."""
        state = "waiting for permission" if self.state == "waiting" else self.state
        if self.ended_at is not None and self.outcome and self.state != "done":
            state = self.outcome
        parts = [
            state,
            counted(self.tools, "tool"),
            format_duration(self.elapsed(now)),
            f"{format_tokens(self.usage.total_tokens)} tok",
            format_cost(self.usage.cost_usd),
        ]
        if self.running_tools and self.state == "running":
            parts.append(", ".join(dict.fromkeys(self.running_tools.values())))
        return " · ".join(parts)


class LiveTree:
    """Every agent of the session, fed the bus's events; ``version`` changes with each change.

    Args:
        main_id: The main agent's id: the root.
        is_background: Tells whether a sub-agent was started in the background (the facade's).
        clock: When an event is applied, the time its start or end is counted from: the UI's
            clock, so that a fixed one (tests, snapshots) draws fixed times.

    """

    def __init__(
        self,
        main_id: str,
        is_background: Callable[[str], bool] = lambda _id: False,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.main_id = main_id
        self._is_background = is_background
        self._clock = clock
        root = LiveAgent(main_id, "coder", "", None, 0, started_at=0.0, state="idle", ended_at=0.0)
        self.agents: dict[str, LiveAgent] = {main_id: root}
        self.version = 0
        self.structure = 0

    def resumed(self, tools: int, usage: Usage) -> None:
        """Start the main agent's counters from its stored session: earlier prompts' tool calls and usage."""
        root = self.agents[self.main_id]
        root.tools, root.usage = tools, usage
        self.version += 1

    def get(self, agent_id: str) -> LiveAgent | None:
        """The agent with this id, if its start was seen."""
        return self.agents.get(agent_id)

    def handle(self, event: Event) -> None:
        """Apply one event."""
        if isinstance(event, AgentStarted):
            self._started(event)
            return
        agent = self.agents.get(event.agent_id)
        if agent is None:
            return
        match event:
            case ToolStarted():
                agent.tools += 1
                agent.running_tools[event.tool_call_id] = event.tool_name
            case ToolFinished():
                agent.running_tools.pop(event.tool_call_id, None)
            case RequestFinished():
                agent.usage.add(event.usage)
            case Compacted():
                agent.usage.add(event.usage)
            case PermissionRequested():
                agent.questions.add(event.request_id)
                agent.state = "waiting"
            case PermissionWithdrawn():
                self.answered(event.request_id)
            case ErrorEvent() if not agent.outcome:
                agent.outcome = "failed: " + one_line(event.message, 80)
            case AgentFinished():
                self._finished(agent, event)
            case _:
                return
        self.version += 1

    def answered(self, request_id: str) -> None:
        """A permission question was answered (or withdrawn): its agent runs again."""
        for agent in self.agents.values():
            if request_id in agent.questions:
                agent.questions.discard(request_id)
                if not agent.questions and agent.state == "waiting":
                    agent.state = "running"
                self.version += 1

    def ordered(self) -> list[LiveAgent]:
        """The agents depth first from the root, each after its parent, children in start order."""
        roots = [a for a in self.agents.values() if a.parent_id is None or a.parent_id not in self.agents]
        ordered: list[LiveAgent] = []
        stack = list(reversed(roots))
        while stack:
            agent = stack.pop()
            ordered.append(agent)
            stack.extend(reversed([self.agents[child] for child in agent.children if child in self.agents]))
        return ordered

    def descendants(self, agent_id: str) -> list[str]:
        """The ids of every agent under ``agent_id``."""
        found: list[str] = []
        pending = list(self.agents[agent_id].children) if agent_id in self.agents else []
        while pending:
            child = pending.pop()
            found.append(child)
            pending.extend(self.agents[child].children if child in self.agents else ())
        return found

    def running(self) -> list[LiveAgent]:
        """The agents whose run goes on."""
        return [agent for agent in self.agents.values() if agent.running]

    def _started(self, event: AgentStarted) -> None:
        agent = self.agents.get(event.agent_id)
        if agent is None:
            parent = event.parent_id if event.agent_id != self.main_id else None
            agent = LiveAgent(
                agent_id=event.agent_id,
                agent_type=event.agent_type,
                description=event.description,
                parent_id=parent,
                depth=event.depth,
                started_at=self._clock(),
                background=parent is not None and self._is_background(event.agent_id),
            )
            self.agents[event.agent_id] = agent
            if parent is not None and parent in self.agents:
                self.agents[parent].children.append(event.agent_id)
            self.structure += 1
        else:  # a pooled, resumed or main agent's next run
            if agent.ended_at is not None:
                agent.earlier_s += max(agent.ended_at - agent.started_at, 0.0)
            agent.started_at, agent.ended_at = self._clock(), None
            agent.description = event.description or agent.description
            agent.outcome = ""
        agent.state = "running"
        self.version += 1

    def _finished(self, agent: LiveAgent, event: AgentFinished) -> None:
        agent.ended_at = max(self._clock(), agent.started_at)
        agent.running_tools.clear()
        agent.questions.clear()
        failure = agent.outcome if agent.outcome.startswith("failed") else ""
        words = outcome_words(event)
        agent.outcome = failure if failure and event.stop_reason == "error" else words
        if event.stop_reason == "completed":
            agent.state = "done"
        elif event.stop_reason == "cancelled":
            agent.state = "cancelled"
        elif event.stop_reason == "error" or event.is_error:
            agent.state = "failed"
        else:
            agent.state = "stopped"
