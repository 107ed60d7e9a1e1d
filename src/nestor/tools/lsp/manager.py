"""The project's language servers: one per language, started lazily, restarted once, kept in sync.

A server starts in the background on the first file of its language a tool touches, so no turn
waits for it beyond the time a tool is willing to give (``diagnostics_timeout_s`` for an edit).
Documents are synced from disk before every question and after every change nestor's tools make,
so a file changed by a shell command is seen too. pygls is imported only when a server starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nestor.config.sections import LspServerConfig
from nestor.core.errors import ToolError
from nestor.tools.base import ToolResult
from nestor.tools.lsp.documents import Documents, Published, new_problems
from nestor.tools.lsp.results import Diagnostic, shown_problems, uri_to_path
from nestor.tools.lsp.servers import ServerSpec, ServerState, language_id, resolve_servers

if TYPE_CHECKING:
    from nestor.tools.lsp.client import LspClient


@dataclass
class _Server:
    """One server's live state."""

    spec: ServerSpec
    state: ServerState = "available"
    problem: str = ""
    client: LspClient | None = None
    starting: asyncio.Task[LspClient] | None = None
    crashes: int = 0
    documents: Documents = field(default_factory=Documents)


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """A server as ``nestor lsp list`` and the status line show it."""

    name: str
    language: str
    source: str
    command: str
    state: ServerState
    detail: str


class LspManager:
    """The language servers of one project, for every agent of the process.

    Args:
        configured: The ``[lsp]`` tables.
        root: The project root.
        trusted: Whether the folder is trusted; no server runs in one that is not.
        env: The environment whose PATH finds servers.
        log_dir: Where each server's stderr is logged (``<name>.log``).

    """

    def __init__(
        self,
        configured: Mapping[str, LspServerConfig],
        *,
        root: Path,
        trusted: bool,
        env: Mapping[str, str],
        log_dir: Path,
    ) -> None:
        self.root = root
        self.log_dir = log_dir
        self._resolve: Callable[[], list[ServerSpec]] = lambda: resolve_servers(
            configured, trusted=trusted, env=env
        )
        self._specs: list[ServerSpec] | None = None
        self._servers: dict[str, _Server] = {}
        self._clients: set[LspClient] = set()
        self._retiring: set[asyncio.Task[None]] = set()
        self._available: bool | None = None

    def specs(self) -> list[ServerSpec]:
        """Every known and configured server with why it can or cannot run (resolved once)."""
        if self._specs is None:
            self._specs = self._resolve()
        return self._specs

    def available(self) -> bool:
        """True when a server can run for this project (found, enabled, trusted, in its language)."""
        if self._available is None:
            self._available = any(
                spec.state == "available" and spec.applies_to(self.root) for spec in self.specs()
            )
        return self._available

    def spec_for(self, path: Path) -> ServerSpec | None:
        """The server that serves ``path``, if one can run."""
        return next((spec for spec in self.specs() if spec.state == "available" and spec.serves(path)), None)

    def statuses(self) -> list[ServerStatus]:
        """Every server and its state now."""
        shown: list[ServerStatus] = []
        for spec in self.specs():
            server = self._servers.get(spec.name)
            state, detail = (server.state, server.problem) if server else (spec.state, spec.problem)
            if state == "available" and not spec.applies_to(self.root):
                detail = "no file of its language at the project root"
            shown.append(
                ServerStatus(spec.name, spec.language, spec.source, " ".join(spec.command), state, detail)
            )
        return shown

    def starting(self) -> list[str]:
        """The names of the servers starting (or restarting) now."""
        return [name for name, server in self._servers.items() if server.state in ("starting", "restarting")]

    def warm(self, path: Path) -> None:
        """Start the server of ``path`` in the background, if it has one and it is not running."""
        spec = self.spec_for(path)
        if spec is not None:
            self._start(self._server(spec))

    async def after_change(self, path: Path, shown_as: str, visible: Callable[[Path], bool]) -> str:
        """Sync a file nestor changed and return its new errors and warnings as lines ("" for none).

        Waits at most the server's ``diagnostics_timeout_s`` in all, starting it included. A problem
        naming a file ``visible`` withholds is left out.
        """
        spec = self.spec_for(path)
        if spec is None:
            return ""
        server = self._server(spec)
        deadline = time.monotonic() + spec.diagnostics_timeout_s
        before = server.documents.published.get(path.as_uri())
        try:
            client = await self._client(server, spec.diagnostics_timeout_s)
            published = await self._diagnostics(server, client, path, deadline)
        except ToolError as exc:
            return f"({exc}; the diagnostics tool can check {shown_as} later.)"
        if published is None:
            return ""
        new = new_problems(published.diagnostics, before.diagnostics if before else [])
        new = shown_problems(new, visible)
        if not new:
            return ""
        shown = [problem.render(shown_as) for problem in new[: spec.max_diagnostics]]
        hidden = len(new) - len(shown)
        more = [f"… and {hidden} more (the diagnostics tool lists them all)"] if hidden else []
        noun = "problem" if len(new) == 1 else "problems"
        return "\n".join([f"{spec.name} reports {len(new)} new {noun} in {shown_as}:", *shown, *more])

    async def annotate(
        self, result: ToolResult, path: Path, shown_as: str, visible: Callable[[Path], bool]
    ) -> ToolResult:
        """``result`` of a change to ``path`` with the new problems the server found appended.

        ``visible`` tells the files the read rules let the model see: a problem naming another is
        left out.
        """
        report = await self.after_change(path, shown_as, visible)
        if report:
            result.content = f"{result.content}\n\n{report}"
            result.metadata["diagnostics"] = report
        return result

    async def file_diagnostics(self, path: Path) -> list[Diagnostic]:
        """The current diagnostics of ``path``, synced from disk first.

        Raises:
            ToolError: No server serves it, or its server cannot start or answer.

        """
        spec = self._required(path)
        server = self._server(spec)
        client = await self._client(server, _start_wait(spec))
        published = await self._diagnostics(
            server, client, path, time.monotonic() + max(spec.diagnostics_timeout_s, 1.0)
        )
        return published.diagnostics if published else []

    def known_diagnostics(self) -> dict[Path, list[Diagnostic]]:
        """Every diagnostic the running servers have published, by file."""
        found: dict[Path, list[Diagnostic]] = {}
        for server in self._servers.values():
            for uri, published in server.documents.published.items():
                path = uri_to_path(uri)
                if path is not None and published.diagnostics:
                    found.setdefault(path, []).extend(published.diagnostics)
        return found

    async def ask(self, path: Path, method: str, params: Any) -> Any:
        """Sync ``path`` and send its server ``method`` with ``params``; the plain JSON answer.

        Raises:
            ToolError: No server serves it, or it cannot start or answer in time.

        """
        spec = self._required(path)
        server = self._server(spec)
        client = await self._client(server, _start_wait(spec))
        server.documents.sync(client, path)
        return await client.request(method, params, spec.request_timeout_s)

    async def ask_all(self, method: str, params: Any) -> tuple[list[Any], list[str]]:
        """Send ``method`` to every server of this project; the answers and one line per failure."""
        answers: list[Any] = []
        problems: list[str] = []
        for spec in self.specs():
            if spec.state != "available" or not spec.applies_to(self.root):
                continue
            try:
                client = await self._client(self._server(spec), _start_wait(spec))
                answers.append(await client.request(method, params, spec.request_timeout_s))
            except ToolError as exc:
                problems.append(exc.message)
        return answers, problems

    async def check(self) -> list[ServerStatus]:
        """Start every server this project gets, report their states, and shut them down."""
        for spec in self.specs():
            if spec.state == "available" and spec.applies_to(self.root):
                with contextlib.suppress(ToolError):  # its state says what went wrong
                    await self._client(self._server(spec), _start_wait(spec))
        statuses = self.statuses()
        await self.close()
        return statuses

    async def close(self) -> None:
        """Shut every server down (killing those that do not exit within two seconds)."""
        for server in self._servers.values():
            server.state = "stopped"
            if server.starting is not None and not server.starting.done():
                server.starting.cancel()
                with contextlib.suppress(asyncio.CancelledError, ToolError):
                    await server.starting
            server.client = None
        for client in list(self._clients):
            await self._retire(client, 2.0)
        if self._retiring:
            await asyncio.gather(*self._retiring, return_exceptions=True)

    def kill(self) -> None:
        """End every server process at once (no event loop to shut them down in)."""
        for server in self._servers.values():
            server.state = "stopped"
        for client in self._clients:
            client.kill()

    async def _retire(self, client: LspClient, timeout: float) -> None:
        """Shut ``client``'s server down and forget it."""
        self._clients.discard(client)
        await client.close(timeout)

    def _required(self, path: Path) -> ServerSpec:
        spec = self.spec_for(path)
        if spec is None:
            raise ToolError(
                f"no language server for {language_id(path) or 'these'} files here "
                "(`nestor lsp list` shows the servers); use grep and view instead."
            )
        return spec

    def _server(self, spec: ServerSpec) -> _Server:
        server = self._servers.get(spec.name)
        if server is None:
            server = self._servers[spec.name] = _Server(spec)
        return server

    def _start(self, server: _Server) -> asyncio.Task[LspClient] | None:
        if server.state in ("failed", "stopped"):
            return None
        if server.client is None and server.starting is None:
            server.state = "restarting" if server.crashes else "starting"
            server.starting = asyncio.get_running_loop().create_task(
                self._launch(server), name=f"lsp-{server.spec.name}"
            )
            server.starting.add_done_callback(_retrieve)
        return server.starting

    async def _client(self, server: _Server, timeout: float) -> LspClient:
        if server.client is not None:
            return server.client
        task = self._start(server)
        if task is None:
            raise ToolError(server.problem or f"{server.spec.name} is not running")
        try:
            return await asyncio.wait_for(asyncio.shield(task), timeout)
        except TimeoutError:
            raise ToolError(f"{server.spec.name} is still starting") from None

    async def _launch(self, server: _Server) -> LspClient:
        from nestor.tools.lsp.client import LspClient, LspError  # pygls: only now a server is needed

        spec = server.spec
        while True:
            client = LspClient(
                spec,
                self.root,
                self.log_dir / f"{spec.name}.log",
                on_diagnostics=server.documents.publish,
                on_exit=lambda code: self._exited(server, code),
            )
            self._clients.add(client)
            try:
                await client.launch()
            except asyncio.CancelledError:  # the app is closing: close() reaps what is killed here
                client.kill()
                raise
            except LspError as exc:
                exited = client.process is not None and client.process.returncode is not None
                await self._retire(client, 0.5)
                server.crashes += 1
                if exited and server.crashes == 1:
                    server.state = "restarting"
                    continue
                server.state, server.problem, server.starting = "failed", _with_log(exc.message, client), None
                raise ToolError(server.problem) from None
            server.client, server.state, server.problem, server.starting = client, "running", "", None
            return client

    async def _diagnostics(
        self, server: _Server, client: LspClient, path: Path, deadline: float
    ) -> Published | None:
        """Sync ``path`` and wait until ``deadline`` for its diagnostics, while ``client`` serves it."""
        return await server.documents.diagnostics(client, path, deadline, lambda: server.client is client)

    def _exited(self, server: _Server, code: int | None) -> None:
        """A running server's process ended by itself: restart it once, in the background."""
        old, server.client = server.client, None
        log = old.log_path if old else self.log_dir
        if old is not None:  # its process has ended: what is left is its reader and its log file
            retiring = asyncio.get_running_loop().create_task(self._retire(old, 0.5))
            self._retiring.add(retiring)
            retiring.add_done_callback(self._retiring.discard)
        server.documents.wake()  # an edit waiting for its diagnostics need wait no more
        server.documents = Documents()
        server.crashes += 1
        if server.crashes > 1:
            server.state = "failed"
            server.problem = f"{server.spec.name} crashed twice (exit code {code}); see {log}"
            return
        self._start(server)


def _retrieve(task: asyncio.Task[LspClient]) -> None:
    """Mark a start's failure as seen: it is the server's state now, reported when it is used."""
    if not task.cancelled():
        task.exception()


def _start_wait(spec: ServerSpec) -> float:
    # Longer than the start's own time-out, so that its failure (with its cause) is what surfaces.
    return spec.request_timeout_s + 2.0


def _with_log(message: str, client: LspClient) -> str:
    return f"{message}; see {client.log_path}"
