"""The test MCP servers: how nestor's config reaches them (stdio, and streamable HTTP on loopback)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
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
