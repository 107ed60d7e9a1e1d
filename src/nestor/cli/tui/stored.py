"""A stored conversation as the TUI shows it: the transcript of a session it resumes.

A resumed session (``/resume``, the session picker, ``nestor --continue``) shows its history as it
was shown live: the user's prompts, the main agent's text, each tool call with its outcome and the
start of its result. A compaction's summary is left out (the messages it summarised are shown).
Only the last :data:`SHOWN_MESSAGES` are decoded, so a long session opens at once.
"""

from __future__ import annotations

from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from nestor.app.records import compaction_mark
from nestor.cli.formatting import counted
from nestor.cli.tui.transcript import TextBlock, ToolBlock, Transcript

__all__ = ["PREVIEW_CHARS", "SHOWN_MESSAGES", "stored_transcript"]

SHOWN_MESSAGES = 400
"""The last messages of a resumed session its transcript shows."""

PREVIEW_CHARS = 200
"""A stored tool result is cut here, as a live call's preview is."""


def stored_transcript(messages: list[ModelMessage], earlier: int = 0) -> tuple[Transcript, int]:
    """``messages`` (a session's last, oldest first) as a transcript, and how many tool calls they made.

    ``earlier`` messages came before them: a note at the top says how many.
    """
    transcript = Transcript()
    if earlier:
        transcript.note(f"… {counted(earlier, 'earlier message')} (nestor sessions show lists them)")
    calls: dict[str, ToolBlock] = {}
    for message in messages:
        if compaction_mark(message) is not None:
            continue
        if isinstance(message, ModelResponse):
            for part in message.parts:
                if isinstance(part, TextPart) and part.content:
                    transcript.add(TextBlock(part.content))
                elif isinstance(part, ToolCallPart):
                    block = ToolBlock(part.tool_call_id, part.tool_name, _args(part))
                    calls[part.tool_call_id] = block
                    transcript.add(block)
            continue
        for part in message.parts:
            if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                transcript.add(TextBlock(part.content, user=True))
            elif isinstance(part, ToolReturnPart | RetryPromptPart) and part.tool_call_id in calls:
                block = calls[part.tool_call_id]
                if isinstance(part, RetryPromptPart):
                    block.outcome, result = "retried", part.model_response()
                else:
                    block.outcome, result = part.outcome, part.model_response_str()
                block.preview = result[:PREVIEW_CHARS]
    return transcript, len(calls)


def _args(part: ToolCallPart) -> dict[str, object]:
    try:
        return part.args_as_dict()
    except ValueError:
        return {}
