"""One MCP server: started on first use, within time-outs, restarted after a crash.

The SDK's client lives in a task of its own (its transports hold anyio task groups, which must be
left by the task that entered them); calls from any agent go through it. A server's stderr goes
to its log file, ``<data dir>/mcp/logs/<name>.log``, never to the terminal. A call that fails
because the server died or hung stops the connection, and the next call starts the server again.
``notifications/tools/list_changed`` marks the tool list stale: the next listing asks again.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TextIO, TypeAlias

import anyio
from mcp import Client, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT, CallToolResult, Tool, ToolListChangedNotification

from nestor.config.sections import McpServerConfig
from nestor.core.errors import ToolError

Status: TypeAlias = Literal["stopped", "running", "failed"]
_STOP_GRACE_S = 8.0  # the SDK's stdio shutdown: stdin closed, 2 s, SIGTERM, 2 s, SIGKILL, 2 s


class McpServerError(ToolError):
    """An MCP server could not be started or reached; the message says which and what to do."""


class McpConnection:
    """The client side of one configured MCP server.

    Args:
        name: The server's name in the config.
        config: How to reach it.
        log_dir: Where its stderr log goes.
        project_root: Its working directory when the config gives none.

    """

    def __init__(self, name: str, config: McpServerConfig, *, log_dir: Path, project_root: Path) -> None:
        self.name = name
        self.config = config
        self.log_path = log_dir / f"{name}.log"
        self._project_root = project_root
        self._client: Client | None = None
        self._runner: asyncio.Task[None] | None = None
        self._closing = asyncio.Event()
        self._lock = asyncio.Lock()
        self._tools: list[Tool] | None = None
        self.status: Status = "stopped"
        self.error = ""

    async def list_tools(self) -> list[Tool]:
        """The server's tools (listed once, again after ``tools/list_changed``); starts it if needed.

        Raises:
            McpServerError: It cannot be started or does not answer within its time-out.

        """
        client = await self._connected()
        if self._tools is None:
            tools: list[Tool] = []
            cursor: str | None = None
            try:
                async with asyncio.timeout(self.config.timeout):
                    for _ in range(100):  # a server that pages forever cannot hang a start
                        page = await client.list_tools(cursor=cursor, cache_mode="refresh")
                        tools.extend(page.tools)
                        cursor = page.next_cursor
                        if cursor is None:
                            break
            except Exception as exc:
                await self._fail(f"listing its tools failed: {_describe(exc)}")
                raise self._error() from None
            self._tools = tools
        return self._tools

    async def call(self, tool: str, arguments: Mapping[str, Any]) -> CallToolResult:
        """Call ``tool``; a crash or hang is a :class:`McpServerError` and the next call restarts it."""
        client = await self._connected()
        timeout = self.config.tool_timeout
        try:
            async with asyncio.timeout(timeout):
                return await client.call_tool(tool, dict(arguments), read_timeout_seconds=timeout)
        except TimeoutError:
            await self._fail(f"the call to {tool} did not finish within {timeout:g} s")
        except MCPError as exc:
            if exc.code not in (CONNECTION_CLOSED, REQUEST_TIMEOUT):  # the server answered: no crash
                raise ToolError(f"MCP server {self.name!r}: {tool}: {exc}") from None
            await self._fail(f"the call to {tool} failed: {_describe(exc)}")
        except Exception as exc:
            await self._fail(f"the call to {tool} failed: {_describe(exc)}")
        raise McpServerError(f"{self._error()}; it is started again on the next call")

    async def close(self) -> None:
        """Stop the server (its process, for stdio); the next use starts it again."""
        runner, self._runner = self._runner, None
        self._client, self._tools = None, None
        if self.status == "running":
            self.status = "stopped"
        if runner is None:
            return
        self._closing.set()
        done, _ = await asyncio.wait({runner}, timeout=_STOP_GRACE_S)
        if not done:
            runner.cancel()
            with contextlib.suppress(BaseException):
                await runner

    async def _connected(self) -> Client:
        async with self._lock:
            if self._client is not None and self._runner is not None and not self._runner.done():
                return self._client
            await self.close()
            self._closing = asyncio.Event()
            ready: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
            self._runner = asyncio.create_task(self._run(ready), name=f"mcp server {self.name}")
            try:
                async with asyncio.timeout(self.config.timeout):
                    client = await asyncio.shield(ready)
            except TimeoutError:
                await self._fail(f"it did not start within {self.config.timeout:g} s")
                raise self._error() from None
            except Exception as exc:
                await self._fail(f"it could not start: {_describe(exc)}")
                raise self._error() from None
            self._client, self.status, self.error = client, "running", ""
            return client

    async def _run(self, ready: asyncio.Future[Client]) -> None:
        log = self._open_log()
        try:
            async with self._make_client(log) as client, anyio.create_task_group() as group:
                if not ready.done():
                    ready.set_result(client)
                group.start_soon(self._listen, client)
                await self._closing.wait()
                group.cancel_scope.cancel()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(str(exc)))
            if not isinstance(exc, Exception):
                raise
        finally:
            if log is not None:
                log.close()
            if not ready.done():
                ready.set_exception(RuntimeError("the connection closed before it was ready"))

    async def _listen(self, client: Client) -> None:
        """Servers of the 2026 protocol say their tools changed on a ``subscriptions/listen`` stream."""
        with contextlib.suppress(Exception):  # older servers notify instead (see _make_client)
            async with client.listen(tools_list_changed=True) as changes:
                async for _change in changes:
                    self._tools = None

    def _make_client(self, log: TextIO | None) -> Client:
        config = self.config
        kind = config.kind

        async def on_message(message: Any) -> None:
            if isinstance(getattr(message, "root", message), ToolListChangedNotification):
                self._tools = None

        if kind == "stdio":
            assert config.command is not None and log is not None
            params = StdioServerParameters(
                command=config.command,
                args=list(config.args),
                env=dict(config.env) or None,
                cwd=config.cwd or self._project_root,
            )
            return Client(stdio_client(params, errlog=log), message_handler=on_message)
        assert config.url is not None
        # Whitespace around a value is not part of it (RFC 9110), and httpx refuses it: a token
        # variable left empty must not turn "Bearer ${TOKEN}" into a server that cannot start.
        headers = {name: value.strip() for name, value in config.headers.items()}
        if kind == "sse":
            from mcp.client.sse import sse_client

            transport: Any = sse_client(config.url, headers=headers, timeout=config.timeout)
            return Client(transport, message_handler=on_message, mode="legacy")
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        http = create_mcp_http_client(headers=headers or None)
        return Client(streamable_http_client(config.url, http_client=http), message_handler=on_message)

    def _open_log(self) -> TextIO | None:
        if self.config.kind != "stdio":
            return None
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log: TextIO = self.log_path.open("a", encoding="utf-8")  # pyright: ignore[reportAssignmentType]
        log.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} starting {self.config.command}\n")
        log.flush()
        return log

    async def _fail(self, reason: str) -> None:
        await self.close()
        self.status = "failed"
        self.error = reason

    def _error(self) -> McpServerError:
        where = f"; its log is {self.log_path}" if self.config.kind == "stdio" else ""
        return McpServerError(f"MCP server {self.name!r}: {self.error}{where}")


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        inner: list[BaseException] = list(exc.exceptions)  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        if inner:
            return _describe(inner[0])
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
