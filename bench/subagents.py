"""What the sub-agent benchmarks share: a real agent tree over a real SQLite store, scripted models.

``fanout.py``, ``pool_memory.py`` and ``context_isolation.py`` each build a :class:`BenchTree`: a
main agent attached to an :class:`~nestor.runtime.tree.delegation.AgentTree` the way ``App`` wires one
(the registry of built-in and project agent files, fresh tools per session, the ``task`` tools, the
real ``<environment>`` section, a ``LargeResultHook`` on the main agent), with a SQLite file in a
temporary data directory. It follows ``tests/runtime/tree_support.py``; benchmarks do not import
from ``tests/``.

Models are :class:`~nestor.testing.ScriptedModel` s whose every answer is a function of the
conversation it is given (:class:`ConversationScript`), so any number of agents can share one
model in any interleaving, the way parallel sub-agents share their parent's model.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, UserPromptPart
from pydantic_ai.models.function import AgentInfo

from nestor.agents.registry import AgentRegistry
from nestor.bus import EventBus
from nestor.config.sections import AgentsConfig, ContextConfig, LimitsConfig
from nestor.config.settings import Settings
from nestor.core.errors import UnknownProviderError
from nestor.permissions import PermissionPolicy
from nestor.providers.build import BuiltModel
from nestor.runtime.factory.agents import AgentFactory
from nestor.runtime.factory.prompt import EnvironmentCache
from nestor.runtime.features.large_results import LargeResultHook
from nestor.runtime.kernel.hooks import BudgetHook, Budgets, Hook, LoopGuardHook
from nestor.runtime.kernel.loop import SessionAgent
from nestor.runtime.kernel.setup import AgentSetup
from nestor.runtime.tree.delegation import AgentTree
from nestor.runtime.tree.task_tool import delegation_tools
from nestor.store.db import Database, open_database
from nestor.store.messages import MessageStore
from nestor.store.sessions import SessionStore
from nestor.testing import Script, ScriptedModel, Step
from nestor.tools.base import Tool, ToolContext
from nestor.tools.catalogue import ToolCatalogue

TOOLS = ToolCatalogue()

Decide = Callable[[list[ModelMessage], AgentInfo], "Step | Awaitable[Step]"]


def first_prompt(messages: Sequence[ModelMessage]) -> str:
    """The text of a conversation's first user prompt (a sub-agent's task, the main agent's prompt)."""
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                    return part.content
    return ""


def responses_so_far(messages: Sequence[ModelMessage]) -> int:
    """How many times the model has already answered in this conversation."""
    return sum(isinstance(message, ModelResponse) for message in messages)


class ConversationScript(Script):
    """A script without end: every request is answered by ``decide(messages, info)``."""

    def __init__(self, decide: Decide) -> None:
        super().__init__([])
        self.decide = decide
        self.answered = 0

    async def next_step(self, messages: list[ModelMessage], info: AgentInfo) -> Step:
        """Ask ``decide`` for the step."""
        self.answered += 1
        produced = self.decide(messages, info)
        return await produced if inspect.isawaitable(produced) else produced


def conversation_model(decide: Decide, name: str = "bench") -> ScriptedModel:
    """A scripted model answering every request from the conversation so far."""
    return ScriptedModel(ConversationScript(decide), model_name=name)


class EchoParams(BaseModel):
    """Arguments of the cheap bench tool."""

    text: str


class EchoTool(Tool[EchoParams]):
    """The cheapest read-only tool: it returns its argument."""

    name = "echo"
    params_model = EchoParams
    read_only = True

    @property
    def description(self) -> str:
        """Say what it does."""
        return "Echo the text back."

    async def run(self, params: EchoParams, ctx: ToolContext) -> str:
        """Return the text."""
        return f"echo: {params.text}"


class BenchTree:
    """A main agent's tree over a SQLite file in ``data``, working on the project in ``project``.

    Args:
        project: The project root (agent files go to ``project/.nestor/agents``).
        data: Where the database and scratch directories go.
        config: The ``[agents]`` settings.
        models: Models by role or ``provider:model`` (``small`` for ``explore``, ...).

    """

    def __init__(
        self,
        project: Path,
        data: Path,
        *,
        config: AgentsConfig,
        models: dict[str, ScriptedModel] | None = None,
    ) -> None:
        self.project = project
        self.data = data
        project.mkdir(parents=True, exist_ok=True)
        home = data / "home"
        home.mkdir(parents=True, exist_ok=True)
        self.database: Database = open_database(data / "nestor.db")
        self.sessions = SessionStore(self.database)
        self.messages = MessageStore(self.database)
        self.bus = EventBus()
        self.models = models or {}
        self.registry = AgentRegistry(project, home=home, user_config_dir=home / ".config" / "nestor")
        self.factory = AgentFactory(
            # No stream idle timeout, as before the factory: the scripted models never go silent.
            settings=Settings(
                project_root=project,
                data_dir=data,
                agents=config,
                limits=LimitsConfig(stream_idle_timeout_s=0),
            ),
            registry=self.registry,
            catalogue=TOOLS,
            models=self,
            tools=self,
            sessions=self.sessions,
            messages=self.messages,
            bus=self.bus,
            env={},
            asker=None,
            environment=EnvironmentCache(project).get,
        )
        self.tree = self.factory.tree

    def choose(self, choice: str, env: Mapping[str, str]) -> BuiltModel:
        """The scripted model of ``choice`` (the factory's model source)."""
        if choice not in self.models:
            raise UnknownProviderError(f"no scripted model for {choice!r}")
        return BuiltModel(
            model=self.models[choice],
            settings={},
            name=f"bench:{choice}",
            context_window=200_000,
            priced=False,
        )

    def hooks(self, names: Sequence[str], session_id: str) -> list[Hook]:
        """No hooks come with the bench's tools (the factory's tool source)."""
        return []

    def build(self, names: Sequence[str], session_id: str, tree: AgentTree) -> list[Tool[Any]]:
        """Fresh tools by name (the factory's tool source)."""
        return self.tools(names, session_id)

    def tools(self, names: Sequence[str], session_id: str) -> list[Tool[Any]]:
        """Fresh tools by name: nestor's stateless tools, ``echo``, and the delegation tools."""
        made: dict[str, Tool[Any]] = {tool.name: tool for tool in TOOLS.build(names)}
        if "echo" in names:
            made["echo"] = EchoTool()
        if any(TOOLS.has(name, "delegation") for name in names):
            made.update({tool.name: tool for tool in delegation_tools(self.tree)})
        return [made[name] for name in names if name in made]

    def main(self, model: ScriptedModel, tool_names: Sequence[str], *, system_prompt: str) -> SessionAgent:
        """The main agent (depth 0) with ``tool_names`` plus the delegation tools, attached to the tree."""
        session_id = self.sessions.create(str(self.project), agent_name="coder", model="bench:main").id
        names = [*tool_names, *TOOLS.names("delegation")]
        scratch = self.data / "scratch" / session_id
        setup = AgentSetup(
            model=model,
            model_name="bench:main",
            system_prompt=system_prompt,
            tools=self.tools(names, session_id),
            sessions=self.sessions,
            messages=self.messages,
            bus=self.bus,
            policy=PermissionPolicy(project_root=str(self.project)),
            asker=None,
            project_root=self.project,
            scratch_dir=scratch,
            priced=False,
            built=BuiltModel(
                model=model, settings={}, name="bench:main", context_window=128_000, priced=False
            ),
            hooks=[
                BudgetHook(Budgets()),
                LoopGuardHook(),
                LargeResultHook(scratch, ContextConfig().tool_result_max_tokens),
                *self.factory.recipe.tree_hooks(0),
            ],
        )
        agent = SessionAgent(session_id, setup)
        self.tree.attach(agent)
        return agent

    def write_agent(self, name: str, text: str) -> Path:
        """Write a project agent file ``.nestor/agents/<name>.md``."""
        path = self.project / ".nestor" / "agents" / f"{name}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def close(self) -> None:
        """Close the database."""
        self.database.close()
