"""The model side of an agent's turns: send the history, count and store the response.

A request compacts first when it would pass the context threshold, and once more (then retries)
when the provider rejects it as too long; an empty reply is asked again once. A refusal (the
provider's content filter or the model's refusal) is kept and ends the run (:func:`refusal_stop`);
a request whose prompts' files the provider rejected fails, and the next go without them
(``prompt_files.py``). Every response is counted in the run (budgets, the tree's budget), stored
with its usage, and published.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import TYPE_CHECKING

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestParameters

from nestor.core.errors import ModelRequestError
from nestor.core.events import ErrorEvent, RequestFinished, Retrying, TextDelta
from nestor.core.usage import Usage
from nestor.providers.usage import usage_from_response
from nestor.runtime.kernel.history import repair as history_repair
from nestor.runtime.kernel.hooks import RunState, Stop
from nestor.runtime.kernel.model_call import ModelCall, is_context_overflow, response_text
from nestor.runtime.kernel.prompt_files import FILES_LEFT_OUT_HINT, files_rejected, leave_out_files

if TYPE_CHECKING:
    from nestor.runtime.kernel.loop import SessionAgent

REFUSAL_MESSAGE = "The model refused to answer (its provider reported a refusal or its content filter)."
"""The stop message of a refused run: the run's text ends with it."""

FINAL_TURN_TIMEOUT_S = 120.0
"""Longest wait for the tool-less report a hook asks for after a budget or time stop."""


class Requests:
    """Sends one agent's requests and records their responses."""

    def __init__(self, agent: SessionAgent) -> None:
        self._agent = agent

    async def request(
        self, state: RunState, parameters: ModelRequestParameters, reminder: str | None
    ) -> ModelResponse:
        """Send the history (plus an optional reminder) and store the response."""
        agent = self._agent
        compactor = agent.setup.compactor
        if compactor is not None:
            await compactor.at_threshold(agent, state)
        try:
            response = await self._send(parameters, reminder)
        except ModelRequestError as exc:
            if files_rejected(exc) and leave_out_files(agent.history):
                raise ModelRequestError(exc.message, hint=FILES_LEFT_OUT_HINT) from exc.__cause__
            if (
                compactor is None
                or not is_context_overflow(exc)
                or not await compactor.on_overflow(agent, state)
            ):
                raise
            response = await self._send(parameters, reminder)
        if response.finish_reason == "content_filter":
            return self._record_refusal(state, response)
        if _is_empty(response):
            # Neither text nor a tool call: not kept (an empty assistant turn is what some
            # providers reject), but it was paid for. Asked once more, then the run fails.
            self._count_unstored(state, response)
            reason = "the model returned an empty reply"
            agent.setup.bus.publish(
                Retrying(agent_id=agent.session_id, attempt=1, delay_s=0.0, reason=reason)
            )
            response = await self._send(parameters, reminder)
            if _is_empty(response):
                self._count_unstored(state, response)
                raise ModelRequestError(
                    f"the model {agent.setup.model_name} returned an empty reply twice",
                    hint="try again, or use another model with --model",
                )
        self.record(state, response)
        return response

    async def final_turn(
        self, state: RunState, parameters: ModelRequestParameters, prompt: str
    ) -> str | None:
        """Ask for one last answer without tools (a hook wants a report of a stopped run).

        Returns the answer's text, or None when the request failed (the run's stop reason stands
        either way; a failed report must not turn a budget stop into an error).
        """
        agent = self._agent
        unanswered = history_repair(agent.history)
        if unanswered is not None:
            agent.append(unanswered)
        agent.append(ModelRequest(parts=[UserPromptPart(prompt)]))
        setup = agent.setup
        tool_less = ModelRequestParameters(
            function_tools=[], allow_text_output=True, instruction_parts=parameters.instruction_parts
        )
        try:
            async with asyncio.timeout(FINAL_TURN_TIMEOUT_S):
                response = await self._call(tool_less, agent.history)
        except (ModelRequestError, TimeoutError) as exc:
            setup.bus.publish(
                ErrorEvent(agent_id=agent.session_id, message=f"the final report request failed: {exc}")
            )
            return None
        self.record(state, response)
        return response_text(response) or None

    def record(self, state: RunState, response: ModelResponse) -> None:
        """Count a response in the run, store it (its usage joins the totals) and publish its usage."""
        usage = self._count(state, response)
        self._agent.append(response, usage=usage)
        self._publish_usage(state, usage)

    def _record_refusal(self, state: RunState, response: ModelResponse) -> ModelResponse:
        """Keep a refusal like any response; where it has no text, the provider's refusal message is its text.

        OpenAI sends a refusal in a field of its own, which pydantic-ai keeps in the response's
        ``provider_details``: shown and stored as the answer, the user and the model's next turn see it.
        """
        refusal = (response.provider_details or {}).get("refusal")
        if not response_text(response).strip() and isinstance(refusal, str) and refusal.strip():
            response = replace(response, parts=[*response.parts, TextPart(content=refusal)])
            self._agent.setup.bus.publish(TextDelta(agent_id=self._agent.session_id, text=refusal))
        if _is_empty(response):
            self._count_unstored(state, response)  # nothing to keep: an empty turn is what providers reject
        else:
            self.record(state, response)
        return response

    def _count_unstored(self, state: RunState, response: ModelResponse) -> None:
        """Count a response that is not kept in the history: budgets, totals and events as usual."""
        usage = self._count(state, response)
        self._agent.setup.sessions.add_usage(self._agent.session_id, usage)
        self._publish_usage(state, usage)

    def _count(self, state: RunState, response: ModelResponse) -> Usage:
        setup = self._agent.setup
        usage = usage_from_response(response, priced=setup.priced)
        state.num_turns += 1
        state.usage.add(usage)
        if setup.tree_budget is not None:
            setup.tree_budget.record(usage)
        return usage

    def _publish_usage(self, state: RunState, usage: Usage) -> None:
        agent = self._agent
        agent.setup.bus.publish(
            RequestFinished(
                agent_id=agent.session_id,
                model=agent.setup.model_name,
                usage=usage,
                run_usage=state.usage.copy(),
            )
        )

    async def _send(self, parameters: ModelRequestParameters, reminder: str | None) -> ModelResponse:
        agent = self._agent
        messages = agent.history
        if reminder:
            messages = [
                *messages,
                ModelRequest(parts=[SystemPromptPart(f"<system-reminder>{reminder}</system-reminder>")]),
            ]
        return await self._call(parameters, messages)

    async def _call(self, parameters: ModelRequestParameters, messages: list[ModelMessage]) -> ModelResponse:
        """One streamed, retried request of ``messages`` with ``parameters``."""
        agent = self._agent
        setup = agent.setup
        # Built per request: the setup's model and settings may be changed between requests.
        call = ModelCall(
            setup.model,
            setup.model_settings,
            parameters,
            setup.retry,
            setup.sleep,
            setup.stream_idle_timeout_s,
        )
        return await call.request(
            messages, agent_id=agent.session_id, publish=setup.bus.publish, stream_text=True
        )


def refusal_stop(response: ModelResponse) -> Stop | None:
    """The stop of a run whose model refused (OpenAI's ``content_filter`` or refusal, Anthropic's)."""
    if response.finish_reason != "content_filter":
        return None
    return Stop("refusal", REFUSAL_MESSAGE)


def _is_empty(response: ModelResponse) -> bool:
    """True when a response has neither visible text nor a tool call."""
    return not response_text(response).strip() and not any(
        isinstance(part, ToolCallPart) for part in response.parts
    )
