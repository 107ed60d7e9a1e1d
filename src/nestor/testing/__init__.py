"""Test support shipped with nestor: scripted models, and scripted OpenAI, Anthropic and Gemini servers.

- :class:`ScriptedModel` answers nestor's agent loop from a script of :class:`Step` s (built with
  :func:`reply`, :func:`call`, :func:`fail`, or computed by a function of the messages so far), streamed
  or not, and records every request.
- :class:`ScriptedOpenAIServer` speaks the OpenAI chat completions protocol (and the Responses API) on
  127.0.0.1, so tests can drive the real OpenAI provider over real HTTP, including rate limits, server
  errors and dropped streams; ``python -m nestor.testing.openai_server`` runs it as a separate process.
  Every server records each request's body, headers and arrival time.
- :class:`ScriptedAnthropicServer` speaks the Anthropic Messages API on 127.0.0.1 the same way
  (:class:`AnthropicReply` steps, usage with cache reads and writes, Anthropic-style errors from
  :func:`anthropic_error`, and :func:`prompt_too_long` for a context overflow), and records every
  request body, so tests can check what the Anthropic provider sends (cache breakpoints, tools).
- :class:`ScriptedGeminiServer` speaks Google's Gemini API on 127.0.0.1 (``generateContent`` and its
  server-sent-event stream, ``countTokens``), from :class:`ServerReply` steps, for Gemini clients
  pointed at it with ``GOOGLE_GEMINI_BASE_URL``.

The servers take the shared :class:`HTTPErrorReply` and :class:`ServerToolCall`.

Names are imported on first use: the server modules need only the standard library, and running one
with ``python -m`` should not pay for importing pydantic-ai.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nestor.testing.anthropic_server import (
        AnthropicReply,
        AnthropicStep,
        AnthropicStepSource,
        AnthropicUsage,
        ScriptedAnthropicServer,
        anthropic_error,
        prompt_too_long,
    )
    from nestor.testing.gemini_server import ScriptedGeminiServer
    from nestor.testing.openai_server import (
        HTTPErrorReply,
        ScriptedOpenAIServer,
        ServerReply,
        ServerStep,
        ServerStepSource,
        ServerToolCall,
        ServerUsage,
        first_user_text,
        load_script,
        step_from_json,
        step_to_json,
    )
    from nestor.testing.scripted_model import (
        RecordedRequest,
        Script,
        ScriptedModel,
        ScriptExhausted,
        Step,
        StepFunction,
        StepSource,
        ToolCall,
        call,
        fail,
        last_tool_results,
        reply,
    )

_MODULE_OF: dict[str, str] = {
    **dict.fromkeys(
        [
            "AnthropicReply",
            "AnthropicStep",
            "AnthropicStepSource",
            "AnthropicUsage",
            "ScriptedAnthropicServer",
            "anthropic_error",
            "prompt_too_long",
        ],
        "nestor.testing.anthropic_server",
    ),
    "ScriptedGeminiServer": "nestor.testing.gemini_server",
    **dict.fromkeys(
        [
            "HTTPErrorReply",
            "ScriptedOpenAIServer",
            "ServerReply",
            "ServerStep",
            "ServerStepSource",
            "ServerToolCall",
            "ServerUsage",
            "first_user_text",
            "load_script",
            "step_from_json",
            "step_to_json",
        ],
        "nestor.testing.openai_server",
    ),
    **dict.fromkeys(
        [
            "RecordedRequest",
            "Script",
            "ScriptExhausted",
            "ScriptedModel",
            "Step",
            "StepFunction",
            "StepSource",
            "ToolCall",
            "call",
            "fail",
            "last_tool_results",
            "reply",
        ],
        "nestor.testing.scripted_model",
    ),
}

__all__ = [
    "AnthropicReply",
    "AnthropicStep",
    "AnthropicStepSource",
    "AnthropicUsage",
    "HTTPErrorReply",
    "RecordedRequest",
    "Script",
    "ScriptExhausted",
    "ScriptedAnthropicServer",
    "ScriptedGeminiServer",
    "ScriptedModel",
    "ScriptedOpenAIServer",
    "ServerReply",
    "ServerStep",
    "ServerStepSource",
    "ServerToolCall",
    "ServerUsage",
    "Step",
    "StepFunction",
    "StepSource",
    "ToolCall",
    "anthropic_error",
    "call",
    "fail",
    "first_user_text",
    "last_tool_results",
    "load_script",
    "prompt_too_long",
    "reply",
    "step_from_json",
    "step_to_json",
]


def __getattr__(name: str) -> Any:
    """Import an exported name from its module on first use."""
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
