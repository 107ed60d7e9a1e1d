"""Compaction: the older part of a history replaced by a summary, the recent turns kept verbatim.

The full history always stays in the store. A compaction appends one message of its own, a user
request holding the summary and marked in its metadata (``nestor.compaction``) with how many
messages before it stay visible. What the model sees from then on is :func:`visible_history`:
the latest summary, the kept messages, and everything after the summary.

The cut is always placed just before a model response, so the visible history alternates
correctly (the summary is a user message, then the model's turn) and no tool result is ever
separated from its call. The most recent response is always kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic_ai.messages import (
    BaseToolReturnPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings

from nestor.core.tokens import CHARS_PER_TOKEN
from nestor.runtime.kernel.compaction_mark import (
    MARK_PATH,
    METADATA_KEY,
    CompactionMark,
    mark_from_data,
)
from nestor.runtime.kernel.compaction_mark import CompactionTrigger as CompactionTrigger  # re-exported
from nestor.runtime.kernel.context import message_tokens

if TYPE_CHECKING:
    from nestor.store.messages import MessageStore

SUMMARY_HEADER = (
    "This conversation was compacted: its earlier part is replaced by the summary below, and the "
    "most recent turns follow it unchanged. Continue the work from here without asking the user "
    "to repeat anything."
)
SUMMARY_INSTRUCTIONS = """\
You are summarising the earlier part of a coding session between a user and an AI coding agent, \
so the agent can continue the work with only your summary and the latest turns. Write a dense, \
factual summary in Markdown with exactly these sections:

## Goal
What the user asked for, in their own words where they matter, with every constraint they set.

## Decisions
Choices made and why, approaches tried and rejected, the user's preferences and corrections.

## Files touched
Every file read, created or changed, with paths and what was done or learned there.

## Work done
What is finished and how it was checked (commands, tests, results, errors seen).

## Open todos
Unfinished tasks and known problems, in order.

## What remains
The very next step and what comes after it.

Keep file paths, names, commands, numbers and error messages exact. Leave out pleasantries and \
anything the latest turns repeat. If an earlier summary is part of the transcript, fold it in: \
nothing it records may be lost."""

# The transcript may fill this share of the summary model's window; the rest is instructions and output.
_TRANSCRIPT_SHARE = 0.6
_RESULT_HEAD_CHARS = 1_500
_RESULT_TAIL_CHARS = 500
_TRANSCRIPT_MIN_RESULT_CHARS = 200


@dataclass(frozen=True, slots=True)
class SummaryModel:
    """The model that writes compaction summaries (the ``large`` role).

    Attributes:
        model: The pydantic-ai model.
        name: ``provider:model``, for messages.
        settings: Request settings.
        priced: Whether public price tables apply.
        context_window: Its context size in tokens.

    """

    model: Model
    name: str
    settings: ModelSettings | None
    priced: bool
    context_window: int

    @property
    def transcript_chars(self) -> int:
        """The longest transcript this model is given to summarise, in characters."""
        return int(self.context_window * _TRANSCRIPT_SHARE) * CHARS_PER_TOKEN


def compaction_mark(message: ModelMessage) -> CompactionMark | None:
    """Return the mark of a summary message, or None for any other message."""
    if not isinstance(message, ModelRequest) or not message.metadata:
        return None
    data = message.metadata.get(METADATA_KEY)
    if not isinstance(data, dict):
        return None
    return mark_from_data(data.get("compaction"))  # pyright: ignore[reportUnknownMemberType]


def summary_message(summary: str, mark: CompactionMark) -> ModelRequest:
    """Build the marked message that stands for the summarised part of a history."""
    text = f"{SUMMARY_HEADER}\n\n<summary>\n{summary.strip()}\n</summary>"
    return ModelRequest(parts=[UserPromptPart(text)], metadata=mark.to_metadata())


def visible_history(stored: Sequence[ModelMessage]) -> list[ModelMessage]:
    """Return what the model sees of a stored history: the latest summary onwards.

    That is the latest summary, then the messages it kept (the ones just before it in the store,
    earlier summaries skipped), then every message after it. Without a summary it is all of them.
    """
    for index in range(len(stored) - 1, -1, -1):
        mark = compaction_mark(stored[index])
        if mark is None:
            continue
        kept: list[ModelMessage] = []
        cursor = index - 1
        while cursor >= 0 and len(kept) < mark.kept_messages:
            if compaction_mark(stored[cursor]) is None:
                kept.append(stored[cursor])
            cursor -= 1
        kept.reverse()
        return [stored[index], *kept, *stored[index + 1 :]]
    return list(stored)


def load_visible_history(messages: MessageStore, session_id: str) -> list[ModelMessage]:
    """Read what the model sees of a stored session: :func:`visible_history`, decoding only that part.

    A long session's history is mostly summarised: the marks are found by SQLite in the stored
    JSON, and only the messages from the first kept one on are decoded.
    """
    stored = messages.marked(session_id, MARK_PATH)
    marks = [(seq, mark) for seq, data in stored if (mark := mark_from_data(data)) is not None]
    if not marks:
        return messages.list(session_id)
    mark_positions = {seq for seq, _ in marks}
    start, mark = marks[-1]
    kept = 0
    while start > 0 and kept < mark.kept_messages:  # earlier summaries are skipped, as visible_history does
        start -= 1
        if start not in mark_positions:
            kept += 1
    return visible_history(messages.list(session_id, since=start))


def measured_from(history: Sequence[ModelMessage]) -> int:
    """Index of the first message whose reported usage measures this visible history.

    Responses kept from before a leading summary reported the size of the uncompacted history.
    """
    mark = compaction_mark(history[0]) if history else None
    return 0 if mark is None else 1 + mark.kept_messages


def find_cut(history: Sequence[ModelMessage], keep_tokens: int) -> int | None:
    """Return where to cut ``history``: messages before the index are summarised, the rest kept.

    The cut sits just before a model response, keeps the most recent response, and otherwise
    keeps as many recent messages as fit in ``keep_tokens``. Returns None when nothing can be
    summarised (no earlier message besides a previous summary).
    """
    candidates = [i for i, message in enumerate(history) if isinstance(message, ModelResponse) and i > 0]
    if not candidates:
        return None
    cut = candidates[-1]
    kept_tokens = sum(message_tokens(message) for message in history[cut:])
    for candidate in reversed(candidates[:-1]):
        extra = sum(message_tokens(message) for message in history[candidate:cut])
        if kept_tokens + extra > keep_tokens:
            break
        cut, kept_tokens = candidate, kept_tokens + extra
    if cut == 1 and compaction_mark(history[0]) is not None:
        return None  # only the previous summary would be summarised: nothing gained
    return cut


def render_transcript(messages: Sequence[ModelMessage], max_chars: int) -> str:
    """Render messages as a plain-text transcript for the summariser, at most ``max_chars`` long.

    Tool results are cut to their head and tail first (the summary needs what was learned, not
    whole files); if the transcript is still too long, its middle is left out.
    """
    result_chars = _RESULT_HEAD_CHARS + _RESULT_TAIL_CHARS
    text = _render(messages, result_chars)
    while len(text) > max_chars and result_chars > _TRANSCRIPT_MIN_RESULT_CHARS:
        result_chars //= 2
        text = _render(messages, result_chars)
    if len(text) <= max_chars:
        return text
    marker = "\n\n[... the middle of the transcript was left out to fit ...]\n\n"
    head = max(0, max_chars // 3)
    tail = max(0, max_chars - head - len(marker))
    return text[:head] + marker + text[len(text) - tail :]


def summarizer_prompt(transcript: str, instructions: str | None) -> str:
    """The user prompt asking for a summary of ``transcript``."""
    focus = f"\n\nThe user asked the summary to focus on: {instructions.strip()}" if instructions else ""
    return (
        f"<transcript>\n{transcript}\n</transcript>\n\nSummarise the transcript above as instructed.{focus}"
    )


def _render(messages: Sequence[ModelMessage], result_chars: int) -> str:
    blocks: list[str] = []
    for message in messages:
        if compaction_mark(message) is not None:
            blocks.append("[earlier summary]\n" + _request_text(message))
            continue
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart):
                    content = part.content if isinstance(part.content, str) else "[non-text content]"
                    blocks.append(f"[user]\n{content}")
                elif isinstance(part, BaseToolReturnPart):
                    content = _cut(part.model_response_str(), result_chars)
                    blocks.append(f"[result of {part.tool_name} ({part.outcome})]\n{content}")
                elif isinstance(part, RetryPromptPart):
                    blocks.append(f"[retry]\n{_cut(part.model_response(), result_chars)}")
                elif isinstance(part, SystemPromptPart):
                    blocks.append(f"[system]\n{part.content}")
        else:
            for part in message.parts:
                if isinstance(part, TextPart) and part.content.strip():
                    blocks.append(f"[assistant]\n{part.content}")
                elif isinstance(part, ToolCallPart):
                    blocks.append(f"[assistant calls {part.tool_name}] {part.args_as_json_str()}")
    return "\n\n".join(blocks)


def _request_text(message: ModelMessage) -> str:
    parts = message.parts if isinstance(message, ModelRequest) else []
    return "\n".join(
        part.content for part in parts if isinstance(part, UserPromptPart) and isinstance(part.content, str)
    )


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = limit * 3 // 4
    tail = limit - head
    return f"{text[:head]}\n[... {len(text) - limit} characters left out ...]\n{text[len(text) - tail :]}"
