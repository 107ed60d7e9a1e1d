"""Runtime test support: scripted models, tools defined for tests, and a harness over a real store."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import httpx2
from pydantic import BaseModel
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart
from pydantic_ai.models import Model
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from nestor.bus import EventBus
from nestor.core.errors import ToolError
from nestor.core.events import Event
from nestor.core.permission import PermissionRequest
from nestor.permissions import PermissionPolicy
from nestor.runtime.features.compaction import Compaction, SummaryModel
from nestor.runtime.features.small.harness import SmallModelHarness
from nestor.runtime.kernel.context import ContextPolicy
from nestor.runtime.kernel.hooks import BudgetHook, Budgets, Hook, LoopGuardHook
from nestor.runtime.kernel.loop import SessionAgent
from nestor.runtime.kernel.permission_gate import PermissionAsker
from nestor.runtime.kernel.setup import AgentSetup
from nestor.store.db import Database, open_database
from nestor.store.messages import MessageStore
from nestor.store.sessions import SessionStore
from nestor.testing import ScriptedOpenAIServer
from nestor.tools.base import Tool, ToolContext

Step = str | list[tuple[str, dict[str, Any]]] | BaseException | Callable[[list[ModelMessage]], Any]


def scripted(steps: Sequence[Step], *, requests: list[list[ModelMessage]] | None = None) -> FunctionModel:
    """A FunctionModel playing ``steps``: text, a list of (tool, args) calls, an exception, or a callable."""
    queue = list(steps)

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        if requests is not None:
            requests.append(list(messages))
        step = queue.pop(0)
        if callable(step) and not isinstance(step, BaseException):
            step = step(messages)
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, str):
            for index in range(0, len(step), 5):
                yield step[index : index + 5]
            return
        for index, (name, args) in enumerate(step):
            yield {
                index: DeltaToolCall(
                    name=name, json_args=json.dumps(args), tool_call_id=f"call_{len(queue)}_{index}"
                )
            }

    return FunctionModel(stream_function=stream, model_name="scripted-model")


def openai_model(server: ScriptedOpenAIServer, client: httpx2.AsyncClient) -> OpenAIChatModel:
    """The real chat-completions model on a scripted server, without the SDK's own retries."""
    provider = OpenAIProvider(base_url=server.base_url, api_key="test", http_client=client)
    return OpenAIChatModel("gpt-4o", provider=provider, settings={"max_retries": 0})


def tool_results(message: ModelMessage) -> list[ToolReturnPart]:
    assert isinstance(message, ModelRequest)
    return [part for part in message.parts if isinstance(part, ToolReturnPart)]


class EchoParams(BaseModel):
    text: str


class EchoTool(Tool[EchoParams]):
    name = "echo"
    params_model = EchoParams
    read_only = True

    @property
    def description(self) -> str:
        return "Echo the text back."

    async def run(self, params: EchoParams, ctx: ToolContext) -> str:
        return f"echo: {params.text}"


class WaitParams(BaseModel):
    seconds: float = 0.0


class BarrierTool(Tool[WaitParams]):
    """Returns only once ``parties`` calls are running at the same time (proves parallelism)."""

    name = "barrier"
    params_model = WaitParams
    read_only = True

    def __init__(self, parties: int) -> None:
        self.parties = parties
        self.arrived = 0
        self.all_here = asyncio.Event()
        self.started = asyncio.Event()

    @property
    def description(self) -> str:
        return "Wait for the others."

    async def run(self, params: WaitParams, ctx: ToolContext) -> str:
        self.arrived += 1
        self.started.set()
        if self.arrived >= self.parties:
            self.all_here.set()
        # Not asyncio.wait_for: on Python 3.11 it swallows a cancel that lands as its inner wait ends.
        async with asyncio.timeout(5):
            await self.all_here.wait()
        if params.seconds:
            await asyncio.sleep(params.seconds)
        return f"arrived {self.arrived}"


class BoomTool(Tool[EchoParams]):
    name = "boom"
    params_model = EchoParams
    read_only = True

    @property
    def description(self) -> str:
        return "Always fails."

    async def run(self, params: EchoParams, ctx: ToolContext) -> str:
        if params.text == "tool-error":
            raise ToolError("the boom tool refuses politely")
        raise RuntimeError("kaboom")


class WriteLikeParams(BaseModel):
    target: str


class GuardedTool(Tool[WriteLikeParams]):
    """Needs an ``execute`` permission for its target; counts how often it really ran."""

    name = "guarded"
    params_model = WriteLikeParams

    def __init__(self) -> None:
        self.ran = 0

    @property
    def description(self) -> str:
        return "Does something that needs permission."

    def permission(self, params: WriteLikeParams, ctx: ToolContext) -> PermissionRequest | None:
        return PermissionRequest(
            tool_name=self.name,
            action="execute",
            target=params.target,
            description=f"Run {params.target}",
            grant_key=params.target,
        )

    async def run(self, params: WriteLikeParams, ctx: ToolContext) -> str:
        self.ran += 1
        return f"ran {params.target}"


class Harness:
    """A store on disk plus a bus that records events; builds agents for tests."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.database: Database = open_database(root / "data" / "nestor.db")
        self.sessions = SessionStore(self.database)
        self.messages = MessageStore(self.database)
        self.bus = EventBus()
        self.events: list[Event] = []
        self.bus.subscribe(self.events.append)
        self.sleeps: list[float] = []

    async def fake_sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)

    def agent(
        self,
        model: Model,
        tools: Sequence[Tool[Any]] = (),
        *,
        budgets: Budgets | None = None,
        asker: PermissionAsker | None = None,
        policy: PermissionPolicy | None = None,
        hooks: Sequence[Hook] = (),
        session_id: str | None = None,
        model_name: str = "test:scripted-model",
        scratch_dir: Path | None = None,
        context: ContextPolicy | None = None,
        summarizer: SummaryModel | None = None,
        brief_tools: bool = False,
        harness: SmallModelHarness | None = None,
    ) -> SessionAgent:
        if session_id is None:
            session_id = self.sessions.create(str(self.root), model=model_name).id
        setup = AgentSetup(
            model=model,
            model_name=model_name,
            system_prompt="You are a test agent.",
            tools=tools,
            sessions=self.sessions,
            messages=self.messages,
            bus=self.bus,
            policy=policy or PermissionPolicy(project_root=str(self.root)),
            asker=asker,
            project_root=self.root,
            scratch_dir=scratch_dir,
            context=context,
            compactor=Compaction(summarizer),
            brief_tools=brief_tools,
            budgets=budgets or Budgets(),
            hooks=[BudgetHook(budgets or Budgets()), LoopGuardHook(), *hooks],  # as the agent recipe's
            sleep=self.fake_sleep,
            harness=harness,
        )
        return SessionAgent(session_id, setup)

    def types(self) -> list[str]:
        return [event.type for event in self.events]
