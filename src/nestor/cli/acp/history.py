"""Stored conversations over ACP: the updates ``session/load`` replays before it answers, and forks.

The whole history goes, in order: the user's prompts (their images as image blocks), the main
agent's text and reasoning, each tool call with its card and outcome (full results, which the live
preview cuts), and each sub-agent's tool calls inside the ``task`` call that started it, tagged
with ``_meta.nestor`` as they were live. A compaction's summary is not replayed: the messages it
summarised are.

Loaded only by ``session/load`` and ``session/fork``: reading messages brings in pydantic-ai.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    ImageContentBlock,
    TextContentBlock,
    ToolCallProgress,
    UserMessageChunk,
)
from pydantic_ai.messages import (
    BinaryContent,
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

from nestor.app.records import MessageStore, SessionStore, compaction_mark, open_database
from nestor.cli.acp.tool_calls import ToolContent, describe_call, text_content, tool_call_start
from nestor.config.settings import Settings
from nestor.core.errors import NestorError
from nestor.core.prompts import prompt_text

if TYPE_CHECKING:
    from nestor.cli.acp.session import AcpSession

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
                if isinstance(part, UserPromptPart) and main:
                    yield from _user_prompt(part)
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


def _user_prompt(part: UserPromptPart) -> Iterator[UserMessageChunk]:
    """A prompt as the editor sent it: its text, and each image as an image block."""
    items = [part.content] if isinstance(part.content, str) else part.content
    for item in items:
        if isinstance(item, BinaryContent) and item.is_image:
            content: TextContentBlock | ImageContentBlock = ImageContentBlock(
                type="image", data=item.base64, mime_type=item.media_type
            )
        else:
            text = prompt_text([item], name_files=True)
            if not text:
                continue
            content = _text(text)
        yield UserMessageChunk(session_update="user_message_chunk", content=content)


def replay_session(opened: AcpSession) -> list[Any]:
    """The updates that replay a session's history, its sub-agents' tool calls inside their ``task`` calls."""
    app, translator = opened.app, opened.translator

    def is_summary(message: Any) -> bool:
        return compaction_mark(message) is not None

    def children(agent_id: str, depth: int) -> Callable[[str], Any]:
        def of_call(acp_id: str) -> Any:
            raw_id = acp_id.rpartition("/")[2]
            for child in app.sessions.children(agent_id):
                if child.parent_tool_call_id != raw_id:
                    continue
                meta = {
                    "nestor": {
                        "agentId": child.id,
                        "parentAgentId": agent_id,
                        "parentToolCallId": acp_id,
                        "agentType": child.agent_name,
                        "depth": depth + 1,
                        "background": False,
                    }
                }
                yield from replay(
                    app.messages.list(child.id),
                    project_root=opened.project_root,
                    call_id=lambda call, child_id=child.id: f"{child_id}/{call}",
                    meta=meta,
                    is_summary=is_summary,
                    children=children(child.id, depth + 1),
                )

        return of_call

    return list(
        replay(
            app.messages.list(opened.session_id),
            project_root=opened.project_root,
            call_id=lambda call: translator.call_id(opened.session_id, call),
            is_summary=is_summary,
            children=children(opened.session_id, 0),
        )
    )


def fork_stored_session(settings: Settings, session_id: str) -> str:
    """A new main session holding a copy of ``session_id`` 's messages; returns its id.

    The fork's usage starts at zero, and its ``task`` calls' sub-agents stay the original's.

    Raises:
        SessionNotFoundError: No session has this id.
        NestorError: It is a sub-agent's session.

    """
    database = open_database(settings.database_path)
    try:
        sessions, messages = SessionStore(database), MessageStore(database)
        original = sessions.get(session_id)
        if original.parent_id is not None:
            raise NestorError(f"{original.id} is a sub-agent's session", hint="fork its main session")
        fork = sessions.create(
            original.project_path,
            agent_name=original.agent_name,
            model=original.model,
            title=f"{original.title} (fork)" if original.title else "",
            metadata={"forked_from": original.id},
        )
        for message in messages.list(original.id):
            messages.append(fork.id, message)
        return fork.id
    finally:
        database.close()
