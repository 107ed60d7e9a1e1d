"""One conversation's events as SDK messages, in the order they happen, for the whole agent tree.

:class:`MessageFeed` follows the bus (:meth:`MessageFeed.handle`) and the tool results (the
:class:`ToolResults` hook every agent of the tree gets): a model's text, gathered from its
deltas, becomes an :class:`~nestor.sdk.types.AssistantMessage` when its request ends or a tool
call starts; each tool call is an ``AssistantMessage`` of one
:class:`~nestor.sdk.types.ToolUseBlock` when it starts, and its result, as the model reads it,
a :class:`~nestor.sdk.types.UserMessage` of one :class:`~nestor.sdk.types.ToolResultBlock`.
Every message names its agent and, for a sub-agent, the ``task`` call that started it
(``AgentStarted.parent_tool_call_id``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from pydantic_ai.messages import ToolCallPart, ToolReturnPart

from nestor.core.events import (
    AgentFinished,
    AgentStarted,
    Compacted,
    ErrorEvent,
    Event,
    RequestFinished,
    TextDelta,
    ThinkingDelta,
    ToolStarted,
)
from nestor.runtime.kernel.hooks import Hook, RunState
from nestor.sdk.types import (
    AssistantMessage,
    ContentBlock,
    Message,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)


@dataclass(frozen=True, slots=True)
class AgentPlace:
    """Where an agent sits in the tree, as messages name it."""

    agent_type: str
    parent_tool_use_id: str | None
    model: str


class MessageFeed:
    """Turns one main agent's tree of events into messages on :attr:`queue`.

    Args:
        main_id: The main agent's id (its session).
        model: The main agent's model.

    """

    def __init__(self, main_id: str, model: str) -> None:
        self.main_id = main_id
        self.queue: asyncio.Queue[Message | None] = asyncio.Queue()
        """The messages; None marks the end of a run (see :meth:`end`)."""
        self._places: dict[str, AgentPlace] = {main_id: AgentPlace("coder", None, model)}
        self._text: dict[str, list[str]] = {}
        self._thinking: dict[str, list[str]] = {}
        self.init: dict[str, Any] | None = None
        """The ``init`` message's data, sent when the main agent's next run starts (then cleared)."""
        self.replaced: dict[str, str] = {}
        """Tool call id -> what the model reads instead of a refusal (``can_use_tool``'s message)."""

    def place(self, agent_id: str) -> AgentPlace:
        """The agent's type, its ``task`` call and model (an agent not seen start counts as the main one)."""
        return self._places.get(agent_id) or self._places[self.main_id]

    def handle(self, event: Event) -> None:
        """Follow one event of the bus (a handler: called in order, synchronously)."""
        agent_id = event.agent_id
        match event:
            case AgentStarted():
                if agent_id == self.main_id and self.init is not None:
                    self.queue.put_nowait(SystemMessage("init", self.init))
                    self.init = None
                elif agent_id != self.main_id:
                    self._places[agent_id] = AgentPlace(
                        event.agent_type, event.parent_tool_call_id, event.model or self.place(agent_id).model
                    )
            case TextDelta():
                self._text.setdefault(agent_id, []).append(event.text)
            case ThinkingDelta():
                self._thinking.setdefault(agent_id, []).append(event.text)
            case RequestFinished():
                self._flush(agent_id)
            case ToolStarted():
                self._flush(agent_id)
                self._assistant(agent_id, ToolUseBlock(event.tool_call_id, event.tool_name, dict(event.args)))
            case AgentFinished():
                self._flush(agent_id)
            case Compacted():
                data = {"agent_id": agent_id, "trigger": event.trigger, "pre_tokens": event.tokens_before}
                self.queue.put_nowait(SystemMessage("compact_boundary", data))
            case ErrorEvent():
                data = {"agent_id": agent_id, "message": event.message, "hint": event.hint}
                self.queue.put_nowait(SystemMessage("error", data))
            case _:
                return

    def tool_result(self, agent_id: str, call_id: str, content: str, is_error: bool) -> None:
        """Send a tool call's result as the model reads it."""
        place = self.place(agent_id)
        block = ToolResultBlock(call_id, content, is_error)
        self.queue.put_nowait(
            UserMessage([block], place.parent_tool_use_id, agent_id=agent_id, agent_type=place.agent_type)
        )

    def end(self) -> None:
        """Mark the end of a run: what its agents said is sent, then the end marker."""
        for agent_id in [*self._text, *self._thinking]:
            self._flush(agent_id)
        self.queue.put_nowait(None)

    def _flush(self, agent_id: str) -> None:
        thinking = "".join(self._thinking.pop(agent_id, ()))
        text = "".join(self._text.pop(agent_id, ()))
        if thinking:
            self._assistant(agent_id, ThinkingBlock(thinking))
        if text:
            self._assistant(agent_id, TextBlock(text))

    def _assistant(self, agent_id: str, block: ContentBlock) -> None:
        place = self.place(agent_id)
        self.queue.put_nowait(
            AssistantMessage(
                [block], place.model, place.parent_tool_use_id, agent_id=agent_id, agent_type=place.agent_type
            )
        )


class ToolResults(Hook):
    """Hands every tool result of an agent to the feed, with ``can_use_tool``'s refusal text in place.

    A refusal ``can_use_tool`` explained (:attr:`MessageFeed.replaced`) reaches the model in its
    words, as in Claude's SDK, instead of nestor's "The user denied".
    """

    def __init__(self, feed: Callable[[], MessageFeed]) -> None:
        self._feed = feed  # agents are built before the feed, which needs the main agent's session

    async def after_tool_result(
        self, state: RunState, call: ToolCallPart, result: ToolReturnPart
    ) -> ToolReturnPart:
        """Send the result (replaced by the callback's refusal where it gave one)."""
        feed = self._feed()
        replacement = feed.replaced.pop(call.tool_call_id, None)
        if replacement is not None:
            result = replace(result, content=replacement)
        outcome = getattr(result, "outcome", "success")
        feed.tool_result(state.agent_id, call.tool_call_id, result.model_response_str(), outcome != "success")
        return result
