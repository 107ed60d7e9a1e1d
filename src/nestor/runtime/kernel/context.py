"""How big the next request is, and when it is too big: the context accounting of one agent.

The size of the next request is known best from the provider: the last response reported how
many input tokens its request had, and the response itself adds its output tokens. Messages added
since (tool results, a new prompt) are estimated without a tokenizer (about four characters per
token). Where no response reported usage, the whole request is estimated: system prompt, tool
definitions and history.

After a compaction, the responses kept from before it reported sizes of the history as it was,
so they are not trusted: :func:`context_tokens` only believes responses after the kept part.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic_ai.messages import (
    BaseToolReturnPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.tools import ToolDefinition

from nestor.config.sections import ContextConfig
from nestor.core.tokens import estimate_tokens

DEFAULT_COMPACT_THRESHOLD = 0.85
DEFAULT_KEEP_RECENT = 0.2
_MESSAGE_OVERHEAD_TOKENS = 4
# Images, audio and documents: providers charge roughly this much for a typical one.
_ATTACHMENT_TOKENS = 1_500


@dataclass(frozen=True, slots=True)
class ContextPolicy:
    """When an agent compacts its history, and how much of it stays verbatim.

    Attributes:
        context_window: Tokens the model can attend to.
        auto_compact: Compact on its own at the threshold and on a context-overflow error;
            ``False`` leaves compaction to ``/compact``.
        threshold: Compact when the next request would pass this share of the window.
        keep_recent: Share of the window the most recent turns may keep verbatim.

    """

    context_window: int
    auto_compact: bool = True
    threshold: float = DEFAULT_COMPACT_THRESHOLD
    keep_recent: float = DEFAULT_KEEP_RECENT

    @classmethod
    def configured(cls, context_window: int, config: ContextConfig) -> ContextPolicy:
        """The policy of a model with ``context_window`` under the ``[context]`` settings."""
        return cls(
            context_window=context_window,
            auto_compact=not config.disable_auto_compact,
            threshold=config.compact_threshold,
            keep_recent=config.keep_recent,
        )

    @property
    def threshold_tokens(self) -> int:
        """The request size, in tokens, at which compaction starts."""
        return int(self.context_window * self.threshold)

    @property
    def keep_recent_tokens(self) -> int:
        """The most tokens the recent turns keep verbatim after a compaction."""
        return int(self.context_window * self.keep_recent)


def message_tokens(message: ModelMessage) -> int:
    """Estimate the tokens one message adds to a request."""
    total = _MESSAGE_OVERHEAD_TOKENS
    if isinstance(message, ModelRequest):
        for part in message.parts:
            if isinstance(part, UserPromptPart):
                total += _user_content_tokens(part.content)
            elif isinstance(part, SystemPromptPart):
                total += estimate_tokens(part.content)
            elif isinstance(part, BaseToolReturnPart):
                total += estimate_tokens(part.model_response_str()) + estimate_tokens(part.tool_call_id)
            elif isinstance(part, RetryPromptPart):
                total += estimate_tokens(part.model_response())
    else:
        for part in message.parts:
            if isinstance(part, TextPart | ThinkingPart):
                total += estimate_tokens(part.content)
            elif isinstance(part, ToolCallPart):
                total += estimate_tokens(part.tool_name + part.tool_call_id + part.args_as_json_str())
    return total


def messages_tokens(messages: Sequence[ModelMessage]) -> int:
    """Estimate the tokens of several messages."""
    return sum(message_tokens(message) for message in messages)


def fixed_tokens(system_prompt: str, tools: Sequence[ToolDefinition]) -> int:
    """Estimate what every request carries besides the history: instructions and tool definitions."""
    tool_text = "".join(
        tool.name + (tool.description or "") + json.dumps(tool.parameters_json_schema) for tool in tools
    )
    return estimate_tokens(system_prompt) + estimate_tokens(tool_text)


def context_tokens(history: Sequence[ModelMessage], *, fixed: int, trusted_from: int = 0) -> int:
    """Return the size in tokens of a request made of ``history`` now.

    Args:
        history: The messages the next request sends.
        fixed: The estimated tokens of instructions and tool definitions (see :func:`fixed_tokens`).
        trusted_from: Responses before this index reported sizes of another history (the one
            before a compaction); their usage is ignored.

    """
    for index in range(len(history) - 1, trusted_from - 1, -1):
        message = history[index]
        if isinstance(message, ModelResponse) and message.usage.input_tokens > 0:
            measured = message.usage.input_tokens + message.usage.output_tokens
            return measured + messages_tokens(history[index + 1 :])
    return fixed + messages_tokens(history)


def _user_content_tokens(content: object) -> int:
    if isinstance(content, str):
        return estimate_tokens(content)
    total = 0
    if isinstance(content, Sequence):
        for item in content:  # pyright: ignore[reportUnknownVariableType]
            total += estimate_tokens(item) if isinstance(item, str) else _ATTACHMENT_TOKENS
    return total
