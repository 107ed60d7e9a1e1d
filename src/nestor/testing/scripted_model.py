"""A model that plays a script, for tests: nestor's agent loop without a provider.

:class:`ScriptedModel` is a pydantic-ai :class:`~pydantic_ai.models.function.FunctionModel` that answers
each request with the next :class:`Step` of a :class:`Script`, streamed or not, and records every
request it received. A step is a fixed reply built with :func:`reply`, :func:`call` and :func:`fail`
(steps add up: ``reply("Looking.") + call("read", {"path": "a.py"}) + call("grep", {"pattern": "x"})``
is text followed by two parallel tool calls), or a callable ``(messages, info) -> Step`` for a reply
that depends on the conversation so far::

    model = ScriptedModel([
        call("read", {"path": "a.py"}),
        lambda messages, info: reply(f"read: {last_tool_results(messages)[0]}"),
    ])
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models import ModelRequestParameters, StreamedResponse
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai.settings import ModelSettings
from pydantic_ai.usage import RequestUsage

from nestor.testing.openai_server import split_evenly

__all__ = [
    "RecordedRequest",
    "Script",
    "ScriptExhausted",
    "ScriptedModel",
    "Step",
    "StepFunction",
    "StepSource",
    "ToolCall",
    "call",
    "fail",
    "last_tool_results",
    "reply",
]


@dataclass(frozen=True)
class ToolCall:
    """One tool call the scripted model makes.

    Attributes:
        name: The tool to call.
        args: The arguments, as a dict or as a raw JSON string (which may be deliberately malformed).
        id: The tool call id; when ``None`` the model numbers calls ``scripted-call-1``, ``-2``, ...

    """

    name: str
    args: dict[str, Any] | str = field(default_factory=dict[str, Any])
    id: str | None = None

    def args_json(self) -> str:
        """Return the arguments as the JSON text a provider would stream."""
        return self.args if isinstance(self.args, str) else json.dumps(self.args)


@dataclass(frozen=True)
class Step:
    """One scripted model response, with how to deliver it.

    Attributes:
        text: Text to answer with (may be empty).
        calls: Tool calls to make after the text; several calls are parallel calls.
        usage: Token usage to report; ``None`` uses the model's default.
        delay: Seconds to wait before the first chunk, to simulate latency.
        chunk_delay: Seconds to wait between streamed chunks.
        text_chunks: How many chunks the text is streamed in.
        args_chunks: How many chunks each tool call's JSON arguments are streamed in.
        error: An exception to raise, simulating a provider failure. Raised when the request opens if the
            step has nothing else, otherwise after streaming the text and calls (a stream that breaks).

    """

    text: str = ""
    calls: tuple[ToolCall, ...] = ()
    usage: RequestUsage | None = None
    delay: float = 0.0
    chunk_delay: float = 0.0
    text_chunks: int = 1
    args_chunks: int = 1
    error: BaseException | None = None

    def __add__(self, other: Step) -> Step:
        """Join two steps: text concatenated, calls appended, and ``other``'s options winning where set."""
        return Step(
            text=self.text + other.text,
            calls=self.calls + other.calls,
            usage=other.usage if other.usage is not None else self.usage,
            delay=other.delay or self.delay,
            chunk_delay=other.chunk_delay or self.chunk_delay,
            text_chunks=other.text_chunks if other.text_chunks != 1 else self.text_chunks,
            args_chunks=other.args_chunks if other.args_chunks != 1 else self.args_chunks,
            error=other.error if other.error is not None else self.error,
        )


StepFunction: TypeAlias = Callable[[list[ModelMessage], AgentInfo], "Step | Awaitable[Step]"]
"""A step decided at request time from the messages so far and the request's :class:`AgentInfo`."""

StepSource: TypeAlias = "Step | StepFunction"
"""What a script holds: a fixed step or a function producing one."""


def reply(text: str, *, chunks: int = 1, usage: RequestUsage | None = None, delay: float = 0.0) -> Step:
    """Return a step answering with ``text``, streamed in ``chunks`` pieces."""
    return Step(text=text, text_chunks=chunks, usage=usage, delay=delay)


def call(
    name: str,
    args: dict[str, Any] | str | None = None,
    *,
    id: str | None = None,
    args_chunks: int = 1,
    usage: RequestUsage | None = None,
    delay: float = 0.0,
) -> Step:
    """Return a step calling tool ``name``; add steps together for parallel calls."""
    tool_call = ToolCall(name=name, args={} if args is None else args, id=id)
    return Step(calls=(tool_call,), args_chunks=args_chunks, usage=usage, delay=delay)


def fail(error: BaseException, *, delay: float = 0.0) -> Step:
    """Return a step whose request raises ``error``, like a provider failing."""
    return Step(error=error, delay=delay)


@dataclass(frozen=True)
class RecordedRequest:
    """One request the scripted model received.

    Attributes:
        messages: The messages sent (a copy of the list; the messages themselves are shared).
        info: What pydantic-ai told the model: tools, settings, instructions.
        streamed: Whether it came through ``request_stream``.

    """

    messages: list[ModelMessage]
    info: AgentInfo
    streamed: bool

    @property
    def tool_names(self) -> list[str]:
        """Names of the function tools offered with the request."""
        return [tool.name for tool in self.info.function_tools]


class ScriptExhausted(AssertionError):
    """The model got a request after its script ran out: the test expected fewer model calls."""


class Script:
    """Steps played in order, one per request."""

    def __init__(self, steps: Iterable[StepSource]) -> None:
        self._steps: list[StepSource] = list(steps)
        self._position = 0

    @property
    def played(self) -> int:
        """How many steps have been used."""
        return self._position

    @property
    def remaining(self) -> int:
        """How many steps are left."""
        return len(self._steps) - self._position

    async def next_step(self, messages: list[ModelMessage], info: AgentInfo) -> Step:
        """Return the next step, calling it first if it is a function.

        Raises:
            ScriptExhausted: No step is left.
            TypeError: A step function returned something that is not a :class:`Step`.

        """
        if self._position >= len(self._steps):
            raise ScriptExhausted(
                f"the script has no step left for request #{self._position + 1} "
                f"({len(self._steps)} steps were scripted); last request: {describe_request(messages)}"
            )
        source = self._steps[self._position]
        self._position += 1
        if isinstance(source, Step):
            return source
        produced = source(messages, info)
        step = await produced if inspect.isawaitable(produced) else produced
        if not isinstance(step, Step):
            raise TypeError(f"step function {source!r} returned {step!r}, not a Step")
        return step


@dataclass
class _StreamHandle:
    """Carries the streamed response to the stream function, which reports the step's usage on it."""

    response: StreamedResponse | None = None


_current_stream: ContextVar[_StreamHandle] = ContextVar("nestor_scripted_stream")


class ScriptedModel(FunctionModel):
    """A :class:`FunctionModel` answering each request, streamed or not, with the next scripted step.

    Attributes:
        script: The steps, with how many were played.
        requests: Every request received, in order (including the one that found the script exhausted).

    """

    def __init__(
        self,
        steps: Script | Iterable[StepSource],
        *,
        model_name: str = "scripted",
        usage: RequestUsage | None = None,
    ) -> None:
        """Create a model playing ``steps``.

        Args:
            steps: The script, or the steps to make one from.
            model_name: The name responses report (unknown to price lists, so ``cost()`` raises LookupError).
            usage: Usage reported by steps that set none; ``None`` keeps pydantic-ai's rough estimate.

        """
        super().__init__(self._respond, stream_function=self._stream, model_name=model_name)
        self.script = steps if isinstance(steps, Script) else Script(steps)
        self.requests: list[RecordedRequest] = []
        self._default_usage = usage
        self._call_count = 0

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: Any = None,
    ) -> AsyncGenerator[StreamedResponse]:
        """Stream the next step; see :meth:`FunctionModel.request_stream`."""
        handle = _StreamHandle()
        # Read by `_stream`, which pydantic-ai calls inside the `async with` below in this same context.
        _current_stream.set(handle)
        async with super().request_stream(
            messages, model_settings, model_request_parameters, run_context
        ) as streamed:
            handle.response = streamed
            yield streamed

    async def _next_step(self, messages: list[ModelMessage], info: AgentInfo, *, streamed: bool) -> Step:
        self.requests.append(RecordedRequest(messages=list(messages), info=info, streamed=streamed))
        step = await self.script.next_step(messages, info)
        if step.delay:
            await asyncio.sleep(step.delay)
        return step

    def _call_id(self, tool_call: ToolCall) -> str:
        if tool_call.id is not None:
            return tool_call.id
        self._call_count += 1
        return f"scripted-call-{self._call_count}"

    async def _respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step = await self._next_step(messages, info, streamed=False)
        if step.error is not None:
            raise step.error
        parts: list[TextPart | ToolCallPart] = [TextPart(step.text)] if step.text else []
        parts.extend(ToolCallPart(c.name, c.args, self._call_id(c)) for c in step.calls)
        return ModelResponse(parts=parts, usage=step.usage or self._default_usage or RequestUsage())

    def _stream(self, messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        return self._stream_step(messages, info, _current_stream.get(_StreamHandle()))

    async def _stream_step(
        self, messages: list[ModelMessage], info: AgentInfo, handle: _StreamHandle
    ) -> AsyncIterator[str | DeltaToolCalls]:
        step = await self._next_step(messages, info, streamed=True)
        if step.error is not None and not step.text and not step.calls:
            raise step.error
        chunks: list[str | DeltaToolCalls] = list(split_evenly(step.text, step.text_chunks))
        for index, tool_call in enumerate(step.calls):
            fragments = split_evenly(tool_call.args_json(), step.args_chunks) or [""]
            chunks.append(
                {index: DeltaToolCall(tool_call.name, fragments[0], tool_call_id=self._call_id(tool_call))}
            )
            chunks.extend({index: DeltaToolCall(json_args=fragment)} for fragment in fragments[1:])
        # pydantic-ai needs at least one item, and an empty reply is a legitimate thing to script.
        for position, chunk in enumerate(chunks or [""]):
            if position and step.chunk_delay:
                await asyncio.sleep(step.chunk_delay)
            yield chunk
        if step.error is not None:
            raise step.error
        usage = step.usage or self._default_usage
        if usage is not None and handle.response is not None:
            # Replace pydantic-ai's running estimate with the scripted figures.
            handle.response._add_usage(usage, reported=True, cumulative=True)


def last_tool_results(messages: Sequence[ModelMessage]) -> list[Any]:
    """Return the contents of the tool results in the last request, in order (empty if none)."""
    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            return [part.content for part in message.parts if isinstance(part, ToolReturnPart)]
    return []


def describe_request(messages: Sequence[ModelMessage], limit: int = 200) -> str:
    """Summarise the last request of ``messages`` in one line, for error messages."""
    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            described = "; ".join(f"{part.part_kind}: {_short(part)}" for part in message.parts)
            return described[:limit] or "(empty request)"
    return "(no request)"


def _short(part: Any) -> str:
    content = getattr(part, "content", None)
    text = content if isinstance(content, str) else repr(content)
    return text if len(text) <= 60 else text[:57] + "..."
