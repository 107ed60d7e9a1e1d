"""The SDK's plain data: messages and their content blocks, agent definitions, permission results.

Names and shapes follow the Claude Agent SDK for Python (``claude_agent_sdk``), so that a program
written for it reads the same here: an :class:`AssistantMessage` holds :class:`TextBlock` and
:class:`ToolUseBlock` content, a :class:`UserMessage` a :class:`ToolResultBlock`, and a query ends
with one :class:`ResultMessage`. nestor adds what its agent tree knows: every message names the
agent it comes from (``agent_id``, ``agent_type``); ``parent_tool_use_id`` is the id of the
delegating ``task`` call for a sub-agent's messages, None for the main agent's, as in Claude's SDK.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias


@dataclass(frozen=True, slots=True)
class TextBlock:
    """Text the model wrote."""

    text: str


@dataclass(frozen=True, slots=True)
class ThinkingBlock:
    """The model's reasoning, where the provider shows it (``signature`` is empty: nestor keeps none)."""

    thinking: str
    signature: str = ""


@dataclass(frozen=True, slots=True)
class ToolUseBlock:
    """A tool call the model made: its id, nestor's tool name and its arguments."""

    id: str
    name: str
    input: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolResultBlock:
    """What a tool call returned, as the model reads it; ``is_error`` unless it succeeded."""

    tool_use_id: str
    content: str | None = None
    is_error: bool | None = None


ContentBlock: TypeAlias = TextBlock | ThinkingBlock | ToolUseBlock | ToolResultBlock


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    """What one agent's model said: text, reasoning or one tool call per message.

    Attributes:
        content: The blocks (nestor sends one tool call per message, as Claude Code streams them).
        model: The agent's model, ``provider:model``.
        parent_tool_use_id: The ``task`` call whose sub-agent this is; None for the main agent.
        agent_id: The agent (its session's id).
        agent_type: Its kind: ``coder`` for the main agent, else the sub-agent's spec name.

    """

    content: list[ContentBlock]
    model: str
    parent_tool_use_id: str | None = None
    agent_id: str = ""
    agent_type: str = "coder"


@dataclass(frozen=True, slots=True)
class UserMessage:
    """What the model is sent back: a tool call's result (or the prompt, for a string ``content``)."""

    content: str | list[ContentBlock]
    parent_tool_use_id: str | None = None
    agent_id: str = ""
    agent_type: str = "coder"


@dataclass(frozen=True, slots=True)
class SystemMessage:
    """A note from nestor itself; ``init`` starts each query with its session, model and agents."""

    subtype: str
    data: dict[str, Any]


ResultSubtype: TypeAlias = Literal[
    "success", "error_max_turns", "error_max_budget_usd", "error_during_execution"
]


@dataclass(frozen=True, slots=True)
class ResultMessage:
    """The end of a query: the answer and what the whole agent tree spent.

    Attributes:
        subtype: ``success``, ``error_max_turns`` (``max_turns`` stopped the main agent),
            ``error_max_budget_usd`` (``max_budget_usd`` stopped the tree) or
            ``error_during_execution`` (anything else: an error, a cancel, a refusal, another budget).
        duration_ms: Wall time of the query.
        is_error: Not a success.
        num_turns: The main agent's model requests in its last run.
        session_id: The main agent's session: pass it as ``resume`` to go on with it.
        total_cost_usd: The tree's cost; None when a model's price is unknown (local models).
        usage: The tree's tokens: ``input_tokens``, ``output_tokens``,
            ``cache_read_input_tokens``, ``cache_creation_input_tokens``, and nestor's
            ``reasoning_tokens`` and ``requests``.
        result: The main agent's answer (the error's message when ``is_error`` on an error).
        stop_reason: nestor's reason the run ended (``completed``, ``max_iterations``, ...).

    """

    subtype: ResultSubtype
    duration_ms: int
    is_error: bool
    num_turns: int
    session_id: str
    total_cost_usd: float | None = None
    usage: dict[str, Any] | None = None
    result: str | None = None
    stop_reason: str | None = None


Message: TypeAlias = UserMessage | AssistantMessage | SystemMessage | ResultMessage


@dataclass(frozen=True, slots=True)
class AgentDefinition:
    """A sub-agent defined in code: available to the main agent's ``task`` calls in that session.

    Attributes:
        description: When to use it (the main agent reads it in the ``task`` tool).
        prompt: Its system prompt.
        tools: The tools it may use, nestor's or Claude Code's names (``Read``, ``Grep``,
            ``Bash``); None gives it every tool of its parent.
        model: ``sonnet``/``opus``/``haiku`` (nestor's large, large and small model),
            ``inherit``, a role or tier, or ``provider:model``; None inherits.

    """

    description: str
    prompt: str
    tools: list[str] | None = None
    model: str | None = None


@dataclass(frozen=True, slots=True)
class ToolPermissionContext:
    """What ``can_use_tool`` is told besides the tool's name and input.

    Attributes:
        tool_use_id: The call asking.
        agent_id: The agent making it.
        agent_type: That agent's kind (``coder`` for the main agent).
        parent_tool_use_id: The ``task`` call of that sub-agent; None for the main agent.
        target: What nestor's rules judged: an absolute path, a command line or a URL.
        description: One line for a person, e.g. ``Run: git status``.
        suggestions: Claude's permission updates; nestor offers none (always empty).
        signal: Reserved, as in Claude's SDK (always None).

    """

    tool_use_id: str | None = None
    agent_id: str = ""
    agent_type: str = "coder"
    parent_tool_use_id: str | None = None
    target: str = ""
    description: str = ""
    suggestions: list[Any] = field(default_factory=list[Any])
    signal: Any | None = None


@dataclass(frozen=True, slots=True)
class PermissionResultAllow:
    """Let the call run.

    ``updated_input`` other than the call's own input is refused (the call is denied, and the
    model told why): nestor cannot run a call with other arguments than the ones the model
    sent. ``updated_permissions`` is not supported and must stay None.
    """

    behavior: Literal["allow"] = "allow"
    updated_input: dict[str, Any] | None = None
    updated_permissions: list[Any] | None = None


@dataclass(frozen=True, slots=True)
class PermissionResultDeny:
    """Refuse the call: ``message`` tells the model why; ``interrupt`` also stops the query."""

    behavior: Literal["deny"] = "deny"
    message: str = ""
    interrupt: bool = False


PermissionResult: TypeAlias = PermissionResultAllow | PermissionResultDeny

CanUseTool: TypeAlias = Callable[[str, dict[str, Any], ToolPermissionContext], Awaitable[PermissionResult]]
"""``async def can_use_tool(tool_name, input, context) -> PermissionResultAllow | PermissionResultDeny``."""

PermissionMode: TypeAlias = Literal["default", "acceptEdits", "plan", "bypassPermissions"]
