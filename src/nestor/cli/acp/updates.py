"""nestor's events as ACP ``session/update`` s, the agent tree included.

The protocol has no nesting, so the tree travels two ways at once. Every update of a sub-agent
carries ``_meta.nestor`` (its ``agentId``, ``parentAgentId``, ``parentToolCallId``, ``agentType``,
``depth``, ``background``), from which a client that reads it draws the tree; and the card of the
``task`` call that started it shows its progress as text (what it does, its tool calls as they end,
the last words it wrote), which any client shows. The main agent's text and reasoning are the
message and thought chunks; its todo list is the plan.

:class:`UpdateTranslator` is plain state and no I/O besides the small reads a diff needs, so it is
cheap to test: it turns one event into the updates to send, each with a key when a later update of
the same key replaces it (a card's rolling progress).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    PlanEntry,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
)

from nestor.cli.acp.tool_calls import ToolCallView, ToolContent, describe_call, text_content, tool_call_start
from nestor.cli.agent_lines import outcome_words
from nestor.cli.formatting import one_line, turn_summary
from nestor.core.events import (
    AgentFinished,
    AgentStarted,
    BackgroundNotice,
    ErrorEvent,
    Event,
    RequestFinished,
    TextDelta,
    ThinkingDelta,
    TodosUpdated,
    ToolFinished,
    ToolStarted,
)

SessionUpdate = AgentMessageChunk | AgentThoughtChunk | ToolCallStart | ToolCallProgress | AgentPlanUpdate
Keyed = tuple[SessionUpdate, str | None]
"""An update, and the key under which a later update replaces it while both wait to be sent."""

PROGRESS_LINES = 8
"""How many lines of a sub-agent's activity its ``task`` card keeps."""

_SPEECH_CHARS = 160


@dataclass(slots=True)
class SubAgentCard:
    """A sub-agent as the editor sees it: the ``task`` card it shows in, and what the card says."""

    agent_id: str
    agent_type: str
    description: str
    depth: int
    parent_id: str | None
    parent_call: str | None
    background: bool
    lines: deque[str] = field(default_factory=lambda: deque(maxlen=PROGRESS_LINES))
    speech: str = ""

    def meta(self) -> dict[str, Any]:
        """Its ``_meta.nestor``."""
        return {
            "agentId": self.agent_id,
            "parentAgentId": self.parent_id,
            "parentToolCallId": self.parent_call,
            "agentType": self.agent_type,
            "depth": self.depth,
            "background": self.background,
        }

    def progress(self) -> str:
        """The text of its card: what it was asked, its last steps, its last words."""
        header = f"{self.agent_type} · {self.description}".rstrip(" ·")
        speech = [f"  {one_line(self.speech[-_SPEECH_CHARS:], _SPEECH_CHARS)}"] if self.speech.strip() else []
        return "\n".join([header, *self.lines, *speech])


@dataclass(slots=True)
class KnownCall:
    """A tool call sent to the editor: what a permission question or its end needs again."""

    agent_id: str
    tool_name: str
    view: ToolCallView


class UpdateTranslator:
    """Turns the events of one main agent's tree into ACP updates.

    Args:
        main_id: The main agent's id (its session).
        project_root: The project the tree works in (paths of cards are absolute).
        is_background: Tells whether a sub-agent was started in the background.

    """

    def __init__(self, main_id: str, project_root: Path, is_background: Callable[[str], bool]) -> None:
        self.main_id = main_id
        self._root = project_root
        self._is_background = is_background
        self.agents: dict[str, SubAgentCard] = {}
        self.calls: dict[str, KnownCall] = {}
        self._card_of_call: dict[str, SubAgentCard] = {}
        self._main_spoke: Literal["", "speaking", "ended"] = ""

    def new_prompt(self) -> None:
        """A prompt begins: the editor starts a new message."""
        self._main_spoke = ""

    def call_id(self, agent_id: str, tool_call_id: str) -> str:
        """The ACP id of a tool call: the model's for the main agent, prefixed by the agent's id below it.

        Models number their calls per conversation, so two agents may both send ``call_0``.
        """
        return tool_call_id if agent_id == self.main_id else f"{agent_id}/{tool_call_id}"

    def meta(self, agent_id: str) -> dict[str, Any]:
        """The ``_meta`` of an update of ``agent_id``."""
        agent = self.agents.get(agent_id)
        if agent is None:
            return {"nestor": {"agentId": agent_id, "depth": 0, "agentType": "coder"}}
        return {"nestor": agent.meta()}

    def handle(self, event: Event) -> list[Keyed]:
        """The updates ``event`` makes (none for the events an editor has no place for)."""
        main = event.agent_id == self.main_id
        match event:
            case TextDelta() if main:
                # A later response of the same prompt (after tools, or a background agent's notice)
                # is a paragraph of its own in the editor's one message.
                text = "\n\n" + event.text if self._main_spoke == "ended" else event.text
                self._main_spoke = "speaking"
                return [(AgentMessageChunk(session_update="agent_message_chunk", content=_text(text)), None)]
            case RequestFinished() if main and self._main_spoke:
                self._main_spoke = "ended"
                return []
            case ThinkingDelta() if main:
                return [
                    (AgentThoughtChunk(session_update="agent_thought_chunk", content=_text(event.text)), None)
                ]
            case TextDelta():
                return self._spoke(event.agent_id, event.text)
            case ToolStarted():
                return self._tool_started(event)
            case ToolFinished():
                return self._tool_finished(event)
            case TodosUpdated() if main:
                return [(plan_update(event.todos), None)]
            case AgentStarted() if not main:
                return self._agent_started(event)
            case AgentFinished() if not main:
                return self._step(
                    event.agent_id, f"{_finish_mark(event)} {outcome_words(event)} · {turn_summary(event)}"
                )
            case BackgroundNotice():
                return self._step(event.child_id, f"notice to the parent: {one_line(event.text, 100)}")
            case ErrorEvent() if main:
                text = f"\n{event.message}" + (f" ({event.hint})" if event.hint else "") + "\n"
                return [(AgentThoughtChunk(session_update="agent_thought_chunk", content=_text(text)), None)]
            case ErrorEvent():
                return self._step(event.agent_id, f"error: {one_line(event.message, 100)}")
            case _:
                return []

    def _agent_started(self, event: AgentStarted) -> list[Keyed]:
        agent = self.agents.get(event.agent_id)
        parent_call = (
            self.call_id(event.parent_id, event.parent_tool_call_id)
            if event.parent_id is not None and event.parent_tool_call_id
            else None
        )
        if agent is None:
            agent = SubAgentCard(
                agent_id=event.agent_id,
                agent_type=event.agent_type,
                description=event.description,
                depth=event.depth,
                parent_id=event.parent_id,
                parent_call=parent_call,
                background=self._is_background(event.agent_id),
            )
            self.agents[event.agent_id] = agent
        else:  # a pooled or resumed agent's next task: its card is the new call's
            agent.parent_call = parent_call or agent.parent_call
            agent.description = event.description or agent.description
            agent.lines.clear()
            agent.speech = ""
        if agent.parent_call is not None:
            self._card_of_call[agent.parent_call] = agent
        return self._step(event.agent_id, f"started ({event.model})" if event.model else "started")

    def _tool_started(self, event: ToolStarted) -> list[Keyed]:
        acp_id = self.call_id(event.agent_id, event.tool_call_id)
        view = describe_call(event.tool_name, event.args, self._root)
        self.calls[acp_id] = KnownCall(event.agent_id, event.tool_name, view)
        start = tool_call_start(acp_id, view, event.args, self.meta(event.agent_id))
        updates: list[Keyed] = [(start, None)]
        if event.agent_id != self.main_id:
            agent = self.agents.get(event.agent_id)
            if agent is not None:
                agent.speech = ""
            updates += self._step(event.agent_id, f"… {view.title}")
        return updates

    def _tool_finished(self, event: ToolFinished) -> list[Keyed]:
        acp_id = self.call_id(event.agent_id, event.tool_call_id)
        known = self.calls.get(acp_id)
        succeeded = event.outcome == "success"
        content: list[ToolContent] = []
        if known is not None and known.tool_name in ("edit", "write") and succeeded:
            content = list(known.view.content)
        elif known is not None and known.tool_name == "bash":
            content = (
                [*known.view.content, text_content(event.preview)] if event.preview else known.view.content
            )
        elif event.preview:
            content = [text_content(event.preview)]
        card = self._card_of_call.get(acp_id)
        if card is not None:
            content = [text_content(card.progress()), *content]
        finish = ToolCallProgress(
            session_update="tool_call_update",
            tool_call_id=acp_id,
            status="completed" if succeeded else "failed",
            content=content or None,
            raw_output={"outcome": event.outcome, "preview": event.preview},
            field_meta=self.meta(event.agent_id),
        )
        updates: list[Keyed] = [(finish, None)]
        if event.agent_id != self.main_id and known is not None:
            updates += self._step(event.agent_id, f"{'✓' if succeeded else '✗'} {known.view.title}")
        return updates

    def _spoke(self, agent_id: str, text: str) -> list[Keyed]:
        agent = self.agents.get(agent_id)
        if agent is None:
            return []
        agent.speech = (agent.speech + text)[-4 * _SPEECH_CHARS :]
        return self._progress(agent)

    def _step(self, agent_id: str, line: str) -> list[Keyed]:
        agent = self.agents.get(agent_id)
        if agent is None:
            return []
        if line.startswith("✓ ") or line.startswith("✗ "):
            started = f"… {line[2:]}"
            if started in agent.lines:  # the call's line turns into its outcome
                agent.lines.remove(started)
        agent.lines.append(line)
        return self._progress(agent)

    def _progress(self, agent: SubAgentCard) -> list[Keyed]:
        if agent.parent_call is None:
            return []
        update = ToolCallProgress(
            session_update="tool_call_update",
            tool_call_id=agent.parent_call,
            content=[text_content(agent.progress())],
            field_meta={"nestor": {**agent.meta(), "progress": True}},
        )
        return [(update, f"progress:{agent.parent_call}")]


def plan_update(todos: list[dict[str, str]]) -> AgentPlanUpdate:
    """The whole todo list as the session's plan."""
    entries = [
        PlanEntry(
            content=item.get("content", ""), priority="medium", status=_plan_status(item.get("status", ""))
        )
        for item in todos
    ]
    return AgentPlanUpdate(session_update="plan", entries=entries)


def _plan_status(status: str) -> Any:
    return status if status in ("pending", "in_progress", "completed") else "pending"


def _text(text: str) -> TextContentBlock:
    return TextContentBlock(type="text", text=text)


def _finish_mark(event: AgentFinished) -> str:
    if event.stop_reason == "completed" and not event.is_error:
        return "✓"
    return "⊘" if event.stop_reason == "cancelled" else "✗"
