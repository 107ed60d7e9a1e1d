"""nestor's public API: what a program that embeds nestor may import, and nothing else.

Everything here is supported; everything else in the package is internal and may change. A
typical use::

    from pathlib import Path

    from nestor.api import App, load_settings

    async def main() -> None:
        app = App.open(load_settings(Path.cwd()))
        app.subscribe(print)  # every event of every agent: the Event union below
        try:
            conversation = await app.conversation(interactive=False)
            outcome = await conversation.run_to_completion("explain src/main.py")
            print(outcome.text, outcome.usage.total_tokens)
        finally:
            app.close()

- Opening: :class:`App` (``App.open(settings)``), :class:`Settings` from :func:`load_settings`.
- Running: :class:`Conversation` (``submit``, ``wait``, ``run_to_completion`` returning an
  :class:`Outcome`, ``cancel``, ``compact``, ``answer`` to :class:`PermissionRequested` events
  with a :data:`PermissionAnswer`), :class:`RunResult`, :class:`Session`, :class:`Usage`.
- Events: the :data:`Event` union and its members, :data:`StopReason`.
- Agents: :class:`AgentSpec` (what an agent file becomes).
- The SDK, shaped as the Claude Agent SDK's (``nestor.sdk``, in process): :func:`query`,
  :class:`Client`, :class:`AgentOptions`, :class:`AgentDefinition`; the messages
  (:class:`AssistantMessage`, :class:`UserMessage`, :class:`SystemMessage`, :class:`ResultMessage`)
  and their blocks (:class:`TextBlock`, :class:`ThinkingBlock`, :class:`ToolUseBlock`,
  :class:`ToolResultBlock`); ``can_use_tool``'s :class:`ToolPermissionContext`,
  :class:`PermissionResultAllow`, :class:`PermissionResultDeny`.
- Errors: :class:`NestorError` (a one-line ``message`` and a ``hint``) and its subclasses.
- Extending: the names of :mod:`nestor.extensions` (tools, hooks, search back ends).
- Hooks of Claude Code's events in process, as the Claude Agent SDK has them: :class:`HookMatcher`
  groups :data:`HookCallback` functions (``async (input, tool_use_id, context: HookContext) ->
  dict``, the same JSON a shell hook reads on stdin and writes on stdout) per :data:`HookEvent`,
  passed as ``App.open(settings, hooks={"PreToolUse": [HookMatcher("Bash", [check])]})``.
- Testing: scripted loopback servers that speak the OpenAI and Anthropic protocols
  (:class:`ScriptedOpenAIServer` with :class:`ServerReply`, :class:`ServerToolCall`,
  :class:`ServerUsage`; :class:`ScriptedAnthropicServer`) and :class:`ScriptedModel`;
  :mod:`nestor.testing` has the rest of their vocabulary.

Names are imported on first use: ``import nestor.api`` costs nothing until a name is read.
``tests/test_api.py`` lists ``__all__`` exactly: a change to it is a change of the API.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nestor.agents.spec import AgentSpec
    from nestor.app.conversation import Conversation, Outcome
    from nestor.app.root import App
    from nestor.config.hooks import HookEvent
    from nestor.config.loading import load_settings
    from nestor.config.settings import Settings
    from nestor.core.errors import (
        AgentFileError,
        ConfigError,
        DelegationError,
        MissingCredentialsError,
        ModelRequestError,
        NestorError,
        PermissionDeniedError,
        ProviderError,
        SessionInUseError,
        SessionNotFoundError,
        StoreError,
        ToolError,
        UnknownAgentError,
        UnknownProviderError,
    )
    from nestor.core.events import (
        AgentFinished,
        AgentStarted,
        BackgroundNotice,
        Compacted,
        CompactionStarted,
        ErrorEvent,
        Event,
        PermissionAsked,
        PermissionRequested,
        PermissionWithdrawn,
        PromptQueued,
        RequestFinished,
        Retrying,
        SessionTitled,
        StopReason,
        TextDelta,
        ThinkingDelta,
        TodosUpdated,
        ToolFinished,
        ToolStarted,
    )
    from nestor.core.permission import PermissionAnswer, PermissionRequest
    from nestor.core.usage import Usage
    from nestor.runtime.features.hook_events.dispatcher import HookCallback, HookContext, HookMatcher
    from nestor.runtime.kernel.hooks import Hook, HookAction, Remind, RunState, Stop
    from nestor.runtime.kernel.setup import RunResult
    from nestor.sdk.client import Client, query
    from nestor.sdk.options import AgentOptions
    from nestor.sdk.types import (
        AgentDefinition,
        AssistantMessage,
        CanUseTool,
        ContentBlock,
        Message,
        PermissionMode,
        PermissionResult,
        PermissionResultAllow,
        PermissionResultDeny,
        ResultMessage,
        SystemMessage,
        TextBlock,
        ThinkingBlock,
        ToolPermissionContext,
        ToolResultBlock,
        ToolUseBlock,
        UserMessage,
    )
    from nestor.store.sessions import Session
    from nestor.testing.anthropic_server import ScriptedAnthropicServer
    from nestor.testing.openai_server import ScriptedOpenAIServer, ServerReply, ServerToolCall, ServerUsage
    from nestor.testing.scripted_model import ScriptedModel
    from nestor.tools.base import Tool, ToolContext, ToolResult
    from nestor.tools.catalogue import ToolCatalogue, Trait
    from nestor.tools.search_backends import SearchBackend, SearchHit

_ERRORS = [
    "AgentFileError",
    "ConfigError",
    "DelegationError",
    "MissingCredentialsError",
    "ModelRequestError",
    "NestorError",
    "PermissionDeniedError",
    "ProviderError",
    "SessionInUseError",
    "SessionNotFoundError",
    "StoreError",
    "ToolError",
    "UnknownAgentError",
    "UnknownProviderError",
]
_EVENTS = [
    "AgentFinished",
    "AgentStarted",
    "BackgroundNotice",
    "Compacted",
    "CompactionStarted",
    "ErrorEvent",
    "Event",
    "PermissionAsked",
    "PermissionRequested",
    "PermissionWithdrawn",
    "PromptQueued",
    "RequestFinished",
    "Retrying",
    "SessionTitled",
    "StopReason",
    "TextDelta",
    "ThinkingDelta",
    "TodosUpdated",
    "ToolFinished",
    "ToolStarted",
]
_EXTENSIONS = [
    "Hook",
    "HookAction",
    "Remind",
    "RunState",
    "SearchBackend",
    "SearchHit",
    "Stop",
    "Tool",
    "ToolCatalogue",
    "ToolContext",
    "ToolResult",
    "Trait",
]

_SDK = [
    "AgentDefinition",
    "AssistantMessage",
    "CanUseTool",
    "ContentBlock",
    "Message",
    "PermissionMode",
    "PermissionResult",
    "PermissionResultAllow",
    "PermissionResultDeny",
    "ResultMessage",
    "SystemMessage",
    "TextBlock",
    "ThinkingBlock",
    "ToolPermissionContext",
    "ToolResultBlock",
    "ToolUseBlock",
    "UserMessage",
]

_HOMES: dict[str, str] = {
    "App": "nestor.app.root",
    "Conversation": "nestor.app.conversation",
    "Outcome": "nestor.app.conversation",
    "Settings": "nestor.config.settings",
    "load_settings": "nestor.config.loading",
    "RunResult": "nestor.runtime.kernel.setup",
    "Session": "nestor.store.sessions",
    "Usage": "nestor.core.usage",
    "PermissionAnswer": "nestor.core.permission",
    "PermissionRequest": "nestor.core.permission",
    "AgentSpec": "nestor.agents.spec",
    "HookEvent": "nestor.config.hooks",
    **dict.fromkeys(
        ["HookCallback", "HookContext", "HookMatcher"], "nestor.runtime.features.hook_events.dispatcher"
    ),
    **dict.fromkeys(_ERRORS, "nestor.core.errors"),
    **dict.fromkeys(_EVENTS, "nestor.core.events"),
    **dict.fromkeys(_EXTENSIONS, "nestor.extensions"),
    "ScriptedAnthropicServer": "nestor.testing.anthropic_server",
    **dict.fromkeys(
        ["ScriptedOpenAIServer", "ServerReply", "ServerToolCall", "ServerUsage"],
        "nestor.testing.openai_server",
    ),
    "ScriptedModel": "nestor.testing.scripted_model",
    "AgentOptions": "nestor.sdk.options",
    "Client": "nestor.sdk.client",
    "query": "nestor.sdk.client",
    **dict.fromkeys(_SDK, "nestor.sdk.types"),
}

__all__ = [
    "AgentDefinition",
    "AgentFileError",
    "AgentFinished",
    "AgentOptions",
    "AgentSpec",
    "AgentStarted",
    "App",
    "AssistantMessage",
    "BackgroundNotice",
    "CanUseTool",
    "Client",
    "Compacted",
    "CompactionStarted",
    "ConfigError",
    "ContentBlock",
    "Conversation",
    "DelegationError",
    "ErrorEvent",
    "Event",
    "Hook",
    "HookAction",
    "HookCallback",
    "HookContext",
    "HookEvent",
    "HookMatcher",
    "Message",
    "MissingCredentialsError",
    "ModelRequestError",
    "NestorError",
    "Outcome",
    "PermissionAnswer",
    "PermissionAsked",
    "PermissionDeniedError",
    "PermissionMode",
    "PermissionRequest",
    "PermissionRequested",
    "PermissionResult",
    "PermissionResultAllow",
    "PermissionResultDeny",
    "PermissionWithdrawn",
    "PromptQueued",
    "ProviderError",
    "Remind",
    "RequestFinished",
    "ResultMessage",
    "Retrying",
    "RunResult",
    "RunState",
    "ScriptedAnthropicServer",
    "ScriptedModel",
    "ScriptedOpenAIServer",
    "SearchBackend",
    "SearchHit",
    "ServerReply",
    "ServerToolCall",
    "ServerUsage",
    "Session",
    "SessionInUseError",
    "SessionNotFoundError",
    "SessionTitled",
    "Settings",
    "Stop",
    "StopReason",
    "StoreError",
    "SystemMessage",
    "TextBlock",
    "TextDelta",
    "ThinkingBlock",
    "ThinkingDelta",
    "TodosUpdated",
    "Tool",
    "ToolCatalogue",
    "ToolContext",
    "ToolError",
    "ToolFinished",
    "ToolPermissionContext",
    "ToolResult",
    "ToolResultBlock",
    "ToolStarted",
    "ToolUseBlock",
    "Trait",
    "UnknownAgentError",
    "UnknownProviderError",
    "Usage",
    "UserMessage",
    "load_settings",
    "query",
]


def __getattr__(name: str) -> Any:
    """Import a public name from its home on first use."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
