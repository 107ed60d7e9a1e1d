"""The events an agent run emits, one union discriminated by ``type``.

Every event names the agent (``agent_id``, which is also its session id) it comes from, so a UI can
route events of a whole agent tree. ``stream-json`` output is one of these per line.
"""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from nestor.core.permission import PERMISSION_CHOICES, PermissionAnswer, PermissionRequest
from nestor.core.usage import Usage, UsageField

StopReason = Literal[
    "completed", "max_iterations", "token_budget", "timeout", "cancelled", "error", "loop", "refusal", "hook"
]
"""Why an agent's run ended: it answered (``completed``), a budget or the loop guard stopped it, the
user cancelled it, an error ended it, the model refused (``refusal``: the provider reported a
refusal or its content filter), or a user's hook stopped it (``hook``: ``continue: false``, or a
blocked prompt)."""


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True)

    agent_id: str
    timestamp: float = Field(default_factory=time.time)


class AgentStarted(_Event):
    """An agent began a run (a turn of its session).

    A sub-agent's ``parent_tool_call_id`` is its parent's ``task`` call that started this run (a
    pooled or resumed agent's changes with each task), so a UI can show the run inside that call.
    """

    type: Literal["agent_started"] = "agent_started"
    parent_id: str | None = None
    parent_tool_call_id: str | None = None
    depth: int = 0
    agent_type: str = "coder"
    description: str = ""
    model: str = ""


class TextDelta(_Event):
    """A piece of the assistant's visible text, as it streams."""

    type: Literal["text_delta"] = "text_delta"
    text: str


class ThinkingDelta(_Event):
    """A piece of the model's reasoning, as it streams (when the provider exposes it)."""

    type: Literal["thinking_delta"] = "thinking_delta"
    text: str


class ToolStarted(_Event):
    """A tool call began running."""

    type: Literal["tool_started"] = "tool_started"
    tool_call_id: str
    tool_name: str
    args: dict[str, Any] = Field(default_factory=dict)


class ToolFinished(_Event):
    """A tool call ended, with its outcome and a short preview of its result."""

    type: Literal["tool_finished"] = "tool_finished"
    tool_call_id: str
    tool_name: str
    outcome: Literal["success", "failed", "denied", "interrupted", "retried"] = "success"
    preview: str = ""
    duration_s: float = 0.0


class PermissionAsked(_Event):
    """A tool call needs the user's permission (``decision`` None), or got its answer.

    ``rule`` is the rule that decided, when one did (``bash(rm *)``): a question an ask rule raised
    is one the user wrote down they want asked. ``must_ask`` marks a question only a person may
    answer, whatever a UI's mode (a write into a git dir): no mode answers it by itself.
    """

    type: Literal["permission_asked"] = "permission_asked"
    tool_call_id: str
    tool_name: str
    target: str
    decision: Literal["allow", "deny"] | None = None
    reason: str = ""
    rule: str | None = None
    must_ask: bool = False


class PermissionRequested(_Event):
    """A tool call waits for the user's answer; a UI answers it by ``request_id`` through the facade.

    Published only where someone can answer (the REPL, a TUI); a headless run denies without asking.
    ``choices`` are the answers to offer: :data:`~nestor.core.permission.YES_NO` makes it a yes/no
    question (a project's MCP server to approve: its definition is the request's ``target``).
    """

    type: Literal["permission_requested"] = "permission_requested"
    request_id: str
    request: PermissionRequest
    choices: tuple[PermissionAnswer, ...] = PERMISSION_CHOICES


class PermissionWithdrawn(_Event):
    """A question of :class:`PermissionRequested` no longer needs an answer: its run was stopped."""

    type: Literal["permission_withdrawn"] = "permission_withdrawn"
    request_id: str


class RequestFinished(_Event):
    """A model request completed; carries that request's usage and the run's totals so far."""

    type: Literal["request_finished"] = "request_finished"
    model: str
    usage: UsageField
    run_usage: UsageField


class Retrying(_Event):
    """A model request failed and will be retried after ``delay_s``."""

    type: Literal["retrying"] = "retrying"
    attempt: int
    delay_s: float
    reason: str


class PromptQueued(_Event):
    """A prompt arrived while the agent was busy; it is taken at the next turn."""

    type: Literal["prompt_queued"] = "prompt_queued"
    prompt: str


class AgentFinished(_Event):
    """An agent run ended: why, its final text, and what it spent."""

    type: Literal["agent_finished"] = "agent_finished"
    parent_id: str | None = None
    depth: int = 0
    agent_type: str = "coder"
    description: str = ""
    stop_reason: StopReason
    result: str
    is_error: bool = False
    num_turns: int = 0
    usage: UsageField = Field(default_factory=Usage)
    cost_usd: float | None = None
    duration_s: float = 0.0


class CompactionStarted(_Event):
    """The agent began summarising the older part of its history to free context space.

    ``trigger`` says why: ``threshold`` (the next request would pass the configured share of the
    context window), ``overflow`` (the provider rejected a request as too long) or ``manual``
    (``/compact``).
    """

    type: Literal["compaction_started"] = "compaction_started"
    trigger: Literal["threshold", "overflow", "manual"]
    context_tokens: int
    context_window: int


class Compacted(_Event):
    """The agent's history was compacted: the summary replaced ``summarized_messages`` messages."""

    type: Literal["compacted"] = "compacted"
    trigger: Literal["threshold", "overflow", "manual"]
    tokens_before: int
    tokens_after: int
    summarized_messages: int
    kept_messages: int
    usage: UsageField = Field(default_factory=Usage)
    duration_s: float = 0.0


class SessionTitled(_Event):
    """The session got a title written by the small model."""

    type: Literal["session_titled"] = "session_titled"
    title: str


class TodosUpdated(_Event):
    """The agent's todo list changed; ``todos`` is the whole list (``content``, ``status``)."""

    type: Literal["todos_updated"] = "todos_updated"
    todos: list[dict[str, str]]


class BackgroundNotice(_Event):
    """A background sub-agent ended; ``text`` is the notice its parent's next request carries.

    ``agent_id`` is the parent that receives the notice; ``child_id`` the agent that ended.
    """

    type: Literal["background_notice"] = "background_notice"
    child_id: str
    child_type: str
    status: str
    text: str


class ErrorEvent(_Event):
    """Something went wrong that the user should see (the run may still continue)."""

    type: Literal["error"] = "error"
    message: str
    hint: str | None = None


Event = Annotated[
    AgentStarted
    | TextDelta
    | ThinkingDelta
    | ToolStarted
    | ToolFinished
    | PermissionAsked
    | PermissionRequested
    | PermissionWithdrawn
    | RequestFinished
    | Retrying
    | PromptQueued
    | CompactionStarted
    | Compacted
    | SessionTitled
    | TodosUpdated
    | BackgroundNotice
    | AgentFinished
    | ErrorEvent,
    Field(discriminator="type"),
]

EventAdapter: TypeAdapter[Event] = TypeAdapter(Event)
"""Parses one event from JSON or a dict (used by consumers of ``stream-json``)."""

LOSSY_EVENT_TYPES = frozenset({"text_delta", "thinking_delta"})
"""Event types a slow subscriber may miss: the final message carries their content anyway."""
