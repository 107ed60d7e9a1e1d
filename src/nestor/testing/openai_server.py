"""A scripted OpenAI-compatible HTTP server on loopback, to test the real provider path end to end.

Each ``POST .../chat/completions`` gets the next scripted step: a :class:`ServerReply` (text and tool
calls, streamed as server-sent events split over several chunks, or as one JSON body) or an
:class:`HTTPErrorReply` (a status with body and headers). A reply can also break its connection
part-way (``drop_after_chunks``). Every request body is recorded in :attr:`ScriptedOpenAIServer.requests`.

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
import contextlib
import json
import os
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any, TypeAlias, cast

__all__ = [
    "HTTPErrorReply",
    "ScriptedOpenAIServer",
    "ServerReply",
    "ServerStep",
    "ServerStepSource",
    "ServerToolCall",
    "ServerUsage",
    "load_script",
    "main",
    "step_from_json",
    "step_to_json",
]


@dataclass(frozen=True)
class ServerToolCall:
    """One tool call in a reply.

    Attributes:
        name: The function name.
        arguments: The arguments, as a dict or as raw JSON text (which may be deliberately malformed).
        id: The call id; ``None`` makes one from the request number and the call's index.

    """

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict[str, Any])
    id: str | None = None

    def arguments_json(self) -> str:
        """Return the arguments as the JSON text sent on the wire."""
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)


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
        finish_reason: Overrides the finish reason (``tool_calls`` with calls, otherwise ``stop``).
        chunks: How many stream chunks the text is split into.
        args_chunks: How many stream chunks each call's arguments are split into.
        delay: Seconds to wait before responding.
        chunk_delay: Seconds to wait between stream chunks.
        drop_after_chunks: Close the connection abruptly after this many stream chunks (for a
            non-streamed request: after half the body), simulating a dropped connection.

    """

    text: str = ""
    tool_calls: tuple[ServerToolCall, ...] = ()
    usage: ServerUsage | None = None
    finish_reason: str | None = None
    chunks: int = 1
    args_chunks: int = 1
    delay: float = 0.0
    chunk_delay: float = 0.0
    drop_after_chunks: int | None = None


@dataclass(frozen=True)
class HTTPErrorReply:
    """An error reply, such as a 429 with ``Retry-After`` or a 503.

    Attributes:
        status: The HTTP status code.
        body: A JSON value sent as JSON, or a string sent as plain text; ``None`` sends an
            OpenAI-style ``{"error": {...}}`` object.
        headers: Extra response headers, e.g. ``{"Retry-After": "1"}``.
        delay: Seconds to wait before responding.

    """

    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict[str, str])
    delay: float = 0.0


ServerStep: TypeAlias = ServerReply | HTTPErrorReply
"""One scripted response."""

ServerStepSource: TypeAlias = ServerStep | Callable[[dict[str, Any]], ServerStep]
"""A fixed step, or (in-process only) a function from the request body to a step."""


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
            "chunks",
            "args_chunks",
            "delay",
            "chunk_delay",
            "drop_after_chunks",
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


def split_evenly(text: str, pieces: int) -> list[str]:
    """Split ``text`` into at most ``pieces`` non-empty consecutive parts of near-equal length."""
    if not text:
        return []
    pieces = max(1, min(pieces, len(text)))
    size, extra = divmod(len(text), pieces)
    bounds = [index * size + min(index, extra) for index in range(pieces + 1)]
    return [text[bounds[index] : bounds[index + 1]] for index in range(pieces)]


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
        if tool_calls:
            message["tool_calls"] = tool_calls
        choice = {"index": 0, "message": message, "finish_reason": self.finish_reason, "logprobs": None}
        return {**self._envelope("chat.completion"), "choices": [choice], "usage": self.usage.to_wire()}

    def chunks(self, include_usage: bool) -> list[dict[str, Any]]:
        """Return the ``chat.completion.chunk`` objects of the stream, in order."""
        deltas: list[dict[str, Any]] = [
            {"content": piece} for piece in split_evenly(self.step.text, self.step.chunks)
        ]
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


class ScriptedOpenAIServer:
    """An OpenAI-compatible server on 127.0.0.1 answering chat completions from a script.

    Attributes:
        requests: Every chat completion request body, in order (unscripted ones included).
        request_headers: The headers of each request in :attr:`requests` (lower-cased names).
        unscripted_requests: Bodies of requests that came after the script ran out (answered with 500).
        errors: Tracebacks of step functions that raised (answered with 500).

    """

    def __init__(
        self,
        steps: Iterable[ServerStepSource],
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        model_ids: Sequence[str] = ("scripted",),
        requests_file: Path | None = None,
    ) -> None:
        """Prepare a server; :meth:`start` (or ``with``) binds and serves it.

        Args:
            steps: The script, one step per chat completion request.
            host: The address to bind: keep it on loopback.
            port: The port to bind; 0 picks a free one.
            model_ids: The ids ``GET /v1/models`` lists.
            requests_file: If set, each request body is appended to it as one JSON line.

        """
        self.requests: list[dict[str, Any]] = []
        self.request_headers: list[dict[str, str]] = []
        self.unscripted_requests: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self.model_ids = list(model_ids)
        self._steps = list(steps)
        self._position = 0
        self._address = (host, port)
        self._requests_file = requests_file
        self._lock = threading.Lock()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The bound port (valid once started)."""
        if self._httpd is None:
            raise RuntimeError("the server is not started")
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        """The URL to give an OpenAI client, ending in ``/v1``."""
        return f"http://{self._address[0]}:{self.port}/v1"

    @property
    def step_count(self) -> int:
        """How many steps the script holds."""
        return len(self._steps)

    @property
    def remaining(self) -> int:
        """How many scripted steps are left."""
        with self._lock:
            return len(self._steps) - self._position

    def start(self) -> ScriptedOpenAIServer:
        """Bind the socket and serve from a daemon thread."""
        self._httpd = _HTTPServer(self._address, _Handler, self)
        # A short poll interval keeps `stop` quick: `shutdown` waits for the serving loop's next poll.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.02,), name="scripted-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close every connection."""
        if self._httpd is None:
            return
        self._httpd.shutdown()
        self._httpd.close_connections()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join()
        self._httpd = None

    def __enter__(self) -> ScriptedOpenAIServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _next_step(self, request: dict[str, Any], headers: dict[str, str]) -> tuple[int, ServerStep | None]:
        """Record ``request`` and return its number and step (``None`` when the script is exhausted)."""
        with self._lock:
            self.requests.append(request)
            self.request_headers.append(headers)
            number = len(self.requests)
            if self._requests_file is not None:
                with self._requests_file.open("a", encoding="utf-8") as log:
                    log.write(json.dumps(request) + "\n")
            if self._position >= len(self._steps):
                self.unscripted_requests.append(request)
                return number, None
            source = self._steps[self._position]
            self._position += 1
        return number, source if isinstance(source, ServerReply | HTTPErrorReply) else source(request)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], scripted: ScriptedOpenAIServer
    ) -> None:
        self.scripted = scripted
        self.open_connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        self.stopping = threading.Event()
        super().__init__(address, handler)

    def close_connections(self) -> None:
        """Wake delayed handlers and shut down kept-alive connections, so their threads end."""
        self.stopping.set()
        with self.connections_lock:
            for connection in self.open_connections:
                _shutdown(connection)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that goes away mid-response (a cancelled stream) is normal here, not worth a traceback.
        if not isinstance(sys.exc_info()[1], OSError):
            self.scripted.errors.append(traceback.format_exc())


def _shutdown(connection: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed by the peer
        connection.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    @property
    def httpd(self) -> _HTTPServer:
        return cast(_HTTPServer, self.server)

    def setup(self) -> None:
        super().setup()
        with self.httpd.connections_lock:
            self.httpd.open_connections.add(self.connection)

    def finish(self) -> None:
        with self.httpd.connections_lock:
            self.httpd.open_connections.discard(self.connection)
        super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output clean: no access log."""

    def do_GET(self) -> None:
        """Serve ``GET /v1/models``."""
        if not self.path.rstrip("/").endswith("/models"):
            self._send_json(404, _error_body(f"no route for GET {self.path}", "not_found"))
            return
        models = [
            {"id": m, "object": "model", "created": 0, "owned_by": "nestor"}
            for m in self.httpd.scripted.model_ids
        ]
        self._send_json(200, {"object": "list", "data": models})

    def do_POST(self) -> None:
        """Serve ``POST /v1/chat/completions`` from the script."""
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send_json(404, _error_body(f"no route for POST {self.path}", "not_found"))
            return
        try:
            request = json.loads(body)
        except ValueError:
            self._send_json(400, _error_body("the request body is not JSON", "invalid_request_error"))
            return
        scripted = self.httpd.scripted
        headers = {name.lower(): value for name, value in self.headers.items()}
        try:
            number, step = scripted._next_step(request, headers)
        except Exception:
            scripted.errors.append(traceback.format_exc())
            self._send_json(
                500, _error_body("a scripted step function raised; see server.errors", "step_error")
            )
            return
        if step is None:
            message = (
                f"scripted OpenAI server: script exhausted at request #{number} ({scripted.step_count} steps)"
            )
            self._send_json(500, _error_body(message, "script_exhausted"))
            return
        if self.httpd.stopping.wait(step.delay):
            return
        if isinstance(step, HTTPErrorReply):
            self._send_error_reply(step)
        elif request.get("stream"):
            include_usage = bool((request.get("stream_options") or {}).get("include_usage"))
            self._send_stream(step, _Completion(step, request, number).chunks(include_usage))
        else:
            self._send_completion(step, _Completion(step, request, number).body())

    def _send_error_reply(self, step: HTTPErrorReply) -> None:
        if isinstance(step.body, str):
            payload, content_type = step.body.encode(), "text/plain; charset=utf-8"
        else:
            body = (
                step.body
                if step.body is not None
                else _error_body(f"scripted HTTP {step.status}", "scripted")
            )
            payload, content_type = json.dumps(body).encode(), "application/json"
        self._send_bytes(step.status, payload, content_type, step.headers)

    def _send_completion(self, step: ServerReply, body: dict[str, Any]) -> None:
        payload = json.dumps(body).encode()
        if step.drop_after_chunks is None:
            self._send_bytes(200, payload, "application/json")
            return
        self._send_head(200, {"Content-Type": "application/json", "Content-Length": str(len(payload))})
        self.wfile.write(payload[: len(payload) // 2])
        self._drop_connection()

    def _send_stream(self, step: ServerReply, chunks: list[dict[str, Any]]) -> None:
        headers = {
            "Content-Type": "text/event-stream",
            "Cache-Control": "no-cache",
            "Transfer-Encoding": "chunked",
        }
        self._send_head(200, headers)
        events = [f"data: {json.dumps(chunk)}\n\n".encode() for chunk in chunks] + [b"data: [DONE]\n\n"]
        for position, event in enumerate(events):
            if position == step.drop_after_chunks:
                self._drop_connection()
                return
            if position and step.chunk_delay and self.httpd.stopping.wait(step.chunk_delay):
                return
            # One HTTP chunk per event: the client sees each event as soon as it is written.
            self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
        self.wfile.write(b"0\r\n\r\n")

    def _drop_connection(self) -> None:
        self.wfile.flush()
        _shutdown(self.connection)
        self.close_connection = True

    def _send_json(self, status: int, body: dict[str, Any]) -> None:
        self._send_bytes(status, json.dumps(body).encode(), "application/json")

    def _send_bytes(
        self, status: int, payload: bytes, content_type: str, headers: dict[str, str] | None = None
    ) -> None:
        self._send_head(
            status, {"Content-Type": content_type, "Content-Length": str(len(payload)), **(headers or {})}
        )
        self.wfile.write(payload)

    def _send_head(self, status: int, headers: dict[str, str]) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()


def _error_body(message: str, error_type: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": error_type, "param": None, "code": error_type}}


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
