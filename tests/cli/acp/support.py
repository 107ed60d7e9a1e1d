"""An ACP client for tests: the SDK's own client, spawning the real ``nestor acp`` over stdio.

:class:`RecordingClient` records every ``session/update`` as the JSON the wire carried (so tests
read what an editor reads), answers permission questions from a script, and serves ``fs/*`` from
a dict of unsaved buffers when a test advertises them.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import acp
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    CreateTerminalResponse,
    DeniedOutcome,
    EnvVariable,
    FileSystemCapabilities,
    PermissionOption,
    ReadTextFileResponse,
    RequestPermissionResponse,
    TerminalOutputResponse,
    ToolCallUpdate,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)

from nestor.testing import ScriptedOpenAIServer
from tests.cli.support import openai_env

Answer = str | None
"""An option id to select, or None to answer ``cancelled``."""


class RecordingClient:
    """A client that records updates and answers questions.

    Args:
        answers: Option ids to select for the permission questions, in order (``allow_once``,
            ``allow_session``, ``reject``; None answers ``cancelled``); a function of the question
            may decide instead.
        buffers: The editor's unsaved buffers by absolute path, for ``fs/read_text_file``.

    """

    def __init__(
        self,
        answers: list[Answer] | Callable[[dict[str, Any]], Answer] | None = None,
        buffers: dict[str, str] | None = None,
    ) -> None:
        self.updates: list[dict[str, Any]] = []
        self.questions: list[dict[str, Any]] = []
        self.answers = answers if answers is not None else []
        self.buffers = buffers if buffers is not None else {}
        self.reads: list[str] = []
        self.writes: dict[str, str] = {}
        self.question_asked = asyncio.Event()
        self.hold_questions: asyncio.Event | None = None

    def on_connect(self, conn: acp.Agent) -> None:
        self.conn = conn

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update.model_dump(mode="json", by_alias=True, exclude_none=True))

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption], **kwargs: Any
    ) -> RequestPermissionResponse:
        question = {
            "toolCall": tool_call.model_dump(mode="json", by_alias=True, exclude_none=True),
            "options": [
                option.model_dump(mode="json", by_alias=True, exclude_none=True) for option in options
            ],
        }
        self.questions.append(question)
        self.question_asked.set()
        if self.hold_questions is not None:
            await self.hold_questions.wait()
        answer = self.answers(question) if callable(self.answers) else self.answers.pop(0)
        if answer is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=answer))

    async def read_text_file(
        self, session_id: str, path: str, line: int | None = None, limit: int | None = None, **kwargs: Any
    ) -> ReadTextFileResponse:
        self.reads.append(path)
        if path in self.buffers:
            return ReadTextFileResponse(content=self.buffers[path])
        return ReadTextFileResponse(content=await asyncio.to_thread(Path(path).read_text))

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        self.writes[path] = content
        self.buffers[path] = content
        return WriteTextFileResponse()

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise acp.RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    async def create_elicitation(self, message: str, mode: Any, **kwargs: Any) -> Any:
        raise acp.RequestError.method_not_found("elicitation/create")

    async def complete_elicitation(self, elicitation_id: str, **kwargs: Any) -> None:
        return None

    # No terminal is advertised: nestor must never ask for one.
    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: list[EnvVariable] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> CreateTerminalResponse:
        raise acp.RequestError.method_not_found("terminal/create")

    async def terminal_output(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> TerminalOutputResponse:
        raise acp.RequestError.method_not_found("terminal/output")

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> None:
        raise acp.RequestError.method_not_found("terminal/release")

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        raise acp.RequestError.method_not_found("terminal/wait_for_exit")

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> None:
        raise acp.RequestError.method_not_found("terminal/kill")

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        """The recorded updates of one ``sessionUpdate`` kind."""
        return [update for update in self.updates if update["sessionUpdate"] == kind]

    def text(self) -> str:
        """Every agent message chunk, joined."""
        return "".join(update["content"]["text"] for update in self.of_kind("agent_message_chunk"))


async def until(predicate: Callable[[], object], within_s: float = 30) -> None:
    """Wait until ``predicate()`` is true (the updates it reads arrive from the agent's process)."""
    async with asyncio.timeout(within_s):
        while not predicate():  # noqa: ASYNC110 - the condition is another process's output
            await asyncio.sleep(0.05)


def fs_capabilities() -> ClientCapabilities:
    """A client that offers ``fs/read_text_file`` and ``fs/write_text_file``."""
    return ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, write_text_file=True))


@asynccontextmanager
async def nestor_acp(
    client: RecordingClient, repo: Path, env: dict[str, str], *args: str, model: str = "openai-chat:gpt-4o"
) -> AsyncIterator[acp.ClientSideConnection]:
    """``nestor acp`` running in ``repo`` with ``model``, connected to ``client`` through the SDK."""
    async with acp.spawn_agent_process(
        client,
        sys.executable,
        "-m",
        "nestor",
        "--model",
        model,
        "acp",
        *args,
        env=env,
        cwd=repo,
        use_unstable_protocol=True,
    ) as (conn, _process):
        yield conn


def acp_env(tmp_path: Path, server: ScriptedOpenAIServer) -> dict[str, str]:
    """The environment of ``nestor acp`` against the scripted server."""
    return openai_env(tmp_path, server)
