"""One model request, streamed, retried on transient failures: what the loop and the summariser share.

Failures that may pass (rate limits, overload, dropped streams) are retried after the policy's
wait, announced with a :class:`~nestor.core.events.Retrying` event; the rest, and the last attempt,
become a :class:`~nestor.core.errors.ModelRequestError` whose ``__cause__`` is the provider's error.
A stream that sends nothing for ``idle_timeout_s`` (the HTTP clients' own timeouts allow far longer)
is given up and retried once; a second stall is an error naming the setting.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from pydantic_ai.direct import model_request_stream
from pydantic_ai.exceptions import (
    ModelAuthenticationError,
    ModelContextWindowExceededError,
    ModelNotFoundError,
    ModelQuotaExceededError,
)
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    PartDeltaEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    ThinkingPart,
    ThinkingPartDelta,
)
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.settings import ModelSettings

from nestor.core.errors import ModelRequestError, NestorError
from nestor.core.events import Event, Retrying, TextDelta, ThinkingDelta
from nestor.providers.retry import RetryPolicy, describe_error, is_retryable


@dataclass(frozen=True, slots=True)
class ModelCall:
    """A model with what every request to it carries.

    Attributes:
        model: The pydantic-ai model.
        settings: Request settings.
        parameters: Tools, instructions and output mode.
        retry: How failures are retried.
        sleep: Waits between attempts (tests inject a fast one).
        idle_timeout_s: Give up a stream that sent nothing (not even its first event) for this
            many seconds; None waits as long as the provider's client does.

    """

    model: Model
    settings: ModelSettings | None
    parameters: ModelRequestParameters
    retry: RetryPolicy
    sleep: Callable[[float], Awaitable[None]]
    idle_timeout_s: float | None = None

    async def request(
        self,
        messages: list[ModelMessage],
        *,
        agent_id: str,
        publish: Callable[[Event], None],
        stream_text: bool,
    ) -> ModelResponse:
        """Send ``messages`` and return the response, retrying transient failures.

        Args:
            messages: The history to send.
            agent_id: Names the agent in events.
            publish: Where :class:`Retrying` (and, with ``stream_text``, text deltas) go.
            stream_text: Publish the response's text and thinking as they stream.

        Raises:
            ModelRequestError: The request failed for good.

        """
        attempt = 0
        stalls = 0
        while True:
            attempt += 1
            try:
                return await self._stream_once(messages, agent_id, publish if stream_text else None)
            except StreamStalledError as exc:
                stalls += 1
                if stalls >= _STALLED_ATTEMPTS:
                    raise ModelRequestError(
                        f"{exc}, twice",
                        hint="the provider stopped sending; try again later, or raise [limits] "
                        "stream_idle_timeout_s in nestor.toml if the model is just slow to answer",
                        retryable=True,
                    ) from exc
                publish(Retrying(agent_id=agent_id, attempt=attempt, delay_s=0.0, reason=str(exc)))
            except Exception as exc:
                if not is_retryable(exc) or attempt >= self.retry.max_attempts:
                    raise ModelRequestError(
                        describe_error(exc) + (f" (after {attempt} attempts)" if attempt > 1 else ""),
                        hint=hint_for(exc),
                        retryable=is_retryable(exc),
                    ) from exc
                delay = self.retry.delay_for(attempt, exc)
                publish(
                    Retrying(agent_id=agent_id, attempt=attempt, delay_s=delay, reason=describe_error(exc))
                )
                await self.sleep(delay)

    async def _stream_once(
        self, messages: list[ModelMessage], agent_id: str, publish: Callable[[Event], None] | None
    ) -> ModelResponse:
        idle = self.idle_timeout_s
        quiet = asyncio.timeout_at(asyncio.get_running_loop().time() + idle if idle else None)
        try:
            async with quiet:
                return await self._stream_events(messages, agent_id, publish, quiet, idle)
        except TimeoutError as exc:
            if idle and quiet.expired():
                raise StreamStalledError(
                    f"the stream from {self.model.system}:{self.model.model_name} sent no data for {idle:g} s"
                ) from exc
            raise

    async def _stream_events(
        self,
        messages: list[ModelMessage],
        agent_id: str,
        publish: Callable[[Event], None] | None,
        quiet: asyncio.Timeout,
        idle: float | None,
    ) -> ModelResponse:
        loop = asyncio.get_running_loop()
        async with model_request_stream(
            self.model, messages, model_settings=self.settings, model_request_parameters=self.parameters
        ) as stream:
            async for event in stream:
                if idle:
                    quiet.reschedule(loop.time() + idle)
                if publish is None:
                    continue
                if isinstance(event, PartDeltaEvent):
                    delta = event.delta
                    if isinstance(delta, TextPartDelta) and delta.content_delta:
                        publish(TextDelta(agent_id=agent_id, text=delta.content_delta))
                    elif isinstance(delta, ThinkingPartDelta) and delta.content_delta:
                        publish(ThinkingDelta(agent_id=agent_id, text=delta.content_delta))
                elif isinstance(event, PartStartEvent):
                    part = event.part
                    if isinstance(part, TextPart) and part.content:
                        publish(TextDelta(agent_id=agent_id, text=part.content))
                    elif isinstance(part, ThinkingPart) and part.content:
                        publish(ThinkingDelta(agent_id=agent_id, text=part.content))
            return stream.get()


_STALLED_ATTEMPTS = 2
"""A stalled stream is tried once more: a second stall is unlikely to be chance."""


class StreamStalledError(Exception):
    """A model's stream sent nothing for the idle timeout."""


def response_text(response: ModelResponse) -> str:
    """The visible text of a response (thinking and tool calls left out)."""
    return "".join(part.content for part in response.parts if isinstance(part, TextPart))


def is_context_overflow(error: BaseException) -> bool:
    """True when ``error`` (or the provider error behind it) says the request was too long."""
    cause = error.__cause__ if isinstance(error, ModelRequestError) else error
    return isinstance(cause, ModelContextWindowExceededError)


def hint_for(error: BaseException) -> str | None:
    """What the user can do about a failed model request, if anything."""
    if isinstance(error, NestorError):  # e.g. a local engine that cannot load says how to install it
        return error.hint
    if isinstance(error, ModelContextWindowExceededError):
        return "the conversation no longer fits the model's context: run /compact, or start a new session"
    if isinstance(error, ModelAuthenticationError):
        return "check the provider's API key (nestor models shows which key each model uses)"
    if isinstance(error, ModelNotFoundError):
        return "check the model name (--model provider:model) and the provider's base URL"
    if isinstance(error, ModelQuotaExceededError):
        return "the account's quota or credit is exhausted; top it up or use another model"
    if is_retryable(error):
        return "the provider kept failing; try again later, or use another model with --model"
    return None
