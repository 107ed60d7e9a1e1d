"""One ACP session: a nestor main agent and its tree, driven by an editor.

Each session has an :class:`~nestor.app.App` of its own (its project's settings, the client's MCP
servers added, the editor's files where it offers them) and the :class:`~nestor.app.Conversation`
of its main agent; the bus's events become updates (:mod:`~nestor.cli.acp.updates`) sent in order
by the session's :class:`~nestor.cli.acp.outbox.Outbox`, and permission questions go to the editor
(:mod:`~nestor.cli.acp.permissions`). Before its first prompt a session asks the editor, yes or no,
about each of a trusted project's hooks not approved (an untrusted folder's are never read): a yes
is stored and the hook runs from then on, a hook declined is skipped and named in the log.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import acp
from acp.schema import Cost, FileSystemCapabilities, PromptResponse, SessionInfoUpdate, UsageUpdate
from acp.schema import Usage as AcpUsage

from nestor.cli.acp.editor_files import client_files
from nestor.cli.acp.modes import ModeId
from nestor.cli.acp.outbox import Outbox
from nestor.cli.acp.permissions import PermissionBridge
from nestor.cli.acp.prompt import commands_update, prompt_content, slash_command
from nestor.cli.acp.updates import UpdateTranslator
from nestor.cli.formatting import counted, usage_summary
from nestor.config.settings import Settings
from nestor.core.errors import NestorError
from nestor.core.events import AgentFinished, Event, RequestFinished, SessionTitled
from nestor.core.usage import Usage

if TYPE_CHECKING:
    from nestor.app import App, Conversation, Session

_STOP_REASONS: dict[str, Any] = {
    "completed": "end_turn",
    "max_iterations": "max_turn_requests",
    "token_budget": "max_tokens",
    "cancelled": "cancelled",
    "refusal": "refusal",
    # The agent said why in its last message: the turn ended, not the protocol.
    "timeout": "end_turn",
    "loop": "end_turn",
    "hook": "end_turn",
}


def notice(message: str) -> None:
    """A notice for the user (ignored settings, model choice): the editor's log of the agent."""
    print(f"nestor: {message}", file=sys.stderr, flush=True)


def request_error(exc: NestorError) -> acp.RequestError:
    """A nestor error as the JSON-RPC error an editor shows: the cause, and what to do."""
    message = exc.message + (f" ({exc.hint})" if exc.hint else "")
    return acp.RequestError(-32603, message, {"message": exc.message, "hint": exc.hint})


class AcpSession:
    """A conversation an editor drives: prompts, cancel, mode, the updates of its whole tree.

    Use :meth:`open`; :meth:`close` ends it.
    """

    def __init__(self, conn: acp.Client, app: App, conversation: Conversation, mode: ModeId) -> None:
        self.conn = conn
        self.app = app
        self.conversation = conversation
        self.mode: ModeId = mode
        self.session_id = conversation.session_id
        self.project_root = Path(app.settings.project_root)
        self.translator = UpdateTranslator(self.session_id, self.project_root, conversation.is_background)
        self.outbox = Outbox(self._send, on_error=lambda exc: notice(f"an update was not delivered: {exc}"))
        self.permissions = PermissionBridge(
            conn, self.session_id, conversation, self.translator, self.outbox, lambda: self.mode
        )
        self._cancelled = False
        self._hooks_asked = False
        self._asking: asyncio.Task[None] | None = None
        self._unsubscribe = app.subscribe(self._on_event)

    @classmethod
    async def open(
        cls,
        conn: acp.Client,
        settings: Settings,
        *,
        mode: ModeId,
        resume: str | None = None,
        fs: FileSystemCapabilities | None = None,
    ) -> AcpSession:
        """Start the main agent on a new session, or on the stored session ``resume``.

        ``fs`` is what the client offers of its files: the file tools then go through the editor.

        Raises:
            NestorError: No model can be built, the session is unknown or another process runs it.

        """
        from nestor.app import App  # the runtime: loaded by the first session, not by `initialize`

        files = client_files(conn, fs)
        app = App.open(settings, notify=notice, editor_files=files, asks_hooks=True)
        try:
            session = app.find_session(resume=resume, continue_latest=False) if resume else None
            if session is not None and session.parent_id is not None:
                raise NestorError(f"{session.id} is a sub-agent's session", hint="load its main session")
            conversation = await app.conversation(session=session, interactive=True)
            if files is not None:
                files.session_id = conversation.session_id
        except BaseException:
            await app.aclose()
            raise
        opened = cls(conn, app, conversation, mode)
        opened.outbox.put(commands_update())
        return opened

    @property
    def stored(self) -> Session:
        """The session as stored now."""
        return self.conversation.session()

    async def prompt(self, blocks: list[Any]) -> PromptResponse:
        """Run one prompt to completion (background agents included) and say why it ended."""
        prompt = prompt_content(blocks)
        if not self._hooks_asked:
            self._cancelled = False
            if not await self._ask_hook_approvals():
                return PromptResponse(stop_reason="cancelled")
        command = slash_command(prompt) if isinstance(prompt, str) else None
        if command is not None:
            await self._command(*command)
            return PromptResponse(stop_reason="end_turn")
        if self.conversation.busy:
            raise acp.RequestError.invalid_request({"message": "a prompt is already running in this session"})
        self._cancelled = False
        self.translator.new_prompt()
        try:
            outcome = await self.conversation.run_to_completion(prompt)
        finally:
            self.outbox.put(self.usage_update(), key="usage")
            await self.outbox.flush()
        if self._cancelled or outcome.stop_reason == "cancelled":
            return PromptResponse(stop_reason="cancelled")
        if outcome.stop_reason == "error" or (outcome.is_error and outcome.stop_reason not in _STOP_REASONS):
            raise acp.RequestError(-32603, outcome.text, {"message": outcome.text, "hint": outcome.hint})
        return PromptResponse(
            stop_reason=_STOP_REASONS.get(outcome.stop_reason, "end_turn"),
            usage=acp_usage(outcome.usage),
            field_meta={"nestor": {"usage": outcome.usage.to_dict(), "numTurns": outcome.num_turns}},
        )

    async def _ask_hook_approvals(self) -> bool:
        """The editor approves the project's hooks not approved, or they are skipped; False: cancelled."""
        self._asking = asyncio.ensure_future(self.app.ask_hook_approvals(self.conversation.ask_yes_no))
        try:
            await self._asking
        except asyncio.CancelledError:
            if not self._cancelled:
                raise
            return False  # asked again at the next prompt
        finally:
            self._asking = None
        self._hooks_asked = True
        return True

    def cancel(self) -> None:
        """Stop the prompt running: the main agent's run, its sub-agents, the background ones."""
        self._cancelled = True
        if self._asking is not None:
            self._asking.cancel()
        self.conversation.cancel()
        for agent_id, agent in list(self.translator.agents.items()):
            if agent.background:
                self.conversation.cancel_agent(agent_id)
        self.permissions.withdraw_all()

    def cancel_task(self, tool_call_id: str) -> bool:
        """Stop the sub-agent a ``task`` call started, and its descendants; False when none runs."""
        for agent_id, agent in self.translator.agents.items():
            if agent.parent_call == tool_call_id:
                return self.conversation.cancel_agent(agent_id)
        return False

    async def close(self) -> None:
        """Stop everything this session runs and release its stores and servers."""
        self._unsubscribe()
        self.conversation.stop()
        # The stopped run's own end (cancelled, or an error) is not this call's to raise.
        waiter = asyncio.ensure_future(self.conversation.wait())
        await asyncio.wait([waiter])
        if not waiter.cancelled():
            waiter.exception()  # retrieved: it was expected
        self.permissions.withdraw_all()
        await self.outbox.close()
        self.conversation.close()
        await self.app.aclose()

    def usage_update(self) -> UsageUpdate:
        """What the context holds, and what the whole tree spent (``_meta.nestor.usage``)."""
        used, window = self.conversation.context_use()
        return usage_update(used, window, self.stored.usage)

    async def _send(self, update: Any) -> None:
        await self.conn.session_update(session_id=self.session_id, update=update)

    def _on_event(self, event: Event) -> None:
        self.permissions.handle(event)
        for update, key in self.translator.handle(event):
            self.outbox.put(update, key)
        main = event.agent_id == self.session_id
        if (isinstance(event, RequestFinished) and main) or (isinstance(event, AgentFinished) and not main):
            self.outbox.put(self.usage_update(), key="usage")
        elif isinstance(event, SessionTitled) and main:
            self.outbox.put(SessionInfoUpdate(session_update="session_info_update", title=event.title))

    async def _command(self, name: str, argument: str) -> None:
        if name == "compact":
            if self.conversation.busy:
                self._say("a prompt is running: /compact when it is done")
                return
            compacted = await self.conversation.compact(argument or None)
            self._say(
                "nothing to summarise yet"
                if compacted is None
                else f"summarised {counted(compacted.summarized_messages, 'message')}: "
                f"{compacted.tokens_before} -> {compacted.tokens_after} tokens"
            )
        elif name == "cost":
            self._say(f"session {self.session_id}: {usage_summary(self.stored.usage)}")
        elif name == "session":
            stored = self.stored
            lines = [
                f"session {stored.id}",
                f"title: {stored.title or '(none yet)'}",
                f"model: {self.conversation.model}",
                f"project: {stored.project_path}",
                f"history: {counted(self.conversation.message_count, 'message')}",
            ]
            self._say("\n".join(lines))
        self.outbox.put(self.usage_update(), key="usage")
        await self.outbox.flush()

    def _say(self, text: str) -> None:
        from acp.schema import AgentMessageChunk, TextContentBlock

        self.outbox.put(
            AgentMessageChunk(
                session_update="agent_message_chunk", content=TextContentBlock(type="text", text=text)
            )
        )


def usage_update(used: int, window: int | None, usage: Usage) -> UsageUpdate:
    """``usage_update``: the context used of its window, the tree's cost, its usage in ``_meta``."""
    cost = Cost(amount=usage.cost_usd, currency="USD") if usage.cost_usd is not None else None
    return UsageUpdate(
        session_update="usage_update",
        used=used,
        size=window or used,
        cost=cost,
        field_meta={"nestor": {"usage": usage.to_dict()}},
    )


def acp_usage(usage: Usage) -> AcpUsage:
    """Nestor's usage as the prompt response's ``usage``."""
    return AcpUsage(
        total_tokens=usage.total_tokens,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cached_read_tokens=usage.cache_read_tokens or None,
        cached_write_tokens=usage.cache_write_tokens or None,
    )
