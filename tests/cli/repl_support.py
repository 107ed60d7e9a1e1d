"""REPL test support: a real store, bus, coordinator and scripted model behind a ReplController.

The controller gets each main agent as the app hands it to UIs: a :class:`Conversation` whose
permission questions are events on the bus, answered through it.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_ai.messages import ModelMessage, ModelRequest, UserPromptPart
from pydantic_ai.models.function import AgentInfo
from rich.console import Console

from nestor.app import Conversation, Session
from nestor.cli.options import CommonOptions
from nestor.cli.render import EventRenderer
from nestor.cli.repl import PendingQuestion
from nestor.cli.repl_controller import PermissionPrompter, ReadAnswer, ReplController
from nestor.core.events import AgentFinished
from nestor.core.permission import PermissionRequest
from nestor.runtime.kernel.coordinator import Coordinator
from nestor.runtime.kernel.loop import SessionAgent
from nestor.runtime.kernel.permission_questions import PermissionQuestions
from nestor.store.sessions import SessionStore
from nestor.testing.scripted_model import ScriptedModel, Step, StepFunction, StepSource, reply
from nestor.tools.base import Tool, ToolContext
from tests.runtime.support import Harness


def plain_console(buffer: io.StringIO) -> Console:
    return Console(file=buffer, width=100, force_terminal=False)


def lines_of(buffer: io.StringIO) -> list[str]:
    return [line.rstrip() for line in buffer.getvalue().splitlines()]


async def eventually(predicate: Callable[[], bool], *, timeout: float = 10.0) -> None:
    """Wait until ``predicate()`` holds (the timeout only stops a hung test; nothing is timed)."""
    async with asyncio.timeout(timeout):
        # Polling, because most of what tests wait for (prompt_toolkit's state) signals no event.
        while not predicate():  # noqa: ASYNC110
            await asyncio.sleep(0.01)


def user_prompts(messages: Sequence[ModelMessage]) -> list[str]:
    return [
        part.content
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, UserPromptPart) and isinstance(part.content, str)
    ]


class Gate:
    """A scripted step that waits to be released: the run is busy for as long as the test wants."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    def step(self, then: Step) -> StepFunction:
        async def wait_then_reply(messages: list[ModelMessage], info: AgentInfo) -> Step:
            self.entered.set()
            await self.release.wait()
            return then

        return wait_then_reply


class RunParams(BaseModel):
    command: str


class RunTool(Tool[RunParams]):
    """Needs an ``execute`` permission (asked by default), like the shell tool."""

    name = "run"
    params_model = RunParams

    def __init__(self) -> None:
        self.ran: list[str] = []

    @property
    def description(self) -> str:
        return "Run a command."

    def permission(self, params: RunParams, ctx: ToolContext) -> PermissionRequest | None:
        return PermissionRequest(self.name, "execute", params.command, f"Run: {params.command}")

    async def run(self, params: RunParams, ctx: ToolContext) -> str:
        self.ran.append(params.command)
        return f"ran {params.command}\nsecond line"


class StoredSessions:
    """The project's stored sessions, as the app offers them to ``/sessions`` and ``/resume``."""

    def __init__(self, sessions: SessionStore, root: Path) -> None:
        self._sessions = sessions
        self._root = root

    def project_sessions(self, limit: int = 50) -> list[Session]:
        return self._sessions.list(str(self._root), limit=limit)

    def find_session(self, *, resume: str | None, continue_latest: bool) -> Session | None:
        return self._sessions.get(resume) if resume else None


class ReplHarness:
    """A controller over real stores and a scripted model, printing to a string."""

    def __init__(
        self,
        root: Path,
        steps: Sequence[StepSource] = (),
        *,
        tools: Sequence[Tool[Any]] = (),
        read_answer: ReadAnswer | None = None,
    ) -> None:
        self.root = root
        # The store, bus and event log are the runtime tests' harness; the REPL adds its own parts.
        self.base = Harness(root)
        self.sessions = self.base.sessions
        self.messages = self.base.messages
        self.events = self.base.events
        self.coordinator = Coordinator()
        self.model = ScriptedModel(list(steps) or [reply("hello")])
        self.tools = list(tools)
        self.output = io.StringIO()
        self.renderer = EventRenderer(plain_console(self.output))
        self.base.bus.subscribe(self.renderer.handle)
        self.start_error: Exception | None = None
        self.question = PendingQuestion()
        self.prompter = PermissionPrompter(read_answer or self.question.ask, self.renderer)
        self.base.bus.subscribe(self.prompter.handle)
        self.agents: list[SessionAgent] = []
        self.controller = ReplController(
            renderer=self.renderer,
            open_conversation=self.open_conversation,
            prompter=self.prompter,
            project_root=str(root),
            options=CommonOptions(directory=root),
            sessions=StoredSessions(self.sessions, root),
        )

    @property
    def agent(self) -> SessionAgent:
        """The main agent of the controller's conversation (the one started last)."""
        return self.agents[-1]

    async def open_conversation(self, session: Session | None) -> Conversation:
        if self.start_error is not None:
            raise self.start_error
        questions = PermissionQuestions(self.base.bus)
        agent = self.base.agent(
            self.model,
            self.tools,
            asker=questions,
            session_id=session.id if session is not None else None,
            model_name="test:scripted",
        )
        self.coordinator.add(agent)
        self.agents.append(agent)
        return Conversation(
            agent,
            coordinator=self.coordinator,
            sessions=self.sessions,
            questions=questions,
            needs_title=not (session is not None and session.title),
        )

    def lines(self) -> list[str]:
        return lines_of(self.output)

    def text(self) -> str:
        return "\n".join(self.lines())

    def finished(self) -> list[AgentFinished]:
        return [event for event in self.events if isinstance(event, AgentFinished)]

    async def wait_finished(self, count: int) -> AgentFinished:
        await eventually(lambda: len(self.finished()) >= count)
        return self.finished()[count - 1]

    def close(self) -> None:
        self.base.database.close()


MakeHarness = Callable[..., ReplHarness]


@pytest.fixture
def make_harness(tmp_path: Path) -> Iterator[MakeHarness]:
    """Build harnesses on ``tmp_path``; their databases are closed after the test."""
    made: list[ReplHarness] = []

    def make(
        steps: Sequence[StepSource] = (),
        *,
        tools: Sequence[Tool[Any]] = (),
        read_answer: ReadAnswer | None = None,
    ) -> ReplHarness:
        harness = ReplHarness(tmp_path, steps, tools=tools, read_answer=read_answer)
        made.append(harness)
        return harness

    yield make
    for harness in made:
        harness.close()
