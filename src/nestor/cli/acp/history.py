"""A stored conversation as the updates ``session/load`` replays before it answers.

The whole history goes, in order: the user's prompts, the main agent's text and reasoning, each
tool call with its card and outcome (full results, which the live preview cuts), and each
sub-agent's tool calls inside the ``task`` call that started it, tagged with ``_meta.nestor`` as
they were live. A compaction's summary is not replayed: the messages it summarised are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    TextContentBlock,
    ToolCallProgress,
    UserMessageChunk,
)
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from nestor.cli.acp.tool_calls import ToolContent, describe_call, text_content, tool_call_start

REPLAYED_RESULT_CHARS = 4000
"""A replayed tool result is cut here: the card shows it, the model saw it whole."""


def replay(
    messages: list[ModelMessage],
    *,
    project_root: Path,
    call_id: Callable[[str], str] = lambda tool_call_id: tool_call_id,
    meta: dict[str, Any] | None = None,
    is_summary: Callable[[ModelMessage], bool] = lambda _message: False,
    children: Callable[[str], Iterator[Any]] = lambda _call: iter(()),
) -> Iterator[Any]:
    """The updates that show ``messages`` again, in their order.

    Args:
        messages: A session's stored messages.
        project_root: Where relative paths of tool calls resolve.
        call_id: The ACP id of one of this agent's tool calls (a sub-agent's are prefixed).
        meta: The ``_meta`` of this agent's updates (a sub-agent's tree position); None for the main agent.
        is_summary: Tells a compaction's summary message, which is skipped.
        children: The updates of the sub-agents a ``task`` call (by its ACP id) started.

    """
    main = meta is None
    names: dict[str, tuple[str, dict[str, Any]]] = {}
    for message in messages:
        if is_summary(message):
            continue
        if isinstance(message, ModelResponse):
            for part in message.parts:
                if isinstance(part, TextPart) and main and part.content:
                    yield AgentMessageChunk(session_update="agent_message_chunk", content=_text(part.content))
                elif isinstance(part, ThinkingPart) and main and part.content:
                    yield AgentThoughtChunk(session_update="agent_thought_chunk", content=_text(part.content))
                elif isinstance(part, ToolCallPart):
                    args = _args(part)
                    names[part.tool_call_id] = (part.tool_name, args)
                    view = describe_call(part.tool_name, args, project_root, live=False)
                    yield tool_call_start(call_id(part.tool_call_id), view, args, meta)
        elif isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart) and main and isinstance(part.content, str):
                    yield UserMessageChunk(session_update="user_message_chunk", content=_text(part.content))
                elif isinstance(part, ToolReturnPart | RetryPromptPart) and part.tool_call_id in names:
                    name, args = names[part.tool_call_id]
                    acp_id = call_id(part.tool_call_id)
                    if name == "task":
                        yield from children(acp_id)
                    yield _finished(part, name, args, acp_id, project_root, meta)


def _finished(
    part: ToolReturnPart | RetryPromptPart,
    name: str,
    args: dict[str, Any],
    acp_id: str,
    project_root: Path,
    meta: dict[str, Any] | None,
) -> ToolCallProgress:
    if isinstance(part, RetryPromptPart):
        succeeded, result = False, part.model_response()
    else:
        succeeded = part.outcome == "success"
        result = part.model_response_str()
    view = describe_call(name, args, project_root, live=False)
    shown = result if len(result) <= REPLAYED_RESULT_CHARS else result[:REPLAYED_RESULT_CHARS] + "\n…"
    content: list[ToolContent] = list(view.content) if name in ("edit", "write") and succeeded else []
    if name not in ("edit", "write") or not succeeded:
        content += [text_content(shown)] if shown else []
    return ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id=acp_id,
        status="completed" if succeeded else "failed",
        content=content or None,
        field_meta=meta,
    )


def _args(part: ToolCallPart) -> dict[str, Any]:
    try:
        return part.args_as_dict()
    except ValueError:
        return {}


def _text(text: str) -> TextContentBlock:
    return TextContentBlock(type="text", text=text)
