"""The ``task`` tool and its background companions ``task_status``, ``task_output``, ``task_cancel``.

These tools live in the runtime because they run agents: each finds its calling agent in the
:class:`~nestor.runtime.tree.delegation.AgentTree` by the call's session id and hands the work to it.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, Field, ValidationInfo, field_validator

from nestor.agents.listing import agent_lines, agent_names
from nestor.core.errors import NestorError
from nestor.runtime.kernel.loop import SessionAgent
from nestor.runtime.tree.delegation import AgentTree
from nestor.runtime.tree.services import TaskRequest
from nestor.tools.base import Tool, ToolContext, ToolError, ToolResult

MAX_TASK_TIMEOUT_S = 3600
DEFAULT_OUTPUT_WAIT_S = 300


class TaskParams(BaseModel):
    """Parameters of the ``task`` tool."""

    description: str = Field(description="A short (3-5 word) description of the task, shown in progress.")
    prompt: str = Field(description="The complete task for the sub-agent: goal, context, what to report.")
    subagent_type: str = Field(default="general", description="The agent to run (see the list of agents).")
    model: str | None = Field(
        default=None,
        description="Model override: large, small, fast, standard, powerful, haiku, sonnet, opus, "
        "inherit, or provider:model.",
    )
    max_turns: int | None = Field(default=None, ge=1, le=1000, description="Most model requests of the task.")
    thoroughness: Literal["quick", "medium", "thorough"] | None = Field(
        default=None, description="How deep a search agent should go."
    )
    run_in_background: bool | None = Field(
        default=None, description="Return an agent id at once; a notice arrives when it ends."
    )
    resume: str | None = Field(default=None, description="The agent id of a sub-agent to continue.")
    timeout: float | None = Field(
        default=None, gt=0, le=MAX_TASK_TIMEOUT_S, description="Seconds before the sub-agent must report."
    )

    @field_validator("description", "prompt")
    @classmethod
    def _not_the_help_text(cls, value: str, info: ValidationInfo) -> str:
        # Small models copy a parameter's own description into the call instead of writing theirs.
        help_text = cls.model_fields[info.field_name or ""].description or ""
        if value.strip().rstrip(".").lower() == help_text.rstrip(".").lower():
            raise ValueError(
                f"this repeats the parameter's help text; write this task's own {info.field_name}"
            )
        return value


class TaskTool(Tool[TaskParams]):
    """Delegates a task to a sub-agent (see ``task_tool.md``)."""

    name: ClassVar[str] = "task"
    params_model: ClassVar[type[BaseModel]] = TaskParams
    brief_parameters: ClassVar[tuple[str, ...]] = ("subagent_type",)

    def __init__(self, tree: AgentTree) -> None:
        self.tree = tree

    @property
    def description(self) -> str:
        """The static description plus the agents that can be delegated to right now."""
        lines = agent_lines(self.tree.services.registry.delegable())
        return f"{super().description}\n\nAvailable agents (subagent_type):\n" + "\n".join(lines)

    @property
    def brief_description(self) -> str:
        """One line, with the agents' names (a small model sees no more)."""
        names = agent_names(self.tree.services.registry.delegable())
        return f"{super().brief_description} Agents (subagent_type): {names}."

    async def run(self, params: TaskParams, ctx: ToolContext) -> ToolResult:
        """Run the task (or start it in the background) and return the report."""
        parent = _caller(self.tree, ctx)
        request = TaskRequest(
            description=params.description.strip() or params.subagent_type,
            prompt=params.prompt,
            agent_type=params.subagent_type,
            model=params.model,
            max_turns=params.max_turns,
            thoroughness=params.thoroughness,
            run_in_background=params.run_in_background,
            resume=params.resume,
            max_time_s=params.timeout,
        )
        try:
            if self._in_background(request):
                agent_id = await self.tree.start_background(parent, request, ctx.tool_call_id)
                return ToolResult(
                    f"Started sub-agent {agent_id} ({request.agent_type}) in the background: "
                    f"{request.description}. You will get a notice when it ends; task_status, "
                    "task_output and task_cancel take this id.",
                    metadata={"subagent": {"agent_id": agent_id, "background": True}},
                )
            result = await self.tree.run_task(parent, request, ctx.tool_call_id)
        except ToolError:
            raise
        except NestorError as exc:
            raise ToolError(str(exc)) from None
        return result.tool_result()

    def _in_background(self, request: TaskRequest) -> bool:
        if request.run_in_background is not None:
            return request.run_in_background
        if request.resume:
            return False
        try:
            return self.tree.services.registry.get(request.agent_type).background
        except NestorError:
            return False


class TaskStatusParams(BaseModel):
    """Parameters of ``task_status``."""

    agent_id: str | None = Field(default=None, description="One background agent; all of yours when omitted.")


class TaskStatusTool(Tool[TaskStatusParams]):
    """Shows what background sub-agents are doing."""

    name: ClassVar[str] = "task_status"
    params_model: ClassVar[type[BaseModel]] = TaskStatusParams

    def __init__(self, tree: AgentTree) -> None:
        self.tree = tree

    @property
    def description(self) -> str:
        """Model-facing description."""
        return "Show the status of one background sub-agent (agent_id) or of all you started."

    async def run(self, params: TaskStatusParams, ctx: ToolContext) -> str:
        """One line per agent."""
        background = self.tree.background
        if params.agent_id:
            return background.get(params.agent_id).describe()
        records = background.of_parent(ctx.session_id)
        if not records:
            return "No background sub-agents."
        return "\n".join(record.describe() for record in records)


class TaskOutputParams(BaseModel):
    """Parameters of ``task_output``."""

    agent_id: str = Field(description="The background agent's id.")
    wait: bool = Field(default=True, description="Wait for it to end (up to timeout seconds).")
    timeout: float = Field(default=DEFAULT_OUTPUT_WAIT_S, gt=0, le=MAX_TASK_TIMEOUT_S)


class TaskOutputTool(Tool[TaskOutputParams]):
    """Returns a background sub-agent's report, waiting for it if asked."""

    name: ClassVar[str] = "task_output"
    params_model: ClassVar[type[BaseModel]] = TaskOutputParams

    def __init__(self, tree: AgentTree) -> None:
        self.tree = tree

    @property
    def description(self) -> str:
        """Model-facing description."""
        return (
            "Get a background sub-agent's report. With wait (the default) it waits up to timeout "
            "seconds for the agent to end; otherwise it returns at once with its status."
        )

    async def run(self, params: TaskOutputParams, ctx: ToolContext) -> ToolResult:
        """The report, or the status while it runs."""
        background = self.tree.background
        record = (
            await background.wait(params.agent_id, params.timeout)
            if params.wait
            else background.get(params.agent_id)
        )
        if record.running:
            return ToolResult(f"Still running: {record.describe()}")
        if record.result is None:
            return ToolResult(f"{record.agent_id} ended without a result: {record.status}", is_error=True)
        return ToolResult(record.result.report(), metadata={"subagent": record.result.to_dict()})


class TaskCancelParams(BaseModel):
    """Parameters of ``task_cancel``."""

    agent_id: str = Field(description="The background agent to stop.")


class TaskCancelTool(Tool[TaskCancelParams]):
    """Stops a background sub-agent."""

    name: ClassVar[str] = "task_cancel"
    params_model: ClassVar[type[BaseModel]] = TaskCancelParams

    def __init__(self, tree: AgentTree) -> None:
        self.tree = tree

    @property
    def description(self) -> str:
        """Model-facing description."""
        return (
            "Stop a running background sub-agent (and everything it runs). Its notice says it was cancelled."
        )

    async def run(self, params: TaskCancelParams, ctx: ToolContext) -> str:
        """Cancel it and wait until it stopped."""
        background = self.tree.background
        record = background.get(params.agent_id)
        if not background.cancel(params.agent_id):
            return f"{params.agent_id} is not running ({record.status})."
        await background.wait(params.agent_id, None)
        return f"Cancelled {params.agent_id} ({record.agent_type})."


def delegation_tools(tree: AgentTree) -> list[Tool[BaseModel]]:
    """The ``task`` tool and its background companions, bound to ``tree``."""
    return [TaskTool(tree), TaskStatusTool(tree), TaskOutputTool(tree), TaskCancelTool(tree)]  # pyright: ignore[reportReturnType]


def _caller(tree: AgentTree, ctx: ToolContext) -> SessionAgent:
    agent = tree.live.get(ctx.session_id)
    if agent is None:
        raise ToolError("this agent is not part of an agent tree; it cannot delegate")
    return agent
