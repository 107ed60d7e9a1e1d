"""The test MCP servers: how nestor's config reaches them (stdio, and streamable HTTP on loopback)."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

from nestor.config.sections import McpServerConfig

DEMO_SERVER = Path(__file__).with_name("demo_server.py")


def stdio_config(*args: str, timeout: float = 30.0, tool_timeout: float = 600.0) -> McpServerConfig:
    """The demo server over stdio, run with this interpreter."""
    return McpServerConfig(
        command=sys.executable, args=(str(DEMO_SERVER), *args), timeout=timeout, tool_timeout=tool_timeout
    )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def http_demo_server(transport: str = "http") -> Iterator[str]:
    """The demo server over streamable HTTP (or ``sse``) on 127.0.0.1; yields its URL."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(DEMO_SERVER), f"--{transport}", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/{'sse' if transport == 'sse' else 'mcp'}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/", timeout=1)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("the HTTP demo server did not start") from None
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


@dataclass
class Recorded:
    """What reached a :func:`recording_http_server`: each request's path and headers."""

    url: str
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list[tuple[str, dict[str, str]]])

    def text(self) -> str:
        """Everything received, as one string to search."""
        return repr(self.requests)


@contextmanager
def recording_http_server() -> Iterator[Recorded]:
    """An HTTP server on 127.0.0.1 that records what it is sent and answers 500: an MCP client fails on it."""
    port = free_port()
    recorded = Recorded(f"http://127.0.0.1:{port}")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            recorded.requests.append((self.path, dict(self.headers.items())))
            self.send_response(500)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_DELETE = do_POST

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield recorded
    finally:
        server.shutdown()
        server.server_close()
