"""A session and its sub-agent sessions as a tree, for ``nestor sessions show --tree``.

Each node says which agent ran, what it was asked (its title), how it ended, which tools it used,
how long it took and what it spent. Where the parent's ``task`` tool result recorded the run
(``metadata["subagent"]``, a :class:`~nestor.runtime.tree.subagent_result.SubAgentResult`), its tool
counts, time and stop reason are used; otherwise they are read from the session itself (its tool
calls, and the time from its creation to its last change).

A session's stored usage includes all its descendants; the tree shows that total and, for a node
with children, its own share (the total less its children's totals).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ToolCallPart, ToolReturnPart

from nestor.cli.formatting import counted, format_duration
from nestor.core.usage import USAGE_COUNTS, Usage, format_cost, format_tokens

if TYPE_CHECKING:
    from nestor.app.records import MessageStore, Session, SessionStore

__all__ = ["AgentNode", "count_descendants", "load_tree", "tree_lines"]

_SHOWN_TOOL_NAMES = 4


@dataclass(slots=True)
class AgentNode:
    """One session of the tree with what its run amounted to.

    Attributes:
        session: The stored session (its usage includes its descendants').
        tools_used: Tool calls by tool name.
        duration_s: Time the agent ran (the task's execution time, else the session's lifespan).
        outcome: How it ended: the task's stop reason (``completed``, ``timeout``, ...), or the
            session's status (``running``, ``idle``, ...) when no task result says.
        children: Its sub-agent sessions, oldest first.

    """

    session: Session
    tools_used: dict[str, int]
    duration_s: float
    outcome: str
    children: list[AgentNode] = field(default_factory=list["AgentNode"])

    @property
    def own_usage(self) -> Usage:
        """Usage of this session's own requests: its total less its children's totals.

        The cost is None when every own request was unpriced (a child's unknown cost added nothing
        to the total, so subtracting the known ones is exact).
        """
        total = self.session.usage
        children = Usage()
        for child in self.children:
            children.add(child.session.usage)
        own = Usage(
            **{name: max(getattr(total, name) - getattr(children, name), 0) for name in USAGE_COUNTS},
        )
        if total.cost_usd is not None and own.unpriced_requests < own.requests:
            own.cost_usd = max(total.cost_usd - (children.cost_usd or 0.0), 0.0)
        return own

    def walk(self) -> list[AgentNode]:
        """The node itself and every descendant, depth first."""
        nodes: list[AgentNode] = [self]
        for child in self.children:
            nodes.extend(child.walk())
        return nodes


def load_tree(sessions: SessionStore, messages: MessageStore, root: Session) -> AgentNode:
    """Read ``root`` and all its descendant sessions (and their messages) into a tree."""
    return _node(sessions, messages, root, [], seen=set())


def count_descendants(sessions: SessionStore, session_id: str) -> int:
    """How many sub-agent sessions a session has, at every depth."""
    count, pending, seen = 0, [session_id], {session_id}
    while pending:
        for child in sessions.children(pending.pop()):
            if child.id not in seen:
                seen.add(child.id)
                count += 1
                pending.append(child.id)
    return count


def _node(
    sessions: SessionStore,
    messages: MessageStore,
    session: Session,
    results: list[dict[str, Any]],
    *,
    seen: set[str],
) -> AgentNode:
    seen.add(session.id)
    history = messages.list(session.id)
    results_by_child = _subagent_results(history)
    if results:
        tools: Counter[str] = Counter()
        for result in results:
            tools.update(_int_counts(result.get("tools_used")))
        duration = sum(float(result.get("execution_time") or 0.0) for result in results)
    else:
        tools = Counter(
            part.tool_name
            for message in history
            if isinstance(message, ModelResponse)
            for part in message.parts
            if isinstance(part, ToolCallPart)
        )
        duration = max(session.updated_at - session.created_at, 0.0)
    node = AgentNode(session, dict(tools.most_common()), duration, _outcome(session, results))
    for child in sessions.children(session.id):
        if child.id not in seen:  # the store refuses cycles; this only guards a damaged database
            node.children.append(
                _node(sessions, messages, child, results_by_child.get(child.id, []), seen=seen)
            )
    return node


def _subagent_results(history: list[ModelMessage]) -> dict[str, list[dict[str, Any]]]:
    """The finished sub-agent runs a session's tool results recorded, by sub-agent id.

    A background run's result can be fetched more than once (``task_output``): repeats count once.
    The note that a background run started (no stop reason yet) is not a result.
    """
    found: dict[str, dict[str, dict[str, Any]]] = {}
    for message in history:
        if not isinstance(message, ModelRequest):
            continue
        for part in message.parts:
            if not isinstance(part, ToolReturnPart) or not isinstance(part.metadata, Mapping):
                continue
            result = part.metadata.get("subagent")
            if (
                isinstance(result, dict)
                and "stop_reason" in result
                and isinstance(result.get("agent_id"), str)
            ):
                data: dict[str, Any] = dict(result)
                found.setdefault(data["agent_id"], {})[json.dumps(data, sort_keys=True, default=str)] = data
    return {agent_id: list(runs.values()) for agent_id, runs in found.items()}


def _int_counts(value: object) -> dict[str, int]:
    if not isinstance(value, Mapping):
        return {}
    return {str(k): v for k, v in value.items() if isinstance(v, int)}


def _outcome(session: Session, results: list[dict[str, Any]]) -> str:
    if session.status == "running" or not results:
        return session.status
    return str(results[-1].get("stop_reason") or session.status)


def tree_lines(root: AgentNode) -> list[str]:
    """The tree as text: one line per agent, drawn with ``├─`` / ``└─`` under its parent."""
    lines = [_describe(root)]
    _draw_children(root, "", lines)
    return lines


def _draw_children(node: AgentNode, prefix: str, lines: list[str]) -> None:
    for index, child in enumerate(node.children):
        last = index == len(node.children) - 1
        lines.append(f"{prefix}{'└─ ' if last else '├─ '}{_describe(child)}")
        _draw_children(child, prefix + ("   " if last else "│  "), lines)


def _describe(node: AgentNode) -> str:
    """``ses_...  explore  "find auth code"  completed · 8 tools (grep 5, view 3) · 5.1s · ...``."""
    session = node.session
    title = f'"{session.title}"' if session.title else "(untitled)"
    total = sum(node.tools_used.values())
    tools = counted(total, "tool")
    if node.tools_used:
        names = [f"{name} {count}" for name, count in list(node.tools_used.items())[:_SHOWN_TOOL_NAMES]]
        more = ", …" if len(node.tools_used) > _SHOWN_TOOL_NAMES else ""
        tools += f" ({', '.join(names)}{more})"
    usage = session.usage
    spent = f"{format_tokens(usage.total_tokens)} tok, {format_cost(usage.cost_usd)}"
    if node.children:
        own = node.own_usage
        spent += (
            f" incl. sub-agents (own: {format_tokens(own.total_tokens)} tok, {format_cost(own.cost_usd)})"
        )
    parts = [node.outcome, tools, format_duration(node.duration_s), spent]
    return f"{session.id}  {session.agent_name}  {title}  " + " · ".join(parts)
