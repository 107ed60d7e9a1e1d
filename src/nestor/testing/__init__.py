"""Test support shipped with nestor: scripted models and a scripted OpenAI-compatible server.

- :class:`ScriptedModel` answers nestor's agent loop from a script of :class:`Step` s (built with
  :func:`reply`, :func:`call`, :func:`fail`, or computed by a function of the messages so far), streamed
  or not, and records every request.
- :class:`ScriptedOpenAIServer` speaks the OpenAI chat completions protocol on 127.0.0.1, so tests can
  drive the real OpenAI provider over real HTTP, including rate limits, server errors and dropped
  streams; ``python -m nestor.testing.openai_server`` runs it as a separate process.

Names are imported on first use: the server module needs only the standard library, and running it
with ``python -m`` should not pay for importing pydantic-ai.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nestor.testing.openai_server import (
        HTTPErrorReply,
        ScriptedOpenAIServer,
        ServerReply,
        ServerStep,
        ServerStepSource,
        ServerToolCall,
        ServerUsage,
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
            "HTTPErrorReply",
            "ScriptedOpenAIServer",
            "ServerReply",
            "ServerStep",
            "ServerStepSource",
            "ServerToolCall",
            "ServerUsage",
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
    "HTTPErrorReply",
    "RecordedRequest",
    "Script",
    "ScriptExhausted",
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
    "call",
    "fail",
    "last_tool_results",
    "load_script",
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
