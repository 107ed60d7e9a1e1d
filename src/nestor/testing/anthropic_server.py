"""A scripted Anthropic Messages API server on loopback, to test the real Anthropic provider path.

Each ``POST /v1/messages`` gets the next scripted step: an :class:`AnthropicReply` (text and tool
calls, streamed as Anthropic's server-sent events with the text and each call's JSON input split over
several deltas, or as one JSON message) or an :class:`HTTPErrorReply` (a status with body and
headers). A reply can also break its connection part-way (``drop_after_chunks``). Every request body
is recorded in :attr:`ScriptedAnthropicServer.requests`, so tests can check what the client sent, such
as ``cache_control`` breakpoints.

In-process, as a context manager; the base URL has no ``/v1``, as Anthropic clients expect::

    with ScriptedAnthropicServer([AnthropicReply(text="hello", chunks=3)]) as server:
        provider = AnthropicProvider(api_key="test", base_url=server.base_url)

Errors use Anthropic's body, ``{"type": "error", "error": {"type": ..., "message": ...}}``;
:func:`anthropic_error` builds one, and :func:`prompt_too_long` the 400 Anthropic answers a prompt over
the context window with::

    ScriptedAnthropicServer([anthropic_error(429, "slow down", headers={"Retry-After": "2"})])
    ScriptedAnthropicServer([prompt_too_long(tokens=210_000, maximum=200_000)])

Only the standard library is used.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from nestor.testing._http_server import (
    EventStream,
    HTTPErrorReply,
    JSONReply,
    ScriptedServer,
    ServerToolCall,
    split_evenly,
)

__all__ = [
    "ERROR_TYPES",
    "AnthropicReply",
    "AnthropicStep",
    "AnthropicStepSource",
    "AnthropicUsage",
    "HTTPErrorReply",
    "ScriptedAnthropicServer",
    "ServerToolCall",
    "anthropic_error",
    "prompt_too_long",
]

ERROR_TYPES: Mapping[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}
"""Anthropic's error ``type`` for each HTTP status it uses (others get ``api_error``)."""


@dataclass(frozen=True)
class AnthropicUsage:
    """Token usage to report, in Anthropic's terms.

    Attributes:
        input_tokens: Input tokens read neither from nor into the cache (Anthropic counts cache
            tokens apart; clients add them up).
        output_tokens: Output tokens.
        cache_read_input_tokens: Sent as ``cache_read_input_tokens`` when set.
        cache_creation_input_tokens: Sent as ``cache_creation_input_tokens`` when set.

    """

    input_tokens: int
    output_tokens: int
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None

    def to_wire(self) -> dict[str, Any]:
        """Return the ``usage`` object of a message."""
        wire: dict[str, Any] = {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}
        if self.cache_read_input_tokens is not None:
            wire["cache_read_input_tokens"] = self.cache_read_input_tokens
        if self.cache_creation_input_tokens is not None:
            wire["cache_creation_input_tokens"] = self.cache_creation_input_tokens
        return wire


@dataclass(frozen=True)
class AnthropicReply:
    """A successful (HTTP 200) reply.

    Attributes:
        text: The assistant text (may be empty: then no text block is sent).
        tool_calls: ``tool_use`` blocks after the text; several are parallel calls. Raw-string arguments
            go on the wire as they are; in a non-streamed message, as the parsed object when they parse.
        usage: Usage to report; ``None`` reports a rough estimate from the request and reply sizes.
        stop_reason: Overrides the stop reason (``tool_use`` with calls, otherwise ``end_turn``).
        chunks: How many ``text_delta`` events the text is split into.
        args_chunks: How many ``input_json_delta`` events each call's input is split into.
        delay: Seconds to wait before responding.
        chunk_delay: Seconds to wait between stream events.
        drop_after_chunks: Close the connection abruptly after this many delta events (text and input
            pieces together; 0 drops before any event, more than there are drops before
            ``message_delta``); for a non-streamed request: after half the body.

    """

    text: str = ""
    tool_calls: tuple[ServerToolCall, ...] = ()
    usage: AnthropicUsage | None = None
    stop_reason: str | None = None
    chunks: int = 1
    args_chunks: int = 1
    delay: float = 0.0
    chunk_delay: float = 0.0
    drop_after_chunks: int | None = None


AnthropicStep: TypeAlias = AnthropicReply | HTTPErrorReply
"""One scripted response."""

AnthropicStepSource: TypeAlias = AnthropicStep | Callable[[dict[str, Any]], AnthropicStep]
"""A fixed step, or a function from the request body to a step."""


def anthropic_error(
    status: int,
    message: str,
    *,
    error_type: str | None = None,
    headers: Mapping[str, str] | None = None,
    delay: float = 0.0,
) -> HTTPErrorReply:
    """Return an error reply with Anthropic's body, ``{"type": "error", "error": {"type", "message"}}``.

    Args:
        status: The HTTP status, e.g. 429, 500 or 529.
        message: The error message.
        error_type: The error type; ``None`` takes the status's from :data:`ERROR_TYPES`.
        headers: Extra response headers, e.g. ``{"Retry-After": "1"}``.
        delay: Seconds to wait before responding.

    """
    body = _error_body(status, message, error_type)
    return HTTPErrorReply(status, body=body, headers=dict(headers or {}), delay=delay)


def prompt_too_long(tokens: int = 210_000, maximum: int = 200_000) -> HTTPErrorReply:
    """Return Anthropic's answer to a prompt over the context window.

    A 400 ``invalid_request_error`` whose message is ``prompt is too long: N tokens > M maximum``, which
    pydantic-ai raises as ``ModelContextWindowExceededError``.
    """
    return anthropic_error(400, f"prompt is too long: {tokens} tokens > {maximum} maximum")


def _error_body(status: int, message: str, error_type: str | None = None) -> dict[str, Any]:
    kind = error_type or ERROR_TYPES.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


class _Message:
    """The wire form of one reply to one request: a message body or a list of stream events."""

    def __init__(self, step: AnthropicReply, request: dict[str, Any], number: int) -> None:
        self.step = step
        self.model = str(request.get("model", "scripted"))
        self.id = f"msg_scripted_{number}"
        self.call_ids = [
            c.id or f"toolu_scripted_{number}_{index}" for index, c in enumerate(step.tool_calls)
        ]
        self.stop_reason = step.stop_reason or ("tool_use" if step.tool_calls else "end_turn")
        sent = [request.get(key) for key in ("system", "tools", "messages")]
        reply_size = len(step.text) + sum(len(c.arguments_json()) for c in step.tool_calls)
        self.usage = step.usage or AnthropicUsage(
            input_tokens=max(1, len(json.dumps(sent)) // 4), output_tokens=max(1, reply_size // 4)
        )

    def body(self) -> dict[str, Any]:
        """Return the non-streamed ``message`` object."""
        content: list[dict[str, Any]] = [{"type": "text", "text": self.step.text}] if self.step.text else []
        content.extend(
            {"type": "tool_use", "id": call_id, "name": c.name, "input": c.arguments_object()}
            for call_id, c in zip(self.call_ids, self.step.tool_calls, strict=True)
        )
        return self._message(content, self.stop_reason, self.usage.to_wire())

    def stream(self) -> EventStream:
        """Return the stream: ``message_start``, a ``ping``, each block's start, deltas and stop, the end."""
        # Like the real API: the input side of the usage up front, the output count with the stop reason.
        start_usage = self.usage.to_wire() | {"output_tokens": min(1, self.usage.output_tokens)}
        events: list[dict[str, Any]] = [
            {"type": "message_start", "message": self._message([], None, start_usage)},
            {"type": "ping"},
        ]
        drop = self.step.drop_after_chunks
        drop_at = 0 if drop == 0 else None
        deltas = 0
        for index, (block, pieces) in enumerate(self._blocks()):
            events.append({"type": "content_block_start", "index": index, "content_block": block})
            for delta in pieces:
                events.append({"type": "content_block_delta", "index": index, "delta": delta})
                deltas += 1
                if deltas == drop:
                    drop_at = len(events)
            events.append({"type": "content_block_stop", "index": index})
        if drop is not None and drop_at is None:
            drop_at = len(events)
        delta = {"stop_reason": self.stop_reason, "stop_sequence": None}
        events.append({"type": "message_delta", "delta": delta, "usage": self.usage.to_wire()})
        events.append({"type": "message_stop"})
        encoded = [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events]
        return EventStream(encoded, drop_at=drop_at, chunk_delay=self.step.chunk_delay)

    def _blocks(self) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
        """Each content block as it starts, with its deltas."""
        blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
        if self.step.text:
            pieces = split_evenly(self.step.text, self.step.chunks)
            blocks.append(({"type": "text", "text": ""}, [{"type": "text_delta", "text": p} for p in pieces]))
        for call_id, call in zip(self.call_ids, self.step.tool_calls, strict=True):
            pieces = split_evenly(call.arguments_json(), self.step.args_chunks)
            start = {"type": "tool_use", "id": call_id, "name": call.name, "input": {}}
            blocks.append((start, [{"type": "input_json_delta", "partial_json": p} for p in pieces]))
        return blocks

    def _message(
        self, content: list[dict[str, Any]], stop_reason: str | None, usage: dict[str, Any]
    ) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": usage,
        }


class ScriptedAnthropicServer(ScriptedServer[AnthropicReply]):
    """An Anthropic Messages API server on 127.0.0.1 answering ``POST /v1/messages`` from a script.

    Build it with a list of :data:`AnthropicStepSource`; the keyword arguments are those of
    :class:`~nestor.testing.ScriptedOpenAIServer` (``host``, ``port``, ``model_ids``, ``requests_file``).
    Its :attr:`base_url` has no ``/v1``: Anthropic clients add it.

    Attributes:
        requests: Every messages request body, in order (unscripted ones included).
        request_headers: The headers of each request in :attr:`requests` (lower-cased names).
        request_times: When each request in :attr:`requests` arrived (``time.time()``).
        unscripted_requests: Bodies of requests that came after the script ran out (answered with 500).
        errors: Tracebacks of step functions that raised (answered with 500).
        model_ids: The ids ``GET /v1/models`` lists.

    """

    label = "scripted Anthropic server"
    post_routes = ("/v1/messages",)
    base_path = ""

    def _render(
        self, step: AnthropicReply, request: dict[str, Any], number: int, route: str
    ) -> JSONReply | EventStream:
        message = _Message(step, request, number)
        if request.get("stream"):
            return message.stream()
        return JSONReply(message.body(), truncate=step.drop_after_chunks is not None)

    def _error_body(self, status: int, message: str, error_type: str) -> dict[str, Any]:
        # The server's own errors (exhausted script, unknown route) carry Anthropic's type for the status.
        return _error_body(status, message)

    def _get(self, path: str) -> tuple[int, dict[str, Any]] | None:
        if path != "/v1/models":
            return None
        models = [
            {"type": "model", "id": m, "display_name": m, "created_at": "2025-01-01T00:00:00Z"}
            for m in self.model_ids
        ]
        first, last = (models[0]["id"], models[-1]["id"]) if models else (None, None)
        return 200, {"data": models, "has_more": False, "first_id": first, "last_id": last}
