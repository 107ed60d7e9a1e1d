"""``nestor acp``: nestor as an Agent Client Protocol agent over stdio, for editors.

:class:`NestorAcpAgent` answers the client's requests (``initialize``, the ``session/*`` methods,
``session/prompt`` and ``session/cancel``) and keeps one :class:`~nestor.cli.acp.session.AcpSession`
per open session. The protocol version is negotiated down to the one nestor serves (v1); sessions
can be created, loaded (their whole history replayed), listed, resumed, forked and closed.

Only ``nestor acp`` imports this package: the SDK's generated schema costs most of a second.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import acp
from acp.schema import (
    AcpMcpServer,
    AgentCapabilities,
    AuthenticateResponse,
    ClientCapabilities,
    CloseSessionResponse,
    ForkSessionResponse,
    HttpMcpServer,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    McpServerStdio,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionForkCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SessionResumeCapabilities,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    SseMcpServer,
)

import nestor
from nestor.app.records import SessionStore, open_database
from nestor.cli.acp.client_mcp import with_client_servers
from nestor.cli.acp.modes import MODE_OPTION, MODEL_OPTIONS, ModeId, config_options, is_mode, mode_state
from nestor.cli.acp.session import AcpSession, request_error
from nestor.cli.options import CommonOptions
from nestor.config.sections import BUNDLED_LOCAL_MODEL
from nestor.config.settings import Settings
from nestor.core.errors import ConfigError, NestorError

McpServer = HttpMcpServer | SseMcpServer | AcpMcpServer | McpServerStdio

PROTOCOL_VERSION = 1
"""The ACP version nestor serves; a client asking for a later one is answered with this."""

SettingsFor = Callable[[Path, dict[str, str]], Settings]
"""Loads the settings of a project directory, with model overrides (``{"large": ..., "small": ...}``)."""


class NestorAcpAgent:
    """The ACP agent: one process, any number of sessions, each a nestor main agent and its tree.

    Args:
        settings_for: Loads a project's settings (the command line's flags on top).
        initial_mode: The mode new sessions start in (``yolo`` under ``--yolo``).

    """

    def __init__(self, settings_for: SettingsFor, initial_mode: ModeId = "ask") -> None:
        self._settings_for = settings_for
        self._initial_mode: ModeId = initial_mode
        self._conn: acp.Client | None = None
        self._client = ClientCapabilities()
        self.sessions: dict[str, AcpSession] = {}
        self._models: dict[str, dict[str, str]] = {}  # session -> role overrides chosen in the editor
        self._servers: dict[str, list[McpServer]] = {}  # session -> the MCP servers the client gave

    def on_connect(self, conn: acp.Client) -> None:
        """Keep the connection to the client (for updates, permission questions, files)."""
        self._conn = conn

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        """Negotiate the version down to v1 and say what nestor offers."""
        self._client = client_capabilities or ClientCapabilities()
        _warm_up()
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(image=True, audio=False, embedded_context=True),
                mcp_capabilities=McpCapabilities(http=True, sse=True),
                session_capabilities=SessionCapabilities(
                    list=SessionListCapabilities(),
                    resume=SessionResumeCapabilities(),
                    fork=SessionForkCapabilities(),
                    close=SessionCloseCapabilities(),
                ),
            ),
            auth_methods=[],
            agent_info=Implementation(name="nestor", title="nestor", version=nestor.__version__),
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> AuthenticateResponse:
        """Nothing to authenticate: providers' keys come from the environment and config."""
        return AuthenticateResponse()

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[McpServer] | None = None,
        **kwargs: Any,
    ) -> NewSessionResponse:
        """Start a main agent on a new session in ``cwd``, with the client's MCP servers."""
        opened = await self._open(cwd, mcp_servers, resume=None, models={})
        return NewSessionResponse(
            session_id=opened.session_id,
            modes=mode_state(opened.mode),
            config_options=self._options(opened),
        )

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[McpServer] | None = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> LoadSessionResponse:
        """Resume a stored session and replay its whole history before answering."""
        opened = await self._open(
            cwd, mcp_servers, resume=session_id, models=self._models.get(session_id, {})
        )
        from nestor.cli.acp.history import replay_session

        for update in replay_session(opened):
            opened.outbox.put(update)
        await opened.outbox.flush()
        return LoadSessionResponse(modes=mode_state(opened.mode), config_options=self._options(opened))

    async def resume_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[McpServer] | None = None,
        **kwargs: Any,
    ) -> ResumeSessionResponse:
        """Resume a stored session without replaying it."""
        opened = await self._open(
            cwd, mcp_servers, resume=session_id, models=self._models.get(session_id, {})
        )
        return ResumeSessionResponse(modes=mode_state(opened.mode), config_options=self._options(opened))

    async def fork_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[McpServer] | None = None,
        **kwargs: Any,
    ) -> ForkSessionResponse:
        """A new session whose history is a copy of ``session_id`` 's; the original is left as it is."""
        from nestor.cli.acp.history import fork_stored_session

        settings = self._settings(cwd, mcp_servers, {})
        try:
            fork_id = fork_stored_session(settings, session_id)
        except NestorError as exc:
            raise request_error(exc) from None
        opened = await self._open(cwd, mcp_servers, resume=fork_id, models={})
        return ForkSessionResponse(
            session_id=opened.session_id, modes=mode_state(opened.mode), config_options=self._options(opened)
        )

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        """The main sessions of the project ``cwd``, the most recently updated first."""
        settings = self._settings(cwd or str(Path.cwd()), None, {})
        database = open_database(settings.database_path)
        try:
            stored = SessionStore(database).list(str(settings.project_root), limit=100)
        finally:
            database.close()
        return ListSessionsResponse(
            sessions=[
                SessionInfo(
                    session_id=item.id,
                    cwd=str(item.project_path),
                    title=item.title or None,
                    updated_at=_iso(item.updated_at),
                )
                for item in stored
            ]
        )

    async def close_session(self, session_id: str, **kwargs: Any) -> CloseSessionResponse:
        """Stop the session's agents and release it (it stays stored)."""
        opened = self.sessions.pop(session_id, None)
        if opened is not None:
            await opened.close()
        return CloseSessionResponse()

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> SetSessionModeResponse:
        """Switch how much the session asks (``ask``, ``accept_edits``, ``yolo``)."""
        opened = self._session(session_id)
        if not is_mode(mode_id):
            raise acp.RequestError.invalid_params({"modeId": f"no mode {mode_id!r}"})
        opened.mode = mode_id  # type: ignore[assignment]
        return SetSessionModeResponse()

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse:
        """Set the mode, or a role's model (the main agent then goes on with it, its history kept)."""
        opened = self._session(session_id)
        if config_id == MODE_OPTION and isinstance(value, str) and is_mode(value):
            opened.mode = value  # type: ignore[assignment]
        elif config_id in MODEL_OPTIONS and isinstance(value, str) and value:
            if opened.conversation.busy:
                raise acp.RequestError.invalid_request(
                    {"message": "wait for the prompt to end to change models"}
                )
            models = {**self._models.get(session_id, {}), MODEL_OPTIONS[config_id]: value}
            await opened.close()
            self.sessions.pop(session_id, None)
            opened = await self._open(
                str(opened.project_root),
                self._servers.get(session_id),
                resume=session_id,
                models=models,
                mode=opened.mode,
            )
        else:
            raise acp.RequestError.invalid_params(
                {"configId": f"no option {config_id!r} with value {value!r}"}
            )
        return SetSessionConfigOptionResponse(config_options=self._options(opened))

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        """Run a prompt in the session; the updates stream while it runs."""
        opened = self._session(session_id)
        try:
            return await opened.prompt(prompt)
        except NestorError as exc:
            raise request_error(exc) from None

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        """Stop the session's prompt (a notification: the prompt answers ``cancelled``)."""
        opened = self.sessions.get(session_id)
        if opened is not None:
            opened.cancel()

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """``_nestor/cancel_task`` {sessionId, toolCallId}: stop the sub-agent of one ``task`` call."""
        if method != "nestor/cancel_task":
            raise acp.RequestError.method_not_found(f"_{method}")
        opened = self._session(str(params.get("sessionId", "")))
        return {"cancelled": opened.cancel_task(str(params.get("toolCallId", "")))}

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        """Extension notifications are ignored."""

    async def close(self) -> None:
        """Close every session (the client went away)."""
        for session_id in list(self.sessions):
            await self.sessions.pop(session_id).close()

    async def _open(
        self,
        cwd: str,
        mcp_servers: list[McpServer] | None,
        *,
        resume: str | None,
        models: dict[str, str],
        mode: ModeId | None = None,
    ) -> AcpSession:
        if self._conn is None:
            raise acp.RequestError.invalid_request({"message": "not connected"})
        if resume is not None and resume in self.sessions:
            await self.sessions.pop(resume).close()  # loaded again: the editor starts over
        settings = self._settings(cwd, mcp_servers, models)
        try:
            opened = await AcpSession.open(
                self._conn,
                settings,
                mode=mode or self._initial_mode,
                resume=resume,
                fs=self._client.fs,
            )
        except NestorError as exc:
            raise request_error(exc) from None
        self.sessions[opened.session_id] = opened
        if models:
            self._models[opened.session_id] = models
        if mcp_servers:
            self._servers[opened.session_id] = mcp_servers
        return opened

    def _settings(self, cwd: str, mcp_servers: list[Any] | None, models: dict[str, str]) -> Settings:
        directory = Path(cwd)
        if not directory.is_absolute() or not directory.is_dir():
            raise acp.RequestError.invalid_params({"cwd": f"{cwd} is not an absolute path to a directory"})
        try:
            return with_client_servers(self._settings_for(directory, models), mcp_servers or [])
        except NestorError as exc:
            raise request_error(exc) from None

    def _session(self, session_id: str) -> AcpSession:
        opened = self.sessions.get(session_id)
        if opened is None:
            raise acp.RequestError.invalid_params({"sessionId": f"no open session {session_id!r}"})
        return opened

    def _options(self, opened: AcpSession) -> list[Any]:
        settings = opened.app.settings
        models: dict[str, str | None] = {}
        for role in ("large", "small"):
            try:
                models[role] = settings.model_for(role).model
            except ConfigError:
                models[role] = None
        choices = [model for model in models.values() if model is not None] + [BUNDLED_LOCAL_MODEL]
        return list(config_options(opened.mode, models, choices))


def _warm_up() -> None:
    """Import the runtime in a thread while the editor gets the answer, so ``session/new`` does not wait.

    ``initialize`` comes first and must be quick; the runtime (models, tools, the agent loop) is
    needed only by the first session, which usually follows within a second.
    """

    def load() -> None:
        import nestor.app.root  # noqa: F401 - the import is the work

    threading.Thread(target=load, name="nestor-warm-up", daemon=True).start()


def _iso(timestamp: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(timestamp, tz=UTC).isoformat()


def run_acp(options: CommonOptions) -> int:
    """``nestor acp``: serve until the editor closes the connection; returns the exit code."""
    import asyncio

    def settings_for(directory: Path, models: dict[str, str]) -> Settings:
        # --yolo is the yolo mode, not the policy's: the editor can switch back to asking.
        return replace(
            options,
            directory=directory,
            model=models.get("large", options.model),
            small_model=models.get("small", options.small_model),
            yolo=False,
        ).load_settings()

    asyncio.run(serve(settings_for, initial_mode="yolo" if options.yolo else "ask"))
    return 0


async def serve(settings_for: SettingsFor, *, initial_mode: ModeId = "ask") -> None:
    """Serve ACP over stdin and stdout until the client closes the connection."""
    agent = NestorAcpAgent(settings_for, initial_mode)
    try:
        await acp.run_agent(agent, use_unstable_protocol=True)
    finally:
        await agent.close()
