"""The plumbing nestor's scripted HTTP servers share: bind loopback, serve, record, reply, shut down.

A :class:`ScriptedServer` subclass names its routes and renders its replies in its own protocol
(:class:`JSONReply` or :class:`EventStream`); everything else lives here: the daemon thread, request
recording, the script's cursor, step functions, delays, error replies, chunked server-sent events,
dropped connections, and a stop that ends every kept-alive connection. The step types every server
uses (:class:`HTTPErrorReply`, :class:`ServerToolCall`) live here too; the public server modules
re-export them.

Only the standard library is used, so a server started with ``python -m`` starts fast.
"""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar, Generic, Protocol, Self, TypeVar, cast
from urllib.parse import urlsplit


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

    def arguments_object(self) -> Any:
        """Return the arguments as a JSON value: raw text parsed when it parses, else the text as it is."""
        if isinstance(self.arguments, str):
            with contextlib.suppress(ValueError):
                return json.loads(self.arguments)
        return self.arguments


@dataclass(frozen=True)
class HTTPErrorReply:
    """An error reply, such as a 429 with ``Retry-After`` or a 503.

    Attributes:
        status: The HTTP status code.
        body: A JSON value sent as JSON, or a string sent as plain text; ``None`` sends the server's own
            error shape: OpenAI's ``{"error": {...}}``, or Anthropic's ``{"type": "error", "error": {...}}``
            with the error type of the status.
        headers: Extra response headers, e.g. ``{"Retry-After": "1"}``.
        delay: Seconds to wait before responding.

    """

    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict[str, str])
    delay: float = 0.0


def split_evenly(text: str, pieces: int) -> list[str]:
    """Split ``text`` into at most ``pieces`` non-empty consecutive parts of near-equal length."""
    if not text:
        return []
    pieces = max(1, min(pieces, len(text)))
    size, extra = divmod(len(text), pieces)
    bounds = [index * size + min(index, extra) for index in range(pieces + 1)]
    return [text[bounds[index] : bounds[index + 1]] for index in range(pieces)]


class Reply(Protocol):
    """What the shared handler needs of a successful scripted reply."""

    @property
    def delay(self) -> float:
        """Seconds to wait before responding."""
        ...


ReplyT = TypeVar("ReplyT", bound=Reply)


@dataclass(frozen=True)
class JSONReply:
    """A rendered non-streamed reply.

    Attributes:
        body: The JSON body.
        truncate: Send only the first half of the body, then drop the connection.

    """

    body: dict[str, Any]
    truncate: bool = False


@dataclass(frozen=True)
class EventStream:
    """A rendered streamed reply: server-sent events, each written as one HTTP chunk.

    Attributes:
        events: The encoded events, in order.
        drop_at: Drop the connection before sending the event at this index.
        stall_at: Before sending the event at this index, wait until the server stops.
        chunk_delay: Seconds to wait between events.

    """

    events: list[bytes]
    drop_at: int | None = None
    stall_at: int | None = None
    chunk_delay: float = 0.0


class ScriptedServer(Generic[ReplyT]):
    """A server on 127.0.0.1 answering its routes from one script; subclasses speak a protocol.

    Subclasses set :attr:`label`, :attr:`post_routes` and :attr:`base_path`, and implement
    :meth:`_render`, :meth:`_error_body` and :meth:`_get`, and :meth:`_answer` for a POST answered off
    the script.

    Attributes:
        requests: Every request body to the scripted route, in order (unscripted ones included).
        request_headers: The headers of each request in :attr:`requests` (lower-cased names).
        request_times: When each request in :attr:`requests` arrived (``time.time()``, taken before
            its body is read), so a benchmark can time a client from its start to its first request.
        unscripted_requests: Bodies of requests that came after the script ran out (answered with 500).
        errors: Tracebacks of step functions that raised (answered with 500), and of handler failures.
        model_ids: The ids ``GET /v1/models`` lists.

    """

    label: ClassVar[str] = "scripted server"
    post_routes: ClassVar[tuple[str, ...]] = ("/",)
    """The scripted routes: a POST whose path ends in one of them gets the script's next step."""
    base_path: ClassVar[str] = ""

    def __init__(
        self,
        steps: Iterable[ReplyT | HTTPErrorReply | Callable[[dict[str, Any]], ReplyT | HTTPErrorReply]],
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        model_ids: Sequence[str] = ("scripted",),
        requests_file: Path | None = None,
    ) -> None:
        """Prepare a server; :meth:`start` (or ``with``) binds and serves it.

        Args:
            steps: The script, one step per request to the scripted route.
            host: The address to bind: keep it on loopback.
            port: The port to bind; 0 picks a free one.
            model_ids: The ids ``GET /v1/models`` lists.
            requests_file: If set, each request body is appended to it as one JSON line.

        """
        self.requests: list[dict[str, Any]] = []
        self.request_headers: list[dict[str, str]] = []
        self.request_times: list[float] = []
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
        """The URL to give the protocol's client."""
        return f"http://{self._address[0]}:{self.port}{self.base_path}"

    @property
    def step_count(self) -> int:
        """How many steps the script holds."""
        return len(self._steps)

    @property
    def remaining(self) -> int:
        """How many scripted steps are left."""
        with self._lock:
            return len(self._steps) - self._position

    def start(self) -> Self:
        """Bind the socket and serve from a daemon thread."""
        self._httpd = _HTTPServer(self._address, self)
        # A short poll interval keeps `stop` quick: `shutdown` waits for the serving loop's next poll.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.02,), name=self.label, daemon=True
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

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _next_step(
        self, request: dict[str, Any], headers: dict[str, str], arrived: float
    ) -> tuple[int, ReplyT | HTTPErrorReply | None]:
        """Record ``request`` (which arrived at ``arrived``) and return its number and step.

        The step is ``None`` when the script is exhausted.
        """
        with self._lock:
            self.requests.append(request)
            self.request_headers.append(headers)
            self.request_times.append(arrived)
            number = len(self.requests)
            if self._requests_file is not None:
                with self._requests_file.open("a", encoding="utf-8") as log:
                    log.write(json.dumps(request) + "\n")
            if self._position >= len(self._steps):
                self.unscripted_requests.append(request)
                return number, None
            source = self._steps[self._position]
            self._position += 1
        # Steps are frozen dataclasses, never callable; anything callable is a step function.
        return number, source(request) if callable(source) else source

    def _render(
        self, step: ReplyT, request: dict[str, Any], number: int, route: str
    ) -> JSONReply | EventStream:
        """Return the wire form of ``step`` answering ``request``, the ``number``-th request, on ``route``."""
        raise NotImplementedError

    def _error_body(self, status: int, message: str, error_type: str) -> dict[str, Any]:
        """Return the protocol's error body for an error this server reports itself."""
        raise NotImplementedError

    def _get(self, path: str) -> tuple[int, dict[str, Any]] | None:
        """Answer ``GET path`` (query removed), or ``None`` for no such route."""
        return None

    def _answer(self, route: str, request: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
        """Answer a POST off the script (Gemini's ``countTokens``), or ``None`` to go on to the routes."""
        return None


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], scripted: ScriptedServer[Any]) -> None:
        self.scripted = scripted
        self.open_connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        self.stopping = threading.Event()
        super().__init__(address, _Handler)

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

    @property
    def route(self) -> str:
        """The request path without its query (Anthropic's SDK adds ``?beta=true``) or final slash."""
        return urlsplit(self.path).path.rstrip("/")

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
        """Serve the server's GET routes (``/v1/models``)."""
        answer = self.httpd.scripted._get(self.route)
        if answer is None:
            self._send_error(404, f"no route for GET {self.path}", "not_found")
            return
        self._send_json(*answer)

    def do_POST(self) -> None:
        """Serve the scripted route from the script."""
        arrived = time.time()
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        scripted = self.httpd.scripted
        request: Any = None
        try:
            request, parsed = json.loads(body), True
        except ValueError:
            parsed = False
        answer = scripted._answer(self.route, request) if isinstance(request, dict) else None
        if answer is not None:
            self._send_json(*answer)
            return
        if not self.route.endswith(scripted.post_routes):
            self._send_error(404, f"no route for POST {self.path}", "not_found")
            return
        if not parsed:
            self._send_error(400, "the request body is not JSON", "invalid_request_error")
            return
        headers = {name.lower(): value for name, value in self.headers.items()}
        try:
            number, step = scripted._next_step(request, headers, arrived)
        except Exception:
            scripted.errors.append(traceback.format_exc())
            self._send_error(500, "a scripted step function raised; see server.errors", "step_error")
            return
        if step is None:
            message = f"{scripted.label}: script exhausted at request #{number} ({scripted.step_count} steps)"
            self._send_error(500, message, "script_exhausted")
            return
        if self.httpd.stopping.wait(step.delay):
            return
        if isinstance(step, HTTPErrorReply):
            self._send_error_reply(step)
            return
        rendered = scripted._render(step, request, number, self.route)
        if isinstance(rendered, EventStream):
            self._send_stream(rendered)
        else:
            self._send_body(rendered)

    def _send_error_reply(self, step: HTTPErrorReply) -> None:
        if isinstance(step.body, str):
            payload, content_type = step.body.encode(), "text/plain; charset=utf-8"
        else:
            body = (
                step.body
                if step.body is not None
                else self.httpd.scripted._error_body(step.status, f"scripted HTTP {step.status}", "scripted")
            )
            payload, content_type = json.dumps(body).encode(), "application/json"
        self._send_bytes(step.status, payload, content_type, step.headers)

    def _send_body(self, reply: JSONReply) -> None:
        payload = json.dumps(reply.body).encode()
        if not reply.truncate:
            self._send_bytes(200, payload, "application/json")
            return
        self._send_head(200, {"Content-Type": "application/json", "Content-Length": str(len(payload))})
        self.wfile.write(payload[: len(payload) // 2])
        self._drop_connection()

    def _send_stream(self, stream: EventStream) -> None:
        headers = {
            "Content-Type": "text/event-stream",
            "Cache-Control": "no-cache",
            "Transfer-Encoding": "chunked",
        }
        self._send_head(200, headers)
        for position, event in enumerate(stream.events):
            if position == stream.drop_at:
                self._drop_connection()
                return
            if position == stream.stall_at:
                self.wfile.flush()
                self.httpd.stopping.wait()
                return
            if position and stream.chunk_delay and self.httpd.stopping.wait(stream.chunk_delay):
                return
            # One HTTP chunk per event: the client sees each event as soon as it is written.
            self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
        self.wfile.write(b"0\r\n\r\n")

    def _drop_connection(self) -> None:
        self.wfile.flush()
        _shutdown(self.connection)
        self.close_connection = True

    def _send_error(self, status: int, message: str, error_type: str) -> None:
        self._send_json(status, self.httpd.scripted._error_body(status, message, error_type))

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
