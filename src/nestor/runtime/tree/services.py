"""What the agent tree is given: its shared services, a task's request, its children's builder."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pydantic_ai.messages import ModelMessage

from nestor.agents.registry import AgentRegistry
from nestor.agents.spec import AgentSpec, Thoroughness
from nestor.bus import EventBus
from nestor.config.sections import AgentsConfig
from nestor.providers.build import BuiltModel
from nestor.runtime.kernel.hooks import Budgets
from nestor.runtime.kernel.loop import SessionAgent
from nestor.store.messages import MessageStore
from nestor.store.sessions import Session, SessionStore


@dataclass(frozen=True, slots=True)
class TaskRequest:
    """One ``task`` call's arguments (see the task tool for their meaning)."""

    description: str
    prompt: str
    agent_type: str = "general"
    model: str | None = None
    max_turns: int | None = None
    thoroughness: Thoroughness | None = None
    run_in_background: bool | None = None
    resume: str | None = None
    max_time_s: float | None = None
    spec: AgentSpec | None = None
    """A spec built in code (``agentic_fetch``'s) instead of ``agent_type`` from the registry."""
    workspace: Path | None = None
    """Confine the agent to this directory: its own tools (the spec's, not its parent's), reading
    only there, the network without asking (see :meth:`ChildPolicy.for_workspace`)."""


@dataclass(frozen=True, slots=True)
class AgentPlan:
    """What the agent recipe decides about an agent before its session exists.

    Attributes:
        built: Its model (a sub-agent's: the call's, the spec's, else its parent's).
        tool_names: Its tools' names (a sub-agent's: the spec's within its parent's).
        system_prompt: Its system prompt.
        budgets: Its run's turn, token and time budgets.

    """

    built: BuiltModel
    tool_names: Sequence[str]
    system_prompt: str
    budgets: Budgets


@dataclass(frozen=True, slots=True)
class ChildRequest:
    """A new sub-agent the tree wants built, as its plan says.

    Attributes:
        parent: The agent whose task call starts it.
        session: Its session (new, or the one resumed).
        spec: Its agent spec.
        plan: What the recipe decided (:meth:`ChildBuilder.plan`).
        history: The conversation it starts from ([] for a new task).
        workspace: The directory it is confined to (``agentic_fetch``), else None.

    """

    parent: SessionAgent
    session: Session
    spec: AgentSpec
    plan: AgentPlan
    history: list[ModelMessage]
    workspace: Path | None = None


class ChildBuilder(Protocol):
    """How the tree gets its children: the agent factory, which follows the agent recipe."""

    async def plan(self, parent: SessionAgent, spec: AgentSpec, task: TaskRequest) -> AgentPlan:
        """The model, tools, prompt and budgets of a sub-agent of ``spec`` for ``task``.

        Raises:
            ToolError: Its model cannot be built.

        """
        ...

    async def child(self, request: ChildRequest) -> SessionAgent:
        """A new sub-agent as ``request`` says, not yet attached to the tree (its own MCP servers started)."""
        ...

    def release(self, agent_id: str) -> None:
        """The sub-agent ``agent_id`` ended for good (not pooled): stop its own MCP servers."""
        ...


@dataclass
class TreeServices:
    """What every agent of one tree shares.

    Attributes:
        registry: The agent specs.
        config: The ``[agents]`` settings.
        sessions: Session rows.
        messages: Message rows.
        bus: Where every agent's events go.
        project_root: The project all agents work in.
        builder: Plans and builds the sub-agents (the agent factory).

    """

    registry: AgentRegistry
    config: AgentsConfig
    sessions: SessionStore
    messages: MessageStore
    bus: EventBus
    project_root: Path
    builder: ChildBuilder
