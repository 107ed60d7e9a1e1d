"""What a sub-agent hands back: a report for the model, a structured result for the store and UI.

The model gets the sub-agent's final report plus one footer line; the tool result's metadata keeps
the whole :class:`SubAgentResult`, so ``sessions show`` and the UI can display it without parsing.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic_ai.messages import ToolCallPart, ToolReturnPart

from nestor.core.usage import format_cost, format_tokens
from nestor.runtime.kernel.hooks import Hook, RunState, StopReason
from nestor.tools.base import ToolResult

TaskStopReason = Literal[
    "completed", "max_turns", "token_budget", "timeout", "cancelled", "loop", "error", "refusal", "hook"
]

_PATH_ARGS = ("path", "file_path")
_MAX_FILES = 50


def task_stop_reason(reason: StopReason) -> TaskStopReason:
    """The loop's stop reason in the task tool's vocabulary (``max_iterations`` is ``max_turns``)."""
    return "max_turns" if reason == "max_iterations" else reason


@dataclass(slots=True)
class SubAgentResult:
    """The outcome of one sub-agent task, stored with the parent's tool result."""

    success: bool
    agent_type: str
    agent_id: str
    description: str
    summary: str
    files_explored: list[str] = field(default_factory=list[str])
    tools_used: dict[str, int] = field(default_factory=dict[str, int])
    num_turns: int = 0
    execution_time: float = 0.0
    usage: dict[str, Any] = field(default_factory=dict[str, Any])
    cost_usd: float | None = None
    stop_reason: TaskStopReason = "completed"
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON-ready data."""
        return {
            "success": self.success,
            "agent_type": self.agent_type,
            "agent_id": self.agent_id,
            "description": self.description,
            "summary": self.summary,
            "files_explored": self.files_explored,
            "tools_used": self.tools_used,
            "iterations": self.num_turns,  # the stored spelling (the glossary's)
            "execution_time": round(self.execution_time, 3),
            "usage": self.usage,
            "cost_usd": self.cost_usd,
            "stop_reason": self.stop_reason,
            "error": self.error,
        }

    def footer(self) -> str:
        """One line: agent id, tools used, time, tokens, cost and stop reason."""
        tools = sum(self.tools_used.values())
        tokens = int(self.usage.get("total_tokens", 0) or 0)
        return (
            f"[agent {self.agent_id} ({self.agent_type}) · {tools} tool{'s' if tools != 1 else ''} · "
            f"{self.execution_time:.1f}s · {format_tokens(tokens)} tok · {format_cost(self.cost_usd)} · "
            f"{self.stop_reason}]"
        )

    def tool_result(self) -> ToolResult:
        """The result of the tool that ran the task: the report, an error when it is empty."""
        return ToolResult(self.report(), is_error=not self.summary, metadata={"subagent": self.to_dict()})

    def report(self) -> str:
        """What the parent model reads: the final report (or the error) and the footer."""
        if self.success:
            body = self.summary
        else:
            body = f"Sub-agent failed: {self.error}" + (
                f"\n\nWhat it reported before stopping:\n{self.summary}" if self.summary else ""
            )
        return f"{body}\n\n{self.footer()}"


class ToolTracker(Hook):
    """Counts a sub-agent's tool calls by name and remembers the files it looked at.

    Those are the path arguments of its calls and the files its searches' results named.
    """

    def __init__(self) -> None:
        self.tools_used: Counter[str] = Counter()
        self.files: dict[str, None] = {}

    def reset(self) -> None:
        """Forget the previous task's calls (a pooled agent starts a new task)."""
        self.tools_used.clear()
        self.files.clear()

    async def after_tool_result(
        self, state: RunState, call: ToolCallPart, result: ToolReturnPart
    ) -> ToolReturnPart:
        """Record the call."""
        self.tools_used[call.tool_name] += 1
        try:
            args = call.args_as_dict()
        except ValueError:
            return result
        named = [args.get(key) for key in _PATH_ARGS]
        # What a search found (grep's and glob's results name their files in "paths").
        found: object = (result.metadata or {}).get("paths") if result.outcome == "success" else None
        if isinstance(found, list):
            named += found  # pyright: ignore[reportUnknownArgumentType]
        for value in named:
            if isinstance(value, str) and value and len(self.files) < _MAX_FILES:
                self.files.setdefault(value)
        return result
