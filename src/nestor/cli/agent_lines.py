"""Sub-agents on a terminal: a line when each starts and ends, live counters while it runs.

Terminal output is append-only here (the REPL prints above its prompt, ``nestor run`` to stderr),
so a sub-agent cannot own a line that is redrawn in place. :class:`SubAgentTracker` follows the
events of the agents below the main one, and the outputs print from it:

- a start line when a sub-agent starts: ``  [explore] find auth code …``;
- its live counters where something can be redrawn (the REPL's toolbar):
  ``  [explore] find auth code … 5 tools, 3.2s · grep``;
- a done line when it ends: ``  [explore] find auth code - done (8 tools, 5.1s, 12.4k tok, $0.0040)``,
  or ``- stopped: timeout (...)``, ``- failed: ... (...)``, ``- cancelled (...)``.

Every line is indented two spaces per level of depth, so nested agents sit under their parent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from nestor.cli.formatting import counted, format_duration, one_line
from nestor.core.events import (
    AgentFinished,
    AgentStarted,
    BackgroundNotice,
    ErrorEvent,
    ToolFinished,
    ToolStarted,
)
from nestor.core.usage import format_cost, format_tokens

__all__ = [
    "SubAgent",
    "SubAgentTracker",
    "background_line",
    "done_line",
    "error_lines",
    "indent",
    "start_line",
    "todo_lines",
]

_DESCRIPTION_LIMIT = 60
_TODO_ICONS = {"pending": "☐", "in_progress": "◐", "completed": "☑"}


def indent(depth: int) -> str:
    """Two spaces per level below the main agent (a sub-agent is at least one level down)."""
    return "  " * max(depth, 1)


@dataclass(slots=True)
class SubAgent:
    """What is known of one sub-agent from its events: who it is and, while it runs, its counters."""

    agent_id: str
    agent_type: str
    description: str
    depth: int
    parent_id: str | None
    started_at: float
    tools: int = 0
    running_tools: dict[str, str] = field(default_factory=dict[str, str])
    errors: list[ErrorEvent] = field(default_factory=list[ErrorEvent])

    @property
    def label(self) -> str:
        """``[explore] find auth code``: its type and what it was asked to do."""
        description = one_line(self.description, _DESCRIPTION_LIMIT)
        return f"[{self.agent_type}] {description}" if description else f"[{self.agent_type}]"

    @property
    def indent(self) -> str:
        """The indentation of its lines."""
        return indent(self.depth)

    def live_line(self, now: float) -> str:
        """``  [explore] find auth code … 5 tools, 3.2s · grep``: how far it got, for a toolbar."""
        elapsed = format_duration(max(now - self.started_at, 0.0))
        line = f"{self.indent}{self.label} … {counted(self.tools, 'tool')}, {elapsed}"
        if self.running_tools:
            line += " · " + ", ".join(dict.fromkeys(self.running_tools.values()))
        return line


class SubAgentTracker:
    """Follows sub-agents through their events; the caller says which agents are sub-agents.

    An agent is *running* from :meth:`started` to :meth:`finished`, and *known* from its first
    start on (so late events, a background notice or a permission question can still name it).
    """

    def __init__(self) -> None:
        self._known: dict[str, SubAgent] = {}
        self._running: dict[str, SubAgent] = {}

    def get(self, agent_id: str) -> SubAgent | None:
        """The sub-agent with this id, running or ended, if it was ever seen starting."""
        return self._known.get(agent_id)

    def started(self, event: AgentStarted) -> SubAgent:
        """Record that a sub-agent began a run (a pooled one starts afresh for each task)."""
        agent = SubAgent(
            agent_id=event.agent_id,
            agent_type=event.agent_type,
            description=event.description,
            depth=max(event.depth, 1),
            parent_id=event.parent_id,
            started_at=event.timestamp,
        )
        self._known[event.agent_id] = self._running[event.agent_id] = agent
        return agent

    def tool_started(self, event: ToolStarted) -> SubAgent | None:
        """Count a tool call of a running sub-agent; None when the event is not one of theirs."""
        agent = self._running.get(event.agent_id)
        if agent is not None:
            agent.tools += 1
            agent.running_tools[event.tool_call_id] = event.tool_name
        return agent

    def tool_finished(self, event: ToolFinished) -> SubAgent | None:
        """Note that a tool call of a running sub-agent ended."""
        agent = self._running.get(event.agent_id)
        if agent is not None:
            agent.running_tools.pop(event.tool_call_id, None)
        return agent

    def error(self, event: ErrorEvent) -> SubAgent | None:
        """Keep an error of a running sub-agent for its done line; None when it is not running."""
        agent = self._running.get(event.agent_id)
        if agent is not None:
            agent.errors.append(event)
        return agent

    def finished(self, event: AgentFinished) -> SubAgent | None:
        """Record the end of a sub-agent's run; returns it (None when its start was not seen)."""
        return self._running.pop(event.agent_id, None)

    def running(self) -> list[SubAgent]:
        """The running sub-agents, each followed by its own running descendants."""
        children: dict[str | None, list[SubAgent]] = {}
        for agent in self._running.values():
            parent = agent.parent_id if agent.parent_id in self._running else None
            children.setdefault(parent, []).append(agent)
        ordered: list[SubAgent] = []
        stack = list(reversed(children.get(None, [])))
        while stack:
            agent = stack.pop()
            ordered.append(agent)
            stack.extend(reversed(children.get(agent.agent_id, [])))
        return ordered

    def live_lines(self, now: float) -> list[str]:
        """One :meth:`SubAgent.live_line` per running sub-agent, in tree order."""
        return [agent.live_line(now) for agent in self.running()]


def start_line(agent: SubAgent) -> str:
    """``  [explore] find auth code …``: printed when a sub-agent starts."""
    return f"{agent.indent}{agent.label} …"


def done_line(event: AgentFinished, agent: SubAgent | None) -> str:
    """``  [explore] find auth code - done (8 tools, 5.1s, 12.4k tok, $0.0040)`` for a finished run.

    ``agent`` is what the tracker knew of the run (None when its start was not seen: the tool
    count is then left out rather than shown as zero).
    """
    if agent is None:
        agent = SubAgent(
            agent_id=event.agent_id,
            agent_type=event.agent_type,
            description=event.description,
            depth=max(event.depth, 1),
            parent_id=event.parent_id,
            started_at=event.timestamp - event.duration_s,
            tools=-1,
        )
    usage = event.usage
    counters = [
        *([counted(agent.tools, "tool")] if agent.tools >= 0 else []),
        format_duration(event.duration_s),
        f"{format_tokens(usage.total_tokens)} tok",
        format_cost(event.cost_usd),
    ]
    return f"{agent.indent}{agent.label} - {outcome_words(event, agent.errors)} ({', '.join(counters)})"


def error_lines(event: AgentFinished, agent: SubAgent) -> list[str]:
    """What the done line leaves out of a sub-agent's errors: further errors, and every hint.

    The first error of a failed run is already the done line's reason.
    """
    lines: list[str] = []
    for index, error in enumerate(agent.errors):
        if index or event.stop_reason != "error":
            lines.append(f"{agent.indent}  error: {error.message}")
        if error.hint:
            lines.append(f"{agent.indent}  hint: {error.hint}")
    return lines


def outcome_words(event: AgentFinished, errors: Sequence[ErrorEvent] = ()) -> str:
    """``done``, ``cancelled``, ``failed: why`` or ``stopped: max_turns``, in the task tool's words."""
    reason = event.stop_reason
    if reason == "completed":
        return "done"
    if reason == "cancelled":
        return "cancelled"
    if reason == "error" or event.is_error:
        why = errors[0].message if errors else event.result
        return "failed: " + one_line(why, 80)
    return "stopped: " + ("max_turns" if reason == "max_iterations" else reason)


def background_line(event: BackgroundNotice, parent: SubAgent | None = None) -> str:
    """``⇠ background agent ses_... (explore) completed``, under the agent that receives the notice."""
    prefix = indent(parent.depth + 1) if parent is not None else ""
    return f"{prefix}⇠ background agent {event.child_id} ({event.child_type}) {event.status}"


def todo_lines(todos: Sequence[Mapping[str, str]]) -> list[str]:
    """A todo list in a few lines: a count, then ``☐`` pending, ``◐`` in progress, ``☑`` done.

    These icons (not the emoji of the model's ``<todo-state>`` block) are one column wide on every
    terminal, so the tasks line up.
    """
    if not todos:
        return ["todos: cleared"]
    done = sum(1 for todo in todos if todo.get("status") == "completed")
    lines = [f"todos: {done}/{len(todos)} done"]
    for todo in todos:
        icon = _TODO_ICONS.get(todo.get("status", ""), "?")
        lines.append(f"  {icon} {todo.get('content', '')}")
    return lines
