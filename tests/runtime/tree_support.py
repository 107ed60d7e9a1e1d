"""Support for agent-tree tests: scripts routed by task prompt, and a tree over a real store."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelRequest, UserPromptPart
from pydantic_ai.models.function import AgentInfo
from pydantic_ai.usage import RequestUsage

from nestor.agents.registry import AgentRegistry
from nestor.config.sections import AgentsConfig
from nestor.config.settings import Settings
from nestor.permissions import PermissionPolicy
from nestor.providers.build import BuiltModel
from nestor.runtime.factory.agents import AgentFactory
from nestor.runtime.factory.prompt import read_instructions
from nestor.runtime.features.small.harness import SmallModelHarness
from nestor.runtime.kernel.hooks import BudgetHook, Budgets, Hook, LoopGuardHook, TreeBudget
from nestor.runtime.kernel.loop import SessionAgent
from nestor.runtime.kernel.permission_gate import PermissionAsker
from nestor.runtime.kernel.setup import AgentSetup
from nestor.runtime.tree.delegation import AgentTree
from nestor.runtime.tree.task_tool import delegation_tools
from nestor.testing import Script, ScriptedModel, ScriptExhausted, Step
from nestor.testing.scripted_model import StepSource
from nestor.tools.base import Tool
from nestor.tools.catalogue import ToolCatalogue
from tests.runtime.support import Harness


def first_prompt(messages: Sequence[ModelMessage]) -> str:
    """The text of the first user prompt of a conversation (a sub-agent's task)."""
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                    return part.content
    return ""


class RoutedScript(Script):
    """Steps per conversation: a request goes to the route whose key is in its first user prompt.

    Parallel sub-agents on one model each follow their own script, whatever the interleaving.
    """

    def __init__(self, routes: dict[str, list[StepSource]]) -> None:
        super().__init__([])
        self.routes = {key: list(steps) for key, steps in routes.items()}
        self.played_by: dict[str, int] = dict.fromkeys(routes, 0)

    async def next_step(self, messages: list[ModelMessage], info: AgentInfo) -> Step:
        prompt = first_prompt(messages)
        for key, steps in self.routes.items():
            if key in prompt:
                if not steps:
                    raise ScriptExhausted(f"route {key!r} has no step left")
                source = steps.pop(0)
                self.played_by[key] += 1
                if isinstance(source, Step):
                    return source
                produced = source(messages, info)
                return await produced if inspect.isawaitable(produced) else produced  # type: ignore[return-value]
        raise ScriptExhausted(f"no route for a conversation starting with {prompt[:80]!r}")


def usage(input_tokens: int = 100, output_tokens: int = 10, cost: float | None = 0.001) -> RequestUsage:
    """A request's usage with a provider-reported cost (so roll-ups can be checked exactly)."""
    from decimal import Decimal

    return RequestUsage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost=None if cost is None else Decimal(str(cost)),
    )


def built(model: ScriptedModel, name: str, *, small_profile: bool = False) -> BuiltModel:
    return BuiltModel(
        model=model, settings={}, name=name, context_window=128_000, priced=False, small_profile=small_profile
    )


class TreeHarness(Harness):
    """A harness whose main agent delegates: a real registry on a temp project, scripted models."""

    def __init__(
        self,
        root: Path,
        *,
        models: dict[str, ScriptedModel],
        config: AgentsConfig | None = None,
        extra_tools: dict[str, Callable[[], Tool[Any]]] | None = None,
        asker: PermissionAsker | None = None,
        compact: bool = False,
        catalogue: ToolCatalogue | None = None,
    ) -> None:
        super().__init__(root)
        self.compact = compact
        self.catalogue = catalogue or ToolCatalogue()
        self.project = root
        self.home = root / "home"
        self.home.mkdir(exist_ok=True)
        self.registry = AgentRegistry(root, home=self.home, user_config_dir=self.home / ".config" / "nestor")
        self.models = models
        self.extra_tools = extra_tools or {}
        self.built_choices: list[str] = []
        self.factory = AgentFactory(
            settings=Settings(project_root=root, data_dir=root / "data", agents=config or AgentsConfig()),
            registry=self.registry,
            catalogue=self.catalogue,
            models=self,
            tools=self,
            sessions=self.sessions,
            messages=self.messages,
            bus=self.bus,
            env={},
            asker=asker,
            environment=self._environment,
            instructions=lambda: read_instructions(root, None),
        )
        self.tree = self.factory.tree

    async def _environment(self) -> str:
        return "<environment>test project</environment>"

    def choose(self, choice: str, env: Mapping[str, str]) -> BuiltModel:
        """The scripted model of ``choice`` (the factory's model source)."""
        self.built_choices.append(choice)
        if choice not in self.models:
            from nestor.core.errors import UnknownProviderError

            raise UnknownProviderError(f"no scripted model for {choice!r}")
        return built(self.models[choice], f"test:{choice}", small_profile=self.compact)

    def build(self, names: Sequence[str], session_id: str, tree: AgentTree) -> list[Tool[Any]]:
        """Fresh tools by name (the factory's tool source)."""
        return self._tools(names, session_id)

    def hooks(self, names: Sequence[str], session_id: str) -> list[Hook]:
        """No hooks come with the test tools."""
        return []

    def _tools(self, names: Sequence[str], session_id: str) -> list[Tool[Any]]:
        made: dict[str, Tool[Any]] = {tool.name: tool for tool in self.catalogue.build(names)}
        for name in names:
            if name in self.extra_tools:
                made[name] = self.extra_tools[name]()
        if any(self.catalogue.has(name, "delegation") for name in names):
            made.update({tool.name: tool for tool in delegation_tools(self.tree)})
        return [made[name] for name in names if name in made]

    def main(
        self,
        model: ScriptedModel,
        tool_names: Sequence[str] = ("view", "ls", "glob", "grep", "bash"),
        *,
        policy: PermissionPolicy | None = None,
        budgets: Budgets | None = None,
        hooks: Sequence[Hook] = (),
        asker: PermissionAsker | None = None,
        session_id: str | None = None,
        harness: SmallModelHarness | None = None,
    ) -> SessionAgent:
        """The main agent (depth 0) with ``tool_names`` plus the delegation tools, attached to the tree."""
        if session_id is None:
            session_id = self.sessions.create(str(self.root), model="test:main").id
        names = list(dict.fromkeys([*tool_names, *self.catalogue.names("delegation")]))
        tree_budget = TreeBudget(budgets or Budgets())
        setup = AgentSetup(
            model=model,
            model_name="test:main",
            system_prompt="You are the main test agent.",
            tools=self._tools(names, session_id),
            sessions=self.sessions,
            messages=self.messages,
            bus=self.bus,
            policy=policy or PermissionPolicy(project_root=str(self.root)),
            asker=asker,
            project_root=self.root,
            built=built(model, "test:main"),
            budgets=budgets or Budgets(),
            tree_budget=tree_budget,
            hooks=[
                BudgetHook(budgets or Budgets(), tree_budget),
                LoopGuardHook(),
                *hooks,
                *self.factory.recipe.tree_hooks(0),
            ],
            sleep=self.fake_sleep,
            harness=harness,
        )
        agent = SessionAgent(session_id, setup)
        self.tree.attach(agent)
        return agent

    def write_agent(self, name: str, text: str, *, directory: str = ".nestor/agents") -> Path:
        path = self.project / directory / f"{name}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path


def children_started(harness: TreeHarness, main_id: str) -> list[SessionAgent]:
    """The agents other than ``main_id`` that start on ``harness``'s bus from now on, as they start."""
    children: list[SessionAgent] = []
    harness.bus.subscribe(
        lambda event: (
            children.append(harness.tree.live[event.agent_id])
            if event.type == "agent_started" and event.agent_id != main_id
            else None
        )
    )
    return children
