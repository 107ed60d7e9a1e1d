"""One language server process, spoken to over stdio with pygls's JSON-RPC client.

Imported only when a server starts: a run that touches no file a server serves never loads pygls.
Every request has a time limit, so a server that never answers costs a bounded wait, and a server
that exits fails its pending requests at once (pygls does that when the process ends).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcMethodNotFound
from pygls.io_ import run_async
from pygls.lsp.client import LanguageClient
from pygls.protocol import LanguageServerProtocol

from nestor.core.errors import ToolError
from nestor.tools.lsp.results import Diagnostic, plain, uri_to_path
from nestor.tools.lsp.servers import ServerSpec

_logger = logging.getLogger(__name__)
# pygls logs a server's malformed messages as errors; without a handler Python would print them
# on the user's terminal. They are the server's business (and its log's).
logging.getLogger("pygls").addHandler(logging.NullHandler())


class LspError(ToolError):
    """A language server could not start or answer; the message says which and why."""


class _RawResults(LanguageServerProtocol):
    """Hands results over as plain JSON: servers answer in shapes lsprotocol's converter rejects.

    pylsp's ``initialize`` result, for one, fails to structure, which would leave the request
    unanswered forever; nestor reads the few fields it needs itself (:mod:`nestor.tools.lsp.results`).
    """

    @functools.lru_cache  # noqa: B019 -- as the method it overrides; the protocol lives as long as its client
    def get_result_type(self, method: str) -> type[Any] | None:
        """No result type: every result stays JSON."""
        del method
        return None


class LspClient(LanguageClient):
    """A running language server: start it, sync documents, ask it things, stop it.

    Args:
        spec: The server.
        root: The project root (its workspace folder and working directory).
        log_path: Where its stderr goes.
        on_diagnostics: Called with a document's URI, version and diagnostics when it publishes them.
        on_exit: Called with the exit code when the process ends.

    """

    def __init__(
        self,
        spec: ServerSpec,
        root: Path,
        log_path: Path,
        *,
        on_diagnostics: Callable[[str, int | None, list[Diagnostic]], None],
        on_exit: Callable[[int | None], None],
    ) -> None:
        super().__init__("nestor", "1", protocol_cls=_RawResults)
        self.spec = spec
        self.root = root
        self.log_path = log_path
        self.capabilities: dict[str, Any] = {}
        self._on_diagnostics = on_diagnostics
        self._on_exit = on_exit
        self._log: IO[bytes] | None = None
        self._closing = False
        self._running = False
        self._register_features()

    @property
    def process(self) -> asyncio.subprocess.Process | None:
        """The server's process once launched."""
        return self._server

    async def launch(self) -> None:
        """Start the process and initialize it, within the spec's request time-out.

        Raises:
            LspError: It cannot be run, exits, or does not answer ``initialize`` in time.

        """
        spec = self.spec
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("ab")
        try:
            process = await asyncio.create_subprocess_exec(
                *spec.command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=self._log,
                cwd=self.root,
                env={**os.environ, **spec.env},
                start_new_session=True,
            )
        except OSError as exc:
            cause = exc.strerror or exc
            raise LspError(f"{spec.name} cannot be started ({spec.command[0]}: {cause})") from None
        assert process.stdin is not None and process.stdout is not None
        self._server = process
        self.protocol.set_writer(process.stdin)
        self._async_tasks.extend(
            [
                asyncio.create_task(
                    run_async(
                        stop_event=self._stop_event,
                        reader=process.stdout,
                        protocol=self.protocol,
                        logger=_logger,
                        error_handler=self.report_server_error,
                    )
                ),
                asyncio.create_task(self._server_exit()),
            ]
        )
        result = await self.request("initialize", self._initialize_params(), spec.request_timeout_s)
        capabilities = result.get("capabilities") if isinstance(result, dict) else None
        self.capabilities = capabilities if isinstance(capabilities, dict) else {}
        self.notify(types.INITIALIZED, types.InitializedParams())
        self._running = True

    async def request(self, method: str, params: Any, timeout: float) -> Any:
        """Send a request and return its result as plain JSON.

        Raises:
            LspError: The server does not support it, fails it, exits, or takes over ``timeout`` s.

        """
        name = self.spec.name
        if self.stopped:
            raise LspError(f"{name} is not running")
        try:
            result = await asyncio.wait_for(self.protocol.send_request_async(method, params), timeout)
        except TimeoutError:
            raise LspError(f"{name} did not answer {method} within {timeout:g} s") from None
        except JsonRpcMethodNotFound:
            raise LspError(f"{name} does not support {method}") from None
        except JsonRpcException as exc:
            raise LspError(f"{name} failed {method}: {exc.message}") from None
        except RuntimeError as exc:  # pygls fails pending requests when the process exits
            raise LspError(f"{name} stopped while answering {method} ({exc}); see {self.log_path}") from None
        return plain(result)

    def notify(self, method: str, params: Any) -> None:
        """Send a notification; a server that has gone away is noticed by its exit, not here."""
        if not self.stopped:
            try:
                self.protocol.notify(method, params)
            except (OSError, RuntimeError):
                _logger.debug("could not notify %s of %s", self.spec.name, method)

    async def close(self, timeout: float = 2.0) -> None:
        """Ask the server to shut down and exit; kill it when it takes longer than ``timeout`` s."""
        killed, self._closing = self._closing, True
        process = self._server
        if process is not None and process.returncode is None and not killed:
            try:
                await self.request("shutdown", None, timeout / 2)
                self.notify(types.EXIT, None)
                await asyncio.wait_for(process.wait(), timeout / 2)
            except (LspError, TimeoutError):
                _kill(process)
        if process is not None:
            await process.wait()
        self._stop_event.set()
        for task in self._async_tasks:
            task.cancel()
        await asyncio.gather(*self._async_tasks, return_exceptions=True)
        if self._log is not None:
            self._log.close()

    def kill(self) -> None:
        """End the process at once (the app is closing without a loop to shut down in)."""
        self._closing = True
        if self._server is not None and self._server.returncode is None:
            _kill(self._server)
        if self._log is not None:
            self._log.close()

    async def server_exit(self, server: asyncio.subprocess.Process) -> None:
        """Tell the owner that the running process ended, unless nestor ended it.

        A process that ends while starting is :meth:`launch`'s to report, as its error.
        """
        if self._running and not self._closing:
            self._on_exit(server.returncode)

    def _initialize_params(self) -> types.InitializeParams:
        uri = self.root.as_uri()
        capabilities = types.ClientCapabilities(
            text_document=types.TextDocumentClientCapabilities(
                synchronization=types.TextDocumentSyncClientCapabilities(did_save=True),
                # Related information names the files a problem quotes: each is judged by the read rules.
                publish_diagnostics=types.PublishDiagnosticsClientCapabilities(
                    version_support=True, related_information=True
                ),
                hover=types.HoverClientCapabilities(
                    content_format=[types.MarkupKind.PlainText, types.MarkupKind.Markdown]
                ),
                document_symbol=types.DocumentSymbolClientCapabilities(
                    hierarchical_document_symbol_support=True
                ),
            ),
            workspace=types.WorkspaceClientCapabilities(workspace_folders=True, configuration=True),
        )
        return types.InitializeParams(
            process_id=os.getpid(),
            root_uri=uri,
            root_path=str(self.root),
            capabilities=capabilities,
            workspace_folders=[types.WorkspaceFolder(uri=uri, name=self.root.name or "project")],
            initialization_options=dict(self.spec.init_options) or None,
            client_info=types.ClientInfo(name="nestor"),
        )

    def _register_features(self) -> None:
        # pygls marks handlers with attributes, which bound methods cannot take: plain functions.
        def published(params: types.PublishDiagnosticsParams) -> None:
            self._published(params)

        def configuration(params: types.ConfigurationParams) -> list[None]:
            return [None for _ in params.items]

        def nothing(params: object) -> None:
            del params

        self.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)(published)
        self.feature(types.WORKSPACE_CONFIGURATION)(configuration)
        self.feature(types.CLIENT_REGISTER_CAPABILITY)(nothing)
        self.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)(nothing)

    def _published(self, params: types.PublishDiagnosticsParams) -> None:
        diagnostics = [
            Diagnostic(
                line=item.range.start.line,
                character=item.range.start.character,
                severity=int(item.severity or 1),
                message=item.message,
                source=item.source or "",
                code=str(item.code) if item.code is not None else "",
                related=tuple(
                    path
                    for info in item.related_information or ()
                    if (path := uri_to_path(info.location.uri)) is not None
                ),
            )
            for item in params.diagnostics
        ]
        self._on_diagnostics(params.uri, params.version, diagnostics)


def _kill(process: asyncio.subprocess.Process) -> None:
    try:
        os.killpg(process.pid, 9)
    except OSError:
        process.kill()
