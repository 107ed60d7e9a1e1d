"""A scripted Gemini API server on loopback, for clients of Google's Gemini API (Gemini CLI, google-genai).

Each ``POST /v1beta/models/{model}:generateContent`` (one JSON body) or
``:streamGenerateContent?alt=sse`` (server-sent events, ``data: {json}``, each a
``GenerateContentResponse`` chunk) gets the next scripted step: a
:class:`~nestor.testing.ServerReply` (text and tool calls, sent as ``functionCall`` parts; its
usage as ``usageMetadata``) or an :class:`HTTPErrorReply`. ``:countTokens`` is answered with an
estimate without taking a step, and ``GET /v1beta/models`` lists :attr:`ScriptedGeminiServer.model_ids`.
Every generate request body is recorded in :attr:`ScriptedGeminiServer.requests`.

In-process, as a context manager; the base URL has no version (clients add ``/v1beta``), and is what
``GOOGLE_GEMINI_BASE_URL`` takes::

    with ScriptedGeminiServer([ServerReply(text="hello", chunks=3)]) as server:
        env = {"GOOGLE_GEMINI_BASE_URL": server.base_url, "GEMINI_API_KEY": "test"}

:class:`ServerReply` is OpenAI's step type, read in Gemini's terms: ``finish_reason`` overrides the
finish reason (``STOP`` otherwise, with calls too, as Gemini sends it; e.g. ``MAX_TOKENS``), usage's
``prompt_tokens``, ``cached_tokens`` and ``reasoning_tokens`` go out as ``promptTokenCount``,
``cachedContentTokenCount`` and ``thoughtsTokenCount``, and ``completion_tokens`` less the reasoning as
``candidatesTokenCount`` (Gemini counts thoughts apart).
A call's arguments go out whole in one part (Gemini does not stream them in pieces, so
``args_chunks`` is not used), as an object when they parse; ``refusal`` has no Gemini form and is not
sent. Errors use Google's body, ``{"error": {"code", "message", "status"}}``.

Only the standard library is used.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from nestor.testing._http_server import (
    EventStream,
    HTTPErrorReply,
    JSONReply,
    ScriptedServer,
    ServerToolCall,
    split_evenly,
)
from nestor.testing.openai_server import ServerReply, ServerUsage

__all__ = ["STATUS_NAMES", "HTTPErrorReply", "ScriptedGeminiServer", "ServerReply", "ServerToolCall"]

STATUS_NAMES: Mapping[int, str] = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "NOT_IMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
"""Google's status name of each HTTP status, sent in an error body's ``status``."""

_GENERATE = ":generateContent"
_STREAM = ":streamGenerateContent"
_COUNT = ":countTokens"


def _estimate(value: Any) -> int:
    return max(1, len(json.dumps(value)) // 4)


def _sent(request: Mapping[str, Any]) -> list[Any]:
    """What a request's prompt is made of: the conversation, the system instruction and the tools."""
    return [request.get(key) for key in ("contents", "systemInstruction", "tools")]


def _model(route: str) -> str:
    """The model of a route such as ``/v1beta/models/gemini-2.5-pro:generateContent``."""
    return route.rsplit("/", 1)[-1].split(":", 1)[0]


class _Generation:
    """The wire form of one reply to one request: a ``GenerateContentResponse`` or its stream chunks."""

    def __init__(self, step: ServerReply, request: dict[str, Any], number: int, route: str) -> None:
        self.step = step
        self.model = _model(route)
        self.id = f"scripted-{number}"
        self.finish_reason = step.finish_reason or "STOP"
        reply_size = len(step.text) + sum(len(c.arguments_json()) for c in step.tool_calls)
        self.usage = step.usage or ServerUsage(
            prompt_tokens=_estimate(_sent(request)), completion_tokens=max(1, reply_size // 4)
        )

    def body(self) -> dict[str, Any]:
        """Return the non-streamed response: every part in one candidate."""
        parts = [{"text": self.step.text}] if self.step.text else []
        return self._response([*parts, *self._call_parts()], finished=True)

    def stream(self) -> EventStream:
        """Return the stream: a chunk per text piece, then one with the calls, the finish reason and usage."""
        pieces = [[{"text": piece}] for piece in split_evenly(self.step.text, self.step.chunks)]
        calls = self._call_parts()
        if calls or not pieces:
            pieces.append(calls or [{"text": ""}])
        chunks = [
            self._response(parts, finished=index == len(pieces) - 1) for index, parts in enumerate(pieces)
        ]
        return EventStream(
            [f"data: {json.dumps(chunk)}\n\n".encode() for chunk in chunks],
            drop_at=self.step.drop_after_chunks,
            stall_at=self.step.stall_after_chunks,
            chunk_delay=self.step.chunk_delay,
        )

    def _call_parts(self) -> list[dict[str, Any]]:
        parts: list[dict[str, Any]] = []
        for call in self.step.tool_calls:
            function: dict[str, Any] = {"name": call.name, "args": call.arguments_object()}
            if call.id is not None:
                function["id"] = call.id
            parts.append({"functionCall": function})
        return parts

    def _response(self, parts: list[dict[str, Any]], *, finished: bool) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        if finished:
            candidate["finishReason"] = self.finish_reason
        return {
            "candidates": [candidate],
            "usageMetadata": self._usage_metadata(),
            "modelVersion": self.model,
            "responseId": self.id,
        }

    def _usage_metadata(self) -> dict[str, Any]:
        usage = self.usage
        # OpenAI's output count holds the reasoning; Gemini counts thoughts apart from the candidates.
        wire: dict[str, Any] = {
            "promptTokenCount": usage.prompt_tokens,
            "candidatesTokenCount": usage.completion_tokens - (usage.reasoning_tokens or 0),
            "totalTokenCount": usage.prompt_tokens + usage.completion_tokens,
        }
        if usage.cached_tokens is not None:
            wire["cachedContentTokenCount"] = usage.cached_tokens
        if usage.reasoning_tokens is not None:
            wire["thoughtsTokenCount"] = usage.reasoning_tokens
        return wire


class ScriptedGeminiServer(ScriptedServer[ServerReply]):
    """A Gemini API server on 127.0.0.1 answering ``generateContent`` and its stream from a script.

    Build it with a list of :data:`~nestor.testing.ServerStepSource`; the keyword arguments are those
    of :class:`~nestor.testing.ScriptedOpenAIServer` (``host``, ``port``, ``model_ids``,
    ``requests_file``). Its :attr:`base_url` has no version: Gemini clients add ``/v1beta``.

    Attributes:
        requests: Every generate request body, in order (unscripted ones included; ``countTokens``
            requests are not scripted and not recorded).
        request_headers: The headers of each request in :attr:`requests` (lower-cased names).
        request_times: When each request in :attr:`requests` arrived (``time.time()``).
        unscripted_requests: Bodies of requests that came after the script ran out (answered with 500).
        errors: Tracebacks of step functions that raised (answered with 500).
        model_ids: The ids ``GET /v1beta/models`` lists.

    """

    label = "scripted Gemini server"
    post_routes = (_GENERATE, _STREAM)
    base_path = ""

    def _render(
        self, step: ServerReply, request: dict[str, Any], number: int, route: str
    ) -> JSONReply | EventStream:
        generation = _Generation(step, request, number, route)
        if route.endswith(_STREAM):
            return generation.stream()
        return JSONReply(generation.body(), truncate=step.drop_after_chunks is not None)

    def _error_body(self, status: int, message: str, error_type: str) -> dict[str, Any]:
        return {"error": {"code": status, "message": message, "status": STATUS_NAMES.get(status, "UNKNOWN")}}

    def _answer(self, route: str, request: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
        if not route.endswith(_COUNT):
            return None
        # countTokens takes the prompt bare, or wrapped in a generate request.
        wrapped = request.get("generateContentRequest")
        return 200, {"totalTokens": _estimate(_sent(wrapped if isinstance(wrapped, dict) else request))}

    def _get(self, path: str) -> tuple[int, dict[str, Any]] | None:
        if path.rstrip("/") != "/v1beta/models":
            return None
        methods = ["generateContent", "streamGenerateContent", "countTokens"]
        models = [
            {"name": f"models/{m}", "displayName": m, "supportedGenerationMethods": methods}
            for m in self.model_ids
        ]
        return 200, {"models": models}
