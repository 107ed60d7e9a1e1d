"""What the agent tree is given: its shared services, a task's request, and the builder of its children."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from pydantic_ai.messages import ModelMessage

from nestor.agents.registry import AgentRegistry
from nestor.agents.spec import AgentSpec, Thoroughness
from nestor.bus import EventBus
from nestor.config.sections import AgentsConfig
from nestor.providers.build import BuiltModel
from nestor.runtime.kernel.loop import SessionAgent
from nestor.runtime.tree.subagent_result import ToolTracker
from nestor.store.messages import MessageStore
from nestor.store.sessions import Session, SessionStore
from nestor.tools.catalogue import ToolCatalogue


@dataclass(frozen=True, slots=True)
class TaskRequest:
    """One ``task`` call's arguments (see the task tool for their meaning)."""

    description: str
    prompt: str
    subagent_type: str = "general"
    model: str | None = None
    max_turns: int | None = None
    thoroughness: Thoroughness | None = None
    run_in_background: bool | None = None
    resume: str | None = None
    timeout: float | None = None
    spec: AgentSpec | None = None
    """A spec built in code (``agentic_fetch``'s) instead of ``subagent_type`` from the registry."""
    workspace: Path | None = None
    """Confine the agent to this directory: its own tools (the spec's, not its parent's), reading
    only there, the network without asking (see :meth:`ChildPolicy.for_workspace`)."""


@dataclass(frozen=True, slots=True)
class ChildRequest:
    """What the tree decided about a new sub-agent; the :class:`ChildBuilder` makes the agent.

    Attributes:
        parent: The agent whose task call starts it.
        session: Its session (new, or the one resumed).
        spec: Its agent spec.
        built: Its model.
        tool_names: Its tools: the spec's within the parent's.
        system_prompt: Its system prompt.
        history: The conversation it starts from ([] for a new task).
        tracker: Records the files and tools it uses, for its result.
        workspace: The directory it is confined to (``agentic_fetch``), else None.

    """

    parent: SessionAgent
    session: Session
    spec: AgentSpec
    built: BuiltModel
    tool_names: Sequence[str]
    system_prompt: str
    history: list[ModelMessage]
    tracker: ToolTracker
    workspace: Path | None = None


class ChildBuilder(Protocol):
    """Builds the models and agents the tree starts (the agent factory)."""

    def model(self, choice: str) -> BuiltModel:
        """The model of a role or ``provider:model``; raises a ``NestorError`` when it cannot."""
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
        environment: The ``<environment>`` section of system prompts.
        builder: Builds the sub-agents' models and agents (the agent factory).
        instructions: The instruction files' text (read anew for each task, inside the project's
            bounds: see :func:`~nestor.runtime.factory.prompt.read_instructions`); None gives none.
        catalogue: The tools the tree knows (the built-ins, and any registered at run time):
            which ones delegate, face the user, search the web or are read-only.

    """

    registry: AgentRegistry
    config: AgentsConfig
    sessions: SessionStore
    messages: MessageStore
    bus: EventBus
    project_root: Path
    environment: Callable[[], Awaitable[str]]
    builder: ChildBuilder
    instructions: Callable[[], str] | None = None
    catalogue: ToolCatalogue = field(default_factory=ToolCatalogue)
