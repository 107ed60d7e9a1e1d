"""A pydantic-ai model running a GGUF model in process: the ``local`` provider.

A request renders the conversation with the GGUF's own chat template (tools included) and lets
llama.cpp generate. Small models announce a tool call in three ways: the template's
``<tool_call>`` tags, a fenced JSON block, or bare JSON. Tags are watched for while the text
streams: when one appears, generation stops there and the call itself is generated under a
grammar built from the tools' JSON schemas, so its name and arguments are always well formed;
then generation goes on (another call, or the end of the turn). Fenced and bare JSON calls are
recognised at the end of the turn. The user sees the text as it streams, without the calls.

Every generation of a response extends the previous one's prompt, so the engine evaluates only
what was added. The system turn (instructions and tools) is also named to the engine as the
prompt's stable prefix, which it keeps on disk for the next run (see
:mod:`~nestor.providers.local.prefix_cache`).
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

from pydantic_ai.exceptions import ModelContextWindowExceededError
from pydantic_ai.messages import (
    InstructionPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ModelResponseStreamEvent,
    RetryPromptPart,
    TextPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import Model, ModelRequestParameters, StreamedResponse
from pydantic_ai.settings import ModelSettings
from pydantic_ai.usage import RequestUsage

from nestor.core.errors import ProviderError
from nestor.providers.local.chat_format import ChatTemplate, to_chat_messages, tools_for_template
from nestor.providers.local.text_engine import Generated, PromptEvaluated, PromptTooLongError, TextEngine
from nestor.providers.local.tool_calls import call_json_schema, parse_tool_calls
from nestor.providers.local.visible_text import TOOL_CALL_OPEN, TOOL_RESPONSE_OPEN, VisibleText

DEFAULT_MAX_TOKENS = 1024
DEFAULT_TEMPERATURE = 0.2
MAX_CALLS_PER_RESPONSE = 8
_CALL_MAX_TOKENS = 1024


class LocalModel(Model):
    """A GGUF model generating in this process.

    The engine is llama.cpp's :class:`~nestor.providers.local.engine.LlamaEngine`, or in tests
    any :class:`~nestor.providers.local.engine.TextEngine`.

    Args:
        engine: The loaded (or lazily loading) model.
        template: The model's chat template.
        name: The model's name in responses (``local:...`` without the prefix).
        settings: Default request settings.
        call_first: Answer a new user prompt with a tool call first (small models otherwise
            answer questions about a repository from imagination instead of looking).

    """

    def __init__(
        self,
        engine: TextEngine,
        template: ChatTemplate,
        *,
        name: str,
        settings: ModelSettings | None = None,
        call_first: bool = False,
    ) -> None:
        # It reads text only: a prompt with an image is refused before it is sent (the kernel's
        # prompt_files.py), not answered as if the image were not there.
        super().__init__(settings=settings, profile={"supports_image_input": False})
        self.engine = engine
        self.template = template
        self.call_first = call_first
        self._name = name

    @property
    def model_name(self) -> str:
        """The model's name."""
        return self._name

    @property
    def system(self) -> str:
        """The provider name used in responses."""
        return "local"

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        """Generate a whole response (the streamed path, collected)."""
        async with self.request_stream(messages, model_settings, model_request_parameters) as stream:
            async for _ in stream:
                pass
        return stream.get()

    async def infill(
        self, before: str, after: str, *, max_tokens: int, temperature: float = 0.0, seed: int | None = None
    ) -> ModelResponse | None:
        """Fill in the code between ``before`` and ``after`` (fill-in-the-middle), as a response.

        Code models are trained to complete the middle of a file; a small one does this far better
        than it follows chat instructions about the same code. The response's one text part is the
        middle, and its usage counts the prompt and the tokens generated.

        Returns:
            None when the model has no fill-in-the-middle tokens.

        """
        markers = await self.engine.infill_markers()
        if markers is None:
            return None
        generated: Generated | None = None
        try:
            async for item in self.engine.generate(
                markers.prompt(before, after), max_tokens=max_tokens, temperature=temperature, seed=seed
            ):
                if isinstance(item, Generated):
                    generated = item
        except PromptTooLongError as exc:
            raise ModelContextWindowExceededError(model_name=self._name, message=str(exc)) from exc
        assert generated is not None  # the engine always ends with it
        return ModelResponse(
            parts=[TextPart(generated.text)],
            usage=RequestUsage(
                input_tokens=generated.prompt_tokens, output_tokens=generated.completion_tokens
            ),
            model_name=self._name,
            provider_name="local",
            finish_reason="length" if generated.finish_reason == "length" else "stop",
        )

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: Any = None,
    ) -> AsyncGenerator[StreamedResponse]:
        """Stream a response: text as it is generated, tool calls when complete."""
        model_settings, model_request_parameters = self.prepare_request(
            model_settings, model_request_parameters
        )
        settings: dict[str, Any] = dict(model_settings or {})
        tools = list(model_request_parameters.function_tools)
        instructions = InstructionPart.join(list(model_request_parameters.instruction_parts or []))
        chat = to_chat_messages(messages, instructions or None)
        template_tools = tools_for_template(tools) if tools else None
        prompt = self.template.render(chat, template_tools, add_generation_prompt=True)
        yield LocalStreamedResponse(
            model_request_parameters=model_request_parameters,
            _model_name=self._name,
            _engine=self.engine,
            _prompt=prompt,
            _stable_prefix=system_turn_length(self.template, chat, template_tools, prompt),
            _tool_names=frozenset(tool.name for tool in tools),
            _call_schema=call_json_schema(tools) if tools else None,
            _max_tokens=int(settings.get("max_tokens") or DEFAULT_MAX_TOKENS),
            _temperature=float(settings.get("temperature", DEFAULT_TEMPERATURE)),
            _seed=settings.get("seed"),
            _call_first=self.call_first and bool(tools) and starts_user_turn(messages),
        )


def system_turn_length(
    template: ChatTemplate,
    chat: Sequence[dict[str, Any]],
    tools: Sequence[dict[str, Any]] | None,
    prompt: str,
) -> int:
    """How many characters of ``prompt`` (``chat`` rendered) are its system turn, tools included.

    The template renders the system message alone, with the tools; when the prompt starts with
    that text, its length is the answer. Without a system message, or with a template that fails
    on a lone system message or renders it differently within a conversation, it is 0: the
    prompt has no prefix the engine can keep between runs.
    """
    if not chat or chat[0].get("role") != "system":
        return 0
    try:
        system_turn = template.render(chat[:1], tools, add_generation_prompt=False)
    except ProviderError:
        return 0
    if system_turn and len(system_turn) < len(prompt) and prompt.startswith(system_turn):
        return len(system_turn)
    return 0


def _call_text(call: dict[str, Any]) -> str:
    """A generated call as Qwen-style chat templates render it in the history: name, then arguments.

    The prompt of the response's next generation and that of the next request then start alike,
    so the engine keeps the call evaluated instead of evaluating the conversation from there again.
    """
    return json.dumps(
        {"name": call.get("name", ""), "arguments": call.get("arguments") or {}}, ensure_ascii=False
    )


def starts_user_turn(messages: Sequence[ModelMessage]) -> bool:
    """True when the last message is the user's new prompt (not tool results coming back)."""
    last = messages[-1] if messages else None
    return (
        isinstance(last, ModelRequest)
        and any(isinstance(part, UserPromptPart) for part in last.parts)
        and not any(isinstance(part, ToolReturnPart | RetryPromptPart) for part in last.parts)
    )


def call_intent(text: str) -> int | None:
    """Where the model starts a tool call in ``text`` (the text generated so far), or None.

    A call starts at the template's ``<tool_call>`` tag anywhere (or at ``<tool_response>``: a
    model writing the tag of a tool's answer in its own turn is trying to call one), or, at the
    very start of the text, at a JSON object or a fenced JSON block: small models often write
    their call that way, and a reply opening with JSON is a call far more often than an answer.
    Only what precedes the returned index is kept as text; the call itself is generated again
    under the grammar.
    """
    tags = [index for tag in (TOOL_CALL_OPEN, TOOL_RESPONSE_OPEN) if (index := text.find(tag)) != -1]
    if tags:
        return min(tags)
    stripped = text.lstrip()
    if stripped.startswith("{"):
        return 0
    if stripped.startswith("```"):
        opening, newline, rest = stripped.partition("\n")
        if not newline:
            return None  # the fence's language is not known yet
        language = opening[3:].strip().lower()
        if language == "json" or (language in ("", "tool_call") and rest.lstrip().startswith("{")):
            return 0
    return None


@dataclass
class LocalStreamedResponse(StreamedResponse):
    """The events of one local generation; see the module docstring for how calls are found."""

    _model_name: str
    _engine: TextEngine
    _prompt: str
    _stable_prefix: int
    _tool_names: frozenset[str]
    _call_schema: dict[str, Any] | None
    _max_tokens: int
    _temperature: float
    _seed: int | None
    _call_first: bool = False
    _input_counted: bool = False
    _text_started: bool = False
    _timestamp: datetime = field(default_factory=lambda: datetime.now(UTC))

    async def _get_event_iterator(self) -> AsyncIterator[ModelResponseStreamEvent]:
        prompt = self._prompt
        visible = VisibleText(self._tool_names)
        written: list[str] = []  # generated text outside calls, for the end-of-turn parse
        calls = 0
        budget = self._max_tokens
        call_now = self._call_first and self._call_schema is not None
        while budget > 0:
            if call_now:
                call_now = False
                prompt += TOOL_CALL_OPEN + "\n"
                call = await self._generate_call(prompt)
                calls += 1
                yield self._call_event(calls, call)
                prompt += _call_text(call) + "\n</tool_call>"
                continue
            phase_text, fed, call_at = "", 0, None
            async for item in self._generate(prompt, budget):
                if isinstance(item, Generated):
                    break
                phase_text += item
                if self._call_schema is not None and calls < MAX_CALLS_PER_RESPONSE:
                    call_at = call_intent(phase_text)
                    if call_at is not None:
                        break  # the model starts a call: generate it under the grammar instead
                for event in self._text_events(visible.feed(phase_text[fed:])):
                    yield event
                fed = len(phase_text)
            budget -= max(1, len(phase_text) // 4)
            if call_at is None:
                written.append(phase_text)
                break
            # Text fed but held back (a fence or tag start) up to the call is plain text after all.
            for event in self._text_events([phase_text[fed - len(visible.abandon()) : call_at]]):
                yield event
            written.append(phase_text[:call_at])
            prompt += phase_text[:call_at]
            call_now = True
        for event in self._text_events(visible.finish()):
            yield event
        if self._tool_names:
            for parsed in parse_tool_calls("".join(written), self._tool_names).calls:
                calls += 1
                yield self._call_event(calls, {"name": parsed.name, "arguments": parsed.arguments})

    def _text_events(self, pieces: list[str]) -> list[ModelResponseStreamEvent]:
        events: list[ModelResponseStreamEvent] = []
        for piece in pieces:
            if not self._text_started:
                # Blank lines before the text (or around a call) are noise in the history.
                piece = piece.lstrip()
                self._text_started = bool(piece)
            if piece:
                events.extend(self._parts_manager.handle_text_delta(vendor_part_id="text", content=piece))
        return events

    def _call_event(self, number: int, call: dict[str, Any]) -> ModelResponseStreamEvent:
        return self._parts_manager.handle_tool_call_part(
            vendor_part_id=f"call-{number}",
            tool_name=str(call.get("name", "")),
            args=call.get("arguments") or {},
            tool_call_id=f"local-{uuid4().hex[:12]}",
        )

    async def _generate(
        self, prompt: str, max_tokens: int, *, json_schema: dict[str, Any] | None = None
    ) -> AsyncIterator[str | Generated]:
        try:
            async for item in self._engine.generate(
                prompt,
                max_tokens=max_tokens,
                temperature=self._temperature,
                json_schema=json_schema,
                seed=self._seed,
                stable_prefix=self._stable_prefix,
            ):
                if isinstance(item, PromptEvaluated):
                    # Later prompts of this response only add what it generated: not input.
                    if not self._input_counted:
                        self._input_counted = True
                        self._usage += RequestUsage(input_tokens=item.prompt_tokens)
                    continue
                if isinstance(item, str):
                    self._usage += RequestUsage(output_tokens=1)
                yield item
        except PromptTooLongError as exc:
            raise ModelContextWindowExceededError(model_name=self._model_name, message=str(exc)) from exc

    async def _generate_call(self, prompt: str) -> dict[str, Any]:
        """Generate one call's JSON under the tools' grammar."""
        assert self._call_schema is not None
        text = ""
        async for item in self._generate(prompt, _CALL_MAX_TOKENS, json_schema=self._call_schema):
            if isinstance(item, str):
                text += item
        try:
            call = json.loads(text)
        except json.JSONDecodeError:
            call = None
        if not isinstance(call, dict):
            # Only when the token budget cut the call short; the loop reports the bad arguments.
            return {"name": "", "arguments": {"_raw": text}}
        return call  # pyright: ignore[reportUnknownVariableType]

    @property
    def model_name(self) -> str:
        """The model's name."""
        return self._model_name

    @property
    def provider_name(self) -> str:
        """The provider's name."""
        return "local"

    @property
    def provider_url(self) -> None:
        """No URL: the model runs in process."""
        return None

    @property
    def timestamp(self) -> datetime:
        """When the response started."""
        return self._timestamp
