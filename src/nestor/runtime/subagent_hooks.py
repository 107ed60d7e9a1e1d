"""The hooks of the agent tree: delegation guard, sub-agent safety, search budget, report, tree cost.

Which agent gets which (after seed 002)::

    main agent   DelegationGuardHook, TreeCostHook (completion check and loop guard elsewhere)
    sub-agent    SubAgentSafetyHook, SearchBudgetHook, TimeoutReportHook, TreeCostHook
                 (+ DelegationGuardHook when max_depth lets it delegate)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pydantic_ai.messages import ToolCallPart, ToolReturnPart

from nestor.runtime.hooks import Hook, HookAction, RunState, Stop, StopReason

if TYPE_CHECKING:
    from nestor.runtime.loop import RunResult

DELEGATION_TOOL_NAMES = ("task", "task_status", "task_output", "task_cancel", "agentic_fetch")
"""The tools that start or manage sub-agents, in the order the model sees them."""
DELEGATION_TOOLS = frozenset(DELEGATION_TOOL_NAMES)
"""Only agents allowed to delegate (depth below ``max_depth``) get these."""

USER_FACING_TOOLS = frozenset({"ask_user", "send_file_to_user", "exit_plan_mode"})
"""Tools that act on the user directly: never a sub-agent's, whatever its spec says."""

SEARCH_TOOLS = frozenset({"web_search"})


class DelegationGuardHook(Hook):
    """Refuses ``task`` calls that cannot work, before anything is started.

    Args:
        check: Returns why a ``task`` call's arguments are refused (empty prompt, unknown agent
            type, nesting too deep), or None when they are fine.

    """

    def __init__(self, check: Callable[[dict[str, object]], str | None]) -> None:
        self._check = check

    async def before_tool_call(self, state: RunState, call: ToolCallPart) -> str | None:
        """Refuse an invalid ``task`` call with the reason and what to do instead."""
        if call.tool_name != "task":
            return None
        try:
            args = call.args_as_dict(raise_if_invalid=True)
        except (ValueError, AssertionError):
            return None  # the loop reports invalid JSON itself
        return self._check(args)


class SubAgentSafetyHook(Hook):
    """A sub-agent's limits beyond turns and time: its context size and the tools it may never call.

    Args:
        max_context_tokens: Stop (with a final report) before a request larger than this.
        blocked_tools: Tool names refused even if a spec lists them.

    """

    def __init__(self, max_context_tokens: int, blocked_tools: frozenset[str] = USER_FACING_TOOLS) -> None:
        self.max_context_tokens = max_context_tokens
        self.blocked_tools = blocked_tools

    async def before_request(self, state: RunState) -> HookAction:
        """Stop a sub-agent whose context outgrew its budget."""
        if self.max_context_tokens and state.context_tokens > self.max_context_tokens:
            return Stop(
                "token_budget",
                f"Stopped: the context reached {state.context_tokens} tokens "
                f"(max_context_tokens = {self.max_context_tokens}).",
            )
        return None

    async def before_tool_call(self, state: RunState, call: ToolCallPart) -> str | None:
        """Refuse a blocked tool."""
        if call.tool_name in self.blocked_tools:
            return (
                f"{call.tool_name} is not available to sub-agents. "
                "Report to the agent that started you instead."
            )
        return None


class SearchBudgetHook(Hook):
    """Refuses web searches past a per-task budget, so a research agent converges.

    A search is charged when it is let through and refunded when it never ran: a permission rule
    denied it, or its arguments were invalid.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self._charged: set[str] = set()

    async def before_tool_call(self, state: RunState, call: ToolCallPart) -> str | None:
        """Count a search; refuse it once the budget is spent."""
        if call.tool_name not in SEARCH_TOOLS:
            return None
        if self.used >= self.limit:
            return (
                f"Search budget spent ({self.limit} searches for this task). Do not search again: "
                "work with what you found and write your answer."
            )
        self.used += 1
        self._charged.add(call.tool_call_id)
        return None

    async def after_tool_result(
        self, state: RunState, call: ToolCallPart, result: ToolReturnPart
    ) -> ToolReturnPart:
        """Refund a search this hook let through that did not run."""
        if call.tool_call_id in self._charged:
            self._charged.discard(call.tool_call_id)
            if result.outcome in ("denied", "retried"):
                self.used -= 1
        return result

    async def on_run_end(self, state: RunState, result: RunResult) -> None:
        """Each task gets the whole budget."""
        self.used = 0
        self._charged.clear()


class TimeoutReportHook(Hook):
    """Asks a stopped sub-agent for one last tool-less report, so its parent gets a useful partial result."""

    async def final_turn(self, state: RunState, reason: StopReason, message: str) -> str | None:
        """The prompt of the report turn."""
        return (
            f"<system-reminder>You have been stopped: {message or reason} You cannot call tools any "
            "more. Write your final report now: what you found (with file paths and line numbers), "
            "what you did, and what remains undone or uncertain.</system-reminder>"
        )


class TreeCostHook(Hook):
    """Stops every agent of a tree once the tree's total cost reaches ``max_cost_usd``.

    Args:
        max_cost_usd: The cap.
        tree_cost: Returns the root session's total cost so far (its own plus every descendant's).

    """

    def __init__(self, max_cost_usd: float, tree_cost: Callable[[], float | None]) -> None:
        self.max_cost_usd = max_cost_usd
        self._tree_cost = tree_cost

    async def before_request(self, state: RunState) -> HookAction:
        """Stop before a request once the cap is reached."""
        spent = self._tree_cost() or 0.0
        if spent >= self.max_cost_usd:
            return Stop(
                "token_budget",
                f"Stopped: the agent tree has spent ${spent:.4f} (max_cost_usd = {self.max_cost_usd:g}).",
            )
        return None


__all__ = [
    "DELEGATION_TOOLS",
    "DELEGATION_TOOL_NAMES",
    "USER_FACING_TOOLS",
    "DelegationGuardHook",
    "SearchBudgetHook",
    "SubAgentSafetyHook",
    "TimeoutReportHook",
    "TreeCostHook",
]
