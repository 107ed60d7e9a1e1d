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

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic_ai.messages import (
    BaseToolReturnPart,
    InstructionPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.settings import ModelSettings

from nestor.core.errors import ModelRequestError
from nestor.core.events import Compacted, CompactionStarted, ErrorEvent
from nestor.core.prompts import prompt_text
from nestor.core.tokens import CHARS_PER_TOKEN
from nestor.providers.build import DEFAULT_CONTEXT_WINDOW
from nestor.providers.usage import usage_from_response
from nestor.runtime.kernel.compaction_mark import CompactionMark, CompactionTrigger
from nestor.runtime.kernel.context import ContextPolicy, message_tokens
from nestor.runtime.kernel.history import compaction_mark
from nestor.runtime.kernel.hooks import RunState
from nestor.runtime.kernel.model_call import ModelCall, response_text

if TYPE_CHECKING:
    from nestor.runtime.kernel.loop import SessionAgent

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
_RETRY_COMPACTION_AFTER = 4


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


def summary_message(summary: str, mark: CompactionMark) -> ModelRequest:
    """Build the marked message that stands for the summarised part of a history."""
    text = f"{SUMMARY_HEADER}\n\n<summary>\n{summary.strip()}\n</summary>"
    return ModelRequest(parts=[UserPromptPart(text)], metadata=mark.to_metadata())


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
                    blocks.append(f"[user]\n{prompt_text(part.content, name_files=True)}")
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


class Compaction:
    """One agent's compaction: at the threshold, on a provider's overflow, and on request.

    After a compaction that could not get under the threshold, automatic compaction waits for a
    few more messages instead of paying for a futile summary at every request.

    Attributes:
        summarizer: The model that writes the summaries; None uses the agent's own model.

    """

    def __init__(self, summarizer: SummaryModel | None = None) -> None:
        self.summarizer = summarizer
        self._not_before = 0

    async def at_threshold(self, agent: SessionAgent, state: RunState) -> None:
        """Compact when the next request would pass the threshold.

        A failed summary is reported and the run goes on uncompacted.
        """
        context = agent.setup.context
        if context is None or not context.auto_compact or len(agent.history) < self._not_before:
            return
        if agent.context_tokens() <= context.threshold_tokens:
            return
        try:
            await self.compact(agent, "threshold", state=state)
        except ModelRequestError as exc:
            agent.setup.bus.publish(
                ErrorEvent(
                    agent_id=agent.session_id,
                    message=f"compaction failed, continuing without it: {exc}",
                    hint=exc.hint,
                )
            )
            self._not_before = len(agent.history) + _RETRY_COMPACTION_AFTER

    async def on_overflow(self, agent: SessionAgent, state: RunState) -> bool:
        """Compact after the provider refused a request as too long; True when it did."""
        context = agent.setup.context
        if context is None or not context.auto_compact:
            return False
        return await self.compact(agent, "overflow", state=state) is not None

    async def compact(
        self,
        agent: SessionAgent,
        trigger: CompactionTrigger,
        *,
        state: RunState | None = None,
        instructions: str | None = None,
        keep_recent_tokens: int | None = None,
    ) -> Compacted | None:
        """Replace the older part of the visible history by a stored summary; None if nothing to do.

        Raises:
            ModelRequestError: The summary request failed; the history is unchanged.

        """
        setup = agent.setup
        policy = setup.context or ContextPolicy(context_window=DEFAULT_CONTEXT_WINDOW)
        keep = policy.keep_recent_tokens if keep_recent_tokens is None else keep_recent_tokens
        cut = find_cut(agent.history, keep)
        if cut is None:
            return None
        for hook in setup.hooks:
            if not await hook.before_compact(agent.session_id, trigger, instructions):
                return None
        before = agent.context_tokens()
        publish = setup.bus.publish
        publish(
            CompactionStarted(
                agent_id=agent.session_id,
                trigger=trigger,
                context_tokens=before,
                context_window=policy.context_window,
            )
        )
        started = time.monotonic()
        summarizer = self.summarizer or SummaryModel(
            model=setup.model,
            name=setup.model_name,
            settings=setup.model_settings,
            priced=setup.priced,
            context_window=policy.context_window,
        )
        kept = agent.history[cut:]
        transcript = render_transcript(agent.history[:cut], summarizer.transcript_chars)
        call = ModelCall(
            model=summarizer.model,
            settings=summarizer.settings,
            parameters=ModelRequestParameters(
                allow_text_output=True, instruction_parts=[InstructionPart(content=SUMMARY_INSTRUCTIONS)]
            ),
            retry=setup.retry,
            sleep=setup.sleep,
        )
        prompt = ModelRequest(parts=[UserPromptPart(summarizer_prompt(transcript, instructions))])
        response = await call.request([prompt], agent_id=agent.session_id, publish=publish, stream_text=False)
        summary = response_text(response).strip()
        if not summary:
            raise ModelRequestError(
                f"the summary model {summarizer.name} returned an empty summary",
                hint="try /compact again, or configure another [models] large model",
            )
        usage = usage_from_response(response, priced=summarizer.priced)
        mark = CompactionMark(
            kept_messages=len(kept), summarized_messages=cut, trigger=trigger, tokens_before=before
        )
        message = summary_message(summary, mark)
        setup.messages.append(agent.session_id, message, usage=usage, add_to_totals=True)
        if state is not None:
            state.usage.add(usage)
        agent.history = [message, *kept]
        after = agent.context_tokens()
        futile = after > policy.threshold_tokens
        self._not_before = len(agent.history) + _RETRY_COMPACTION_AFTER if futile else 0
        event = Compacted(
            agent_id=agent.session_id,
            trigger=trigger,
            tokens_before=before,
            tokens_after=after,
            summarized_messages=cut,
            kept_messages=len(kept),
            usage=usage,
            duration_s=time.monotonic() - started,
        )
        publish(event)
        for hook in setup.hooks:
            await hook.after_compact(agent.session_id, trigger, summary)
        return event
