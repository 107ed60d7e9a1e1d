"""``query`` and ``Client``: nestor's agent tree behind the Claude Agent SDK's entry points, in process.

:func:`query` runs one prompt in a new session (or the one ``resume`` names) and yields its messages;
:class:`Client` keeps one conversation for several prompts (``async with Client(options) as
client: await client.query(...)``, then ``receive_response()``), with ``interrupt()``. Unlike
Claude's SDK, no CLI subprocess runs: the :class:`~nestor.app.App` and its
:class:`~nestor.app.conversation.Conversation` are in this process, on this event loop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, AsyncIterator
from typing import TYPE_CHECKING, Any

from nestor.app.permission_modes import ModeId
from nestor.app.root import App
from nestor.core.errors import NestorError
from nestor.sdk.messages import MessageFeed, ToolResults
from nestor.sdk.options import AgentOptions, prepare
from nestor.sdk.permissions import PermissionAnswers
from nestor.sdk.types import Message, ResultMessage, ResultSubtype

if TYPE_CHECKING:
    from nestor.app.conversation import Conversation, Outcome

_MODES: dict[str, ModeId] = {"acceptEdits": "accept_edits"}


class Client:
    """A multi-turn conversation with nestor's main agent and its tree (Claude's ``ClaudeSDKClient``).

    Use it as an async context manager, or call :meth:`connect` and :meth:`disconnect` yourself.
    Prompts sent while one runs wait their turn; each one's messages end with a
    :class:`~nestor.sdk.types.ResultMessage`.

    Args:
        options: How the conversation runs (:class:`~nestor.sdk.options.AgentOptions`).

    """

    def __init__(self, options: AgentOptions | None = None) -> None:
        self.options = options or AgentOptions()
        self._app: App | None = None
        self._conversation: Conversation | None = None
        self._feed: MessageFeed | None = None
        self._answers: PermissionAnswers | None = None
        self._prompts: asyncio.Queue[str] = asyncio.Queue()
        self._runner: asyncio.Task[None] | None = None
        self._unsubscribe: list[Any] = []

    @property
    def session_id(self) -> str:
        """The main agent's session (pass it as ``resume`` to go on with it later).

        Raises:
            NestorError: The client is not connected.

        """
        return self._live()[0].session_id

    async def connect(self, prompt: str | None = None) -> None:
        """Open the project and start (or resume) the main agent; send ``prompt`` if given.

        Raises:
            NestorError: An option is invalid, the session to resume is unknown or in use, or
                the model cannot be built.

        """
        if self._app is not None:
            return
        prepared = prepare(self.options)
        app = App.open(prepared.settings, hooks=self.options.hooks)
        try:
            registry = app.agent_registry(prepared.env)
            for spec in prepared.agents:
                registry.define(spec)
            if prepared.main_spec is not None:
                registry.define(prepared.main_spec)
            session = app.find_session(
                resume=self.options.resume, continue_latest=self.options.continue_conversation
            )
            mode = self.options.permission_mode or "default"
            interactive = self.options.can_use_tool is not None or mode in _MODES
            feeds: list[MessageFeed] = []
            conversation = await app.conversation(
                session=session,
                interactive=interactive,
                env=prepared.env,
                hooks=[ToolResults(lambda: feeds[0])],
                subagent_hooks=lambda: [ToolResults(lambda: feeds[0])],
                agent_type=prepared.main_spec.name if prepared.main_spec is not None else None,
            )
        except BaseException:
            await app.aclose()
            raise
        feed = MessageFeed(conversation.session_id, conversation.model)
        feeds.append(feed)
        answers = PermissionAnswers(conversation, feed, self.options.can_use_tool, _MODES.get(mode, "ask"))
        self._unsubscribe = [app.subscribe(feed.handle), app.subscribe(answers.handle)]
        self._app, self._conversation, self._feed, self._answers = app, conversation, feed, answers
        self._runner = asyncio.get_running_loop().create_task(self._run_prompts(), name="sdk-client")
        if prompt is not None:
            await self.query(prompt)

    async def query(self, prompt: str) -> None:
        """Send ``prompt``; its messages come through :meth:`receive_response` (after earlier prompts')."""
        self._live()
        if not isinstance(prompt, str) or not prompt.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise NestorError("the prompt is empty", hint="send the text of a request")
        self._prompts.put_nowait(prompt)

    async def receive_messages(self) -> AsyncIterator[Message]:
        """Every message, of every prompt, until :meth:`disconnect`."""
        _conversation, feed = self._live()
        while True:
            message = await feed.queue.get()
            if message is not None:
                yield message

    async def receive_response(self) -> AsyncIterator[Message]:
        """The messages of the next prompt, up to and including its :class:`ResultMessage`."""
        async for message in self.receive_messages():
            yield message
            if isinstance(message, ResultMessage):
                return

    async def interrupt(self) -> None:
        """Stop the run going on (its sub-agents too); its :class:`ResultMessage` says ``cancelled``."""
        conversation, _feed = self._live()
        conversation.cancel()

    async def disconnect(self) -> None:
        """Stop any run, let go of the session and close the project."""
        app, self._app = self._app, None
        if app is None:
            return
        if self._conversation is not None:  # the run, its background agents and the title stop first
            self._conversation.stop()
            await self._conversation.wait()
        if self._runner is not None:
            self._runner.cancel()
            await asyncio.gather(self._runner, return_exceptions=True)
        if self._answers is not None:
            self._answers.withdraw_all()
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        await app.aclose()

    async def __aenter__(self) -> Client:
        await self.connect()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.disconnect()

    def _live(self) -> tuple[Conversation, MessageFeed]:
        if self._conversation is None or self._feed is None or self._app is None:
            raise NestorError(
                "the client is not connected", hint="use `async with Client(options) as client:`"
            )
        return self._conversation, self._feed

    async def _run_prompts(self) -> None:
        conversation, feed = self._live()
        while True:
            prompt = await self._prompts.get()
            started = time.monotonic()
            feed.init = self._init_data(conversation)
            try:
                outcome = await conversation.run_to_completion(prompt)
            except Exception as error:  # the program reading the messages must never wait forever
                feed.end()
                feed.queue.put_nowait(_failed(conversation.session_id, started, error))
                continue
            feed.end()
            feed.queue.put_nowait(result_message(outcome, started, self.options.max_budget_usd))

    def _init_data(self, conversation: Conversation) -> dict[str, Any]:
        app = self._app
        agents = [spec.name for spec in app.agent_registry().delegable()] if app is not None else []
        return {
            "session_id": conversation.session_id,
            "cwd": str(app.settings.project_root) if app is not None else "",
            "model": conversation.model,
            "permission_mode": self.options.permission_mode or "default",
            "agents": agents,
        }


def result_message(outcome: Outcome, started: float, max_budget_usd: float | None) -> ResultMessage:
    """The :class:`ResultMessage` of a prompt run to completion."""
    usage = outcome.usage
    subtype: ResultSubtype = "success"
    if outcome.stop_reason == "max_iterations":
        subtype = "error_max_turns"
    elif (
        outcome.stop_reason == "token_budget"
        and max_budget_usd is not None
        and (usage.cost_usd or 0) >= max_budget_usd
    ):
        subtype = "error_max_budget_usd"
    elif outcome.stop_reason != "completed" or outcome.is_error:
        subtype = "error_during_execution"
    return ResultMessage(
        subtype=subtype,
        duration_ms=round((time.monotonic() - started) * 1000),
        is_error=subtype != "success",
        num_turns=outcome.num_turns,
        session_id=outcome.session_id,
        total_cost_usd=usage.cost_usd,
        usage={
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cache_read_input_tokens": usage.cache_read_tokens,
            "cache_creation_input_tokens": usage.cache_write_tokens,
            "reasoning_tokens": usage.reasoning_tokens,
            "requests": usage.requests,
        },
        result=outcome.text,
        stop_reason=outcome.stop_reason,
    )


def _failed(session_id: str, started: float, error: Exception) -> ResultMessage:
    if isinstance(error, NestorError):
        text = error.message if error.hint is None else f"{error.message} ({error.hint})"
    else:
        text = f"{type(error).__name__}: {error}"
    return ResultMessage(
        subtype="error_during_execution",
        duration_ms=round((time.monotonic() - started) * 1000),
        is_error=True,
        num_turns=0,
        session_id=session_id,
        result=text,
        stop_reason="error",
    )


async def query(prompt: str, options: AgentOptions | None = None) -> AsyncGenerator[Message, None]:
    """Run ``prompt`` to completion and yield its messages, the last a :class:`ResultMessage`.

    Each call starts a new session (or goes on with ``options.resume``) and closes it at the end.

    Raises:
        NestorError: An option is invalid, or the model cannot be built (before any message).

    """
    async with Client(options) as client:
        await client.query(prompt)
        async for message in client.receive_response():
            yield message
