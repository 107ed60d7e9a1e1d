"""What a harness drives: the protocol between the kernel and a turn-driving harness.

A harness (the small-model one, ``features/small/harness.py``) runs a whole turn itself: it makes
tool calls and asks the model narrow questions through a :class:`HarnessHost`. :class:`AgentHost`
is the kernel's host, over one agent and its run, within the run's budgets; it uses the agent
only through :class:`HostedAgent`, the agent's public surface for a turn driven from outside.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic_ai.exceptions import ModelContextWindowExceededError
from pydantic_ai.messages import (
    InstructionPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.settings import ModelSettings

from nestor.core.ids import new_id
from nestor.core.usage import Usage
from nestor.runtime.kernel.hooks import Remind, RunState, Stop
from nestor.runtime.kernel.model_call import ModelCall, response_text

if TYPE_CHECKING:
    from nestor.runtime.kernel.setup import AgentSetup

ToolCall = tuple[str, dict[str, Any]]
"""A tool call a harness makes: the tool's name and its arguments."""


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What one tool call returned: its text for the model and its structured metadata."""

    content: str
    metadata: dict[str, Any]
    ok: bool


class HarnessHost(Protocol):
    """What the harness needs of the agent it drives."""

    def tool_names(self) -> set[str]:
        """The names of the agent's tools."""
        ...

    async def run_tools(self, calls: Sequence[ToolCall]) -> list[ToolOutcome]:
        """Make ``calls`` as the agent's tool calls (in parallel) and return their outcomes."""
        ...

    async def ask(self, instructions: str, prompt: str, *, max_tokens: int, attempt: int = 0) -> str | None:
        """One model request without tools; None when a budget stopped the run first.

        ``attempt`` > 0 asks again differently: sampled warmer, with another seed, so that a retry
        of a deterministic small model does not repeat the same reply.
        """
        ...

    async def infill(self, before: str, after: str, *, max_tokens: int, attempt: int = 0) -> str | None:
        """The code the model writes between ``before`` and ``after`` (fill-in-the-middle).

        None when the model cannot fill in (not a code model with such tokens, or the prompt does
        not fit) or a budget stopped the run first.
        """
        ...

    def earlier_exchanges(self) -> list[tuple[str, str]]:
        """The session's earlier prompts, each with the last text answered to it, oldest first."""
        ...


@runtime_checkable
class InfillModel(Protocol):
    """A model that can fill in the middle of code (the embedded one): see ``LocalModel.infill``."""

    async def infill(
        self, before: str, after: str, *, max_tokens: int, temperature: float = 0.0, seed: int | None = None
    ) -> ModelResponse | None:
        """The code between ``before`` and ``after`` as a response; None when the model cannot."""
        ...


class HostedAgent(Protocol):
    """What :class:`AgentHost` needs of the agent whose turn a harness drives (``SessionAgent``)."""

    @property
    def session_id(self) -> str:
        """The agent's session."""
        ...

    @property
    def setup(self) -> AgentSetup:
        """The agent's model, settings, retry policy and bus."""
        ...

    @property
    def tool_names(self) -> list[str]:
        """The names of the agent's tools."""
        ...

    @property
    def history(self) -> list[ModelMessage]:
        """The messages of the session so far, the current prompt last."""
        ...

    def append(self, message: ModelMessage, *, usage: Usage | None = None) -> None:
        """Keep ``message`` in the history and the store."""
        ...

    async def run_tool_calls(self, state: RunState, calls: list[ToolCallPart]) -> list[ToolReturnPart]:
        """Run ``calls`` as the agent's own (hooks, permission gate, the tools); their results."""
        ...

    async def before_request(self, state: RunState) -> Stop | Remind | None:
        """The hooks' verdict on one more request: budgets, the loop guard, reminders."""
        ...

    def record_response(self, state: RunState, response: ModelResponse) -> None:
        """Count and store a response the harness asked for."""
        ...


class AgentHost:
    """What the small-model harness drives: an agent's tools and model, within its run's budgets.

    Tool calls the harness makes are stored as a response of the harness (``nestor:harness``, no
    usage) followed by their results, so the session reads like any other; the model's answers
    are stored and counted as usual.
    """

    def __init__(self, agent: HostedAgent, state: RunState) -> None:
        self._agent = agent
        self._state = state
        self.stop: Stop | None = None

    def tool_names(self) -> set[str]:
        """The names of the agent's tools."""
        return set(self._agent.tool_names)

    def earlier_exchanges(self) -> list[tuple[str, str]]:
        """The session's earlier prompts, each with the last text answered to it, oldest first.

        A prompt is a user's message; its answer is the last text of a response without tool
        calls that came before the next prompt. The current prompt (the last) is left out.
        """
        exchanges: list[list[str]] = []
        for message in self._agent.history:
            if isinstance(message, ModelRequest):
                texts = [part.content for part in message.parts if isinstance(part, UserPromptPart)]
                prompt = " ".join(text for text in texts if isinstance(text, str))
                if prompt:
                    exchanges.append([prompt, ""])
            elif exchanges and not any(isinstance(part, ToolCallPart) for part in message.parts):
                text = response_text(message)
                if text and text.strip():
                    exchanges[-1][1] = text.strip()
        return [(prompt, answer) for prompt, answer in exchanges[:-1]]

    async def run_tools(self, calls: Sequence[ToolCall]) -> list[ToolOutcome]:
        """Make ``calls`` as the agent's tool calls, stored as a response of the harness."""
        agent = self._agent
        parts = [ToolCallPart(name, args, tool_call_id=f"harness-{new_id('call')}") for name, args in calls]
        agent.append(ModelResponse(parts=list(parts), model_name="harness", provider_name="nestor"))
        results = await agent.run_tool_calls(self._state, parts)
        agent.append(ModelRequest(parts=list(results)))
        return [
            ToolOutcome(
                content=result.model_response_str(),
                metadata=dict(result.metadata or {}),
                ok=result.outcome == "success",
            )
            for result in results
        ]

    async def ask(self, instructions: str, prompt: str, *, max_tokens: int, attempt: int = 0) -> str | None:
        """One model request without tools, counted and stored; None when a hook stopped the run."""
        agent = self._agent
        action = await agent.before_request(self._state)
        if isinstance(action, Stop):
            self.stop = action
            return None
        setup = agent.setup
        parameters = ModelRequestParameters(
            function_tools=[],
            allow_text_output=True,
            instruction_parts=[InstructionPart(content=instructions)],
        )
        settings: ModelSettings = {**(setup.model_settings or {}), "max_tokens": max_tokens}
        if attempt:
            settings["temperature"] = min(1.0, 0.4 + 0.2 * attempt)
            settings["seed"] = attempt
        call = ModelCall(
            setup.model, settings, parameters, setup.retry, setup.sleep, setup.stream_idle_timeout_s
        )
        response = await call.request(
            [ModelRequest(parts=[UserPromptPart(prompt)])],
            agent_id=agent.session_id,
            publish=setup.bus.publish,
            stream_text=True,
        )
        agent.record_response(self._state, response)
        return response_text(response)

    async def infill(self, before: str, after: str, *, max_tokens: int, attempt: int = 0) -> str | None:
        """Fill-in-the-middle on an in-process code model; None when the model cannot."""
        agent = self._agent
        model = agent.setup.model
        if not isinstance(model, InfillModel):
            return None
        action = await agent.before_request(self._state)
        if isinstance(action, Stop):
            self.stop = action
            return None
        try:
            response = await model.infill(
                before,
                after,
                max_tokens=max_tokens,
                temperature=min(1.0, 0.4 + 0.2 * attempt) if attempt else 0.0,
                seed=attempt or None,
            )
        except ModelContextWindowExceededError:
            return None
        if response is None:
            return None
        agent.record_response(self._state, response)
        return response_text(response) or ""
