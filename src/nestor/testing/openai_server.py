"""A scripted OpenAI-compatible HTTP server on loopback, to test the real provider path end to end.

Each ``POST .../chat/completions`` (or ``POST .../responses``, OpenAI's Responses API, rendered by
:mod:`nestor.testing.openai_responses`) gets the next scripted step: a :class:`ServerReply` (text and tool
calls, streamed as server-sent events split over several chunks, or as one JSON body) or an
:class:`HTTPErrorReply` (a status with body and headers). A reply can also break its connection
part-way (``drop_after_chunks``), or stall there, sending nothing more until the server stops
(``stall_after_chunks``). Every request body is recorded in :attr:`ScriptedOpenAIServer.requests`.

In-process, as a context manager::

    with ScriptedOpenAIServer([ServerReply(text="hello", chunks=3)]) as server:
        provider = OpenAIProvider(base_url=server.base_url, api_key="test")

As a separate process, serving until killed (the script file holds a JSON list of steps in the format
of :func:`step_to_json`)::

    python -m nestor.testing.openai_server --script steps.json --port-file port.txt

Only the standard library is used, so the process starts fast.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, TypeAlias

from nestor.testing._http_server import (
    EventStream,
    HTTPErrorReply,
    JSONReply,
    ScriptedServer,
    ServerToolCall,
    split_evenly,
)
from nestor.testing.openai_responses import render_response

__all__ = [
    "HTTPErrorReply",
    "ScriptedOpenAIServer",
    "ServerReply",
    "ServerStep",
    "ServerStepSource",
    "ServerToolCall",
    "ServerUsage",
    "first_user_text",
    "load_script",
    "main",
    "step_from_json",
    "step_to_json",
]


@dataclass(frozen=True)
class ServerUsage:
    """Token usage to report, in OpenAI's terms.

    Attributes:
        prompt_tokens: Input tokens, cached ones included.
        completion_tokens: Output tokens, reasoning ones included.
        cached_tokens: Sent as ``prompt_tokens_details.cached_tokens`` when set.
        reasoning_tokens: Sent as ``completion_tokens_details.reasoning_tokens`` when set.

    """

    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None

    def to_wire(self) -> dict[str, Any]:
        """Return the ``usage`` object of a response."""
        wire: dict[str, Any] = {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
        }
        if self.cached_tokens is not None:
            wire["prompt_tokens_details"] = {"cached_tokens": self.cached_tokens}
        if self.reasoning_tokens is not None:
            wire["completion_tokens_details"] = {"reasoning_tokens": self.reasoning_tokens}
        return wire


@dataclass(frozen=True)
class ServerReply:
    """A successful (HTTP 200) reply.

    Attributes:
        text: The assistant text (may be empty).
        tool_calls: Tool calls after the text; several are parallel calls.
        usage: Usage to report; ``None`` reports a rough estimate from the request and reply sizes.
        finish_reason: Overrides the finish reason (``tool_calls`` with calls, otherwise ``stop``);
            ``content_filter`` is how a provider's filter ends a reply.
        refusal: The model's refusal, sent in OpenAI's ``refusal`` field (streamed in ``chunks``
            pieces) after the text, as OpenAI does when a model declines.
        chunks: How many stream chunks the text is split into.
        args_chunks: How many stream chunks each call's arguments are split into.
        delay: Seconds to wait before responding.
        chunk_delay: Seconds to wait between stream chunks.
        drop_after_chunks: Close the connection abruptly after this many stream chunks (for a
            non-streamed request: after half the body), simulating a dropped connection.
        stall_after_chunks: Send nothing more after this many stream chunks, keeping the
            connection open until the server stops (a provider that hangs mid-stream).

    """

    text: str = ""
    tool_calls: tuple[ServerToolCall, ...] = ()
    usage: ServerUsage | None = None
    finish_reason: str | None = None
    refusal: str = ""
    chunks: int = 1
    args_chunks: int = 1
    delay: float = 0.0
    chunk_delay: float = 0.0
    drop_after_chunks: int | None = None
    stall_after_chunks: int | None = None


ServerStep: TypeAlias = ServerReply | HTTPErrorReply
"""One scripted response."""

ServerStepSource: TypeAlias = ServerStep | Callable[[dict[str, Any]], ServerStep]
"""A fixed step, or (in-process only) a function from the request body to a step."""


def first_user_text(body: dict[str, Any]) -> str:
    """The text of the first user message of a chat-completions request body.

    What a step function usually routes on: a sub-agent's task, or the main agent's first prompt.
    A message in parts (a prompt with an image) gives the text of its ``text`` parts, one per line.
    """
    for message in body.get("messages", []):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            parts = [part for part in content or [] if isinstance(part, dict)]
            return "\n".join(str(part.get("text", "")) for part in parts if part.get("type") == "text")
    return ""


def step_to_json(step: ServerStep) -> dict[str, Any]:
    """Return ``step`` as the JSON object a script file holds (fields left at their defaults omitted)."""
    if isinstance(step, HTTPErrorReply):
        data: dict[str, Any] = {"status": step.status, "body": step.body, "headers": dict(step.headers)}
        return data | ({"delay": step.delay} if step.delay else {})
    defaults = ServerReply()
    data = {
        name: getattr(step, name)
        for name in (
            "text",
            "finish_reason",
            "refusal",
            "chunks",
            "args_chunks",
            "delay",
            "chunk_delay",
            "drop_after_chunks",
            "stall_after_chunks",
        )
        if getattr(step, name) != getattr(defaults, name)
    }
    if step.tool_calls:
        data["tool_calls"] = [{"name": c.name, "arguments": c.arguments, "id": c.id} for c in step.tool_calls]
    if step.usage is not None:
        data["usage"] = {key: value for key, value in vars(step.usage).items() if value is not None}
    return data


def step_from_json(data: dict[str, Any]) -> ServerStep:
    """Build a step from its JSON object: an object with ``status`` is an error, anything else a reply.

    Raises:
        ValueError: The object has unknown keys or values of the wrong shape.

    """
    try:
        if "status" in data:
            return HTTPErrorReply(**data)
        fields = dict(data)
        fields["tool_calls"] = tuple(ServerToolCall(**c) for c in fields.get("tool_calls", ()))
        if fields.get("usage") is not None:
            fields["usage"] = ServerUsage(**fields["usage"])
        return ServerReply(**fields)
    except TypeError as error:
        raise ValueError(f"invalid script step {data!r}: {error}") from error


def load_script(path: Path) -> list[ServerStep]:
    """Read a script file: a JSON list of step objects, or an object with a ``steps`` list."""
    data = json.loads(path.read_text(encoding="utf-8"))
    steps = data["steps"] if isinstance(data, dict) else data
    return [step_from_json(step) for step in steps]


class _Completion:
    """The wire form of one reply to one request: a JSON body or a list of stream chunks."""

    def __init__(self, step: ServerReply, request: dict[str, Any], number: int) -> None:
        self.step = step
        self.model = str(request.get("model", "scripted"))
        self.id = f"chatcmpl-scripted-{number}"
        self.created = int(time.time())
        self.call_ids = [c.id or f"call_{number}_{index}" for index, c in enumerate(step.tool_calls)]
        self.finish_reason = step.finish_reason or ("tool_calls" if step.tool_calls else "stop")
        reply_size = len(step.text) + sum(len(c.arguments_json()) for c in step.tool_calls)
        self.usage = step.usage or ServerUsage(
            prompt_tokens=max(1, len(json.dumps(request.get("messages", []))) // 4),
            completion_tokens=max(1, reply_size // 4),
        )

    def body(self) -> dict[str, Any]:
        """Return the non-streamed ``chat.completion`` object."""
        tool_calls = [
            {"id": call_id, "type": "function", "function": {"name": c.name, "arguments": c.arguments_json()}}
            for call_id, c in zip(self.call_ids, self.step.tool_calls, strict=True)
        ]
        message: dict[str, Any] = {"role": "assistant", "content": self.step.text or None}
        if self.step.refusal:
            message["refusal"] = self.step.refusal
        if tool_calls:
            message["tool_calls"] = tool_calls
        choice = {"index": 0, "message": message, "finish_reason": self.finish_reason, "logprobs": None}
        return {**self._envelope("chat.completion"), "choices": [choice], "usage": self.usage.to_wire()}

    def chunks(self, include_usage: bool) -> list[dict[str, Any]]:
        """Return the ``chat.completion.chunk`` objects of the stream, in order."""
        deltas: list[dict[str, Any]] = [
            {"content": piece} for piece in split_evenly(self.step.text, self.step.chunks)
        ]
        deltas += [{"refusal": piece} for piece in split_evenly(self.step.refusal, self.step.chunks)]
        for index, (call_id, tool_call) in enumerate(zip(self.call_ids, self.step.tool_calls, strict=True)):
            fragments = split_evenly(tool_call.arguments_json(), self.step.args_chunks) or [""]
            function = {"name": tool_call.name, "arguments": fragments[0]}
            deltas.append(
                {"tool_calls": [{"index": index, "id": call_id, "type": "function", "function": function}]}
            )
            deltas.extend(
                {"tool_calls": [{"index": index, "function": {"arguments": f}}]} for f in fragments[1:]
            )
        deltas = deltas or [{"content": ""}]
        deltas[0] = {"role": "assistant", **deltas[0]}
        chunks = [self._chunk(delta, None) for delta in deltas]
        chunks.append(self._chunk({}, self.finish_reason))
        if include_usage:
            chunks.append(
                {**self._envelope("chat.completion.chunk"), "choices": [], "usage": self.usage.to_wire()}
            )
        return chunks

    def _chunk(self, delta: dict[str, Any], finish_reason: str | None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}
        return {**self._envelope("chat.completion.chunk"), "choices": [choice]}

    def _envelope(self, kind: str) -> dict[str, Any]:
        return {"id": self.id, "object": kind, "created": self.created, "model": self.model}


class ScriptedOpenAIServer(ScriptedServer[ServerReply]):
    """An OpenAI-compatible server on 127.0.0.1 answering chat completions and responses from a script.

    Its :attr:`base_url` ends in ``/v1``, as OpenAI clients expect.

    Attributes:
        requests: Every chat completion request body, in order (unscripted ones included).
        request_headers: The headers of each request in :attr:`requests` (lower-cased names).
        request_times: When each request in :attr:`requests` arrived (``time.time()``).
        unscripted_requests: Bodies of requests that came after the script ran out (answered with 500).
        errors: Tracebacks of step functions that raised (answered with 500).
        model_ids: The ids ``GET /v1/models`` lists.

    """

    label = "scripted OpenAI server"
    post_routes = ("/chat/completions", "/responses")
    base_path = "/v1"

    def _render(
        self, step: ServerReply, request: dict[str, Any], number: int, route: str
    ) -> JSONReply | EventStream:
        if route.endswith("/responses"):
            return render_response(step, request, number)
        completion = _Completion(step, request, number)
        if not request.get("stream"):
            return JSONReply(completion.body(), truncate=step.drop_after_chunks is not None)
        include_usage = bool((request.get("stream_options") or {}).get("include_usage"))
        events = [f"data: {json.dumps(chunk)}\n\n".encode() for chunk in completion.chunks(include_usage)]
        return EventStream(
            [*events, b"data: [DONE]\n\n"],
            drop_at=step.drop_after_chunks,
            stall_at=step.stall_after_chunks,
            chunk_delay=step.chunk_delay,
        )

    def _error_body(self, status: int, message: str, error_type: str) -> dict[str, Any]:
        return {"error": {"message": message, "type": error_type, "param": None, "code": error_type}}

    def _get(self, path: str) -> tuple[int, dict[str, Any]] | None:
        if not path.endswith("/models"):
            return None
        models = [{"id": m, "object": "model", "created": 0, "owned_by": "nestor"} for m in self.model_ids]
        return 200, {"object": "list", "data": models}


def main(argv: Sequence[str] | None = None) -> int:
    """Serve a script file until SIGTERM or SIGINT; the port is written to ``--port-file`` once bound."""
    parser = argparse.ArgumentParser(prog="python -m nestor.testing.openai_server", description=main.__doc__)
    parser.add_argument("--script", type=Path, required=True, help="JSON file: a list of steps")
    parser.add_argument("--port-file", type=Path, required=True, help="file to write the bound port to")
    parser.add_argument("--port", type=int, default=0, help="port to bind (default: a free one)")
    parser.add_argument("--requests-file", type=Path, help="append each request body here as a JSON line")
    options = parser.parse_args(argv)
    stop = threading.Event()

    def request_stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    server = ScriptedOpenAIServer(
        load_script(options.script), port=options.port, requests_file=options.requests_file
    )
    with server:
        # Written whole then renamed, so a reader polling for the file never sees half a port number.
        partial = options.port_file.with_name(options.port_file.name + ".partial")
        partial.write_text(f"{server.port}\n", encoding="utf-8")
        os.replace(partial, options.port_file)
        print(server.base_url, flush=True)
        while not stop.wait(0.5):
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
