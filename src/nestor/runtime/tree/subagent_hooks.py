"""The hooks of the agent tree: delegation guard, sub-agent safety, search budget, report.

The tree's cost cap, :class:`~nestor.runtime.tree.tree_usage.TreeCostHook`, lives with the rest of
the tree's usage roll-up in ``tree_usage.py``.

Which agent gets which (after seed 002)::

    main agent   DelegationGuardHook, TreeCostHook, TimeoutReportHook(MAIN_AGENT_REPORT)
                 (completion check and loop guard elsewhere)
    sub-agent    SubAgentSafetyHook, SearchBudgetHook, TimeoutReportHook, TreeCostHook
                 (+ DelegationGuardHook when max_depth lets it delegate)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pydantic_ai.messages import ToolCallPart, ToolReturnPart

from nestor.runtime.kernel.hooks import Hook, HookAction, RunState, Stop, StopReason
from nestor.tools.catalogue import ToolCatalogue

if TYPE_CHECKING:
    from nestor.runtime.kernel.setup import RunResult


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
        catalogue: Its user-facing tools are refused even if a spec lists them (the built-ins by
            default); it is asked at each call, so tools registered meanwhile count.

    """

    def __init__(self, max_context_tokens: int, catalogue: ToolCatalogue | None = None) -> None:
        self.max_context_tokens = max_context_tokens
        self.catalogue = catalogue or ToolCatalogue()

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
        """Refuse a user-facing tool."""
        if self.catalogue.has(call.tool_name, "user_facing"):
            return (
                f"{call.tool_name} is not available to sub-agents. "
                "Report to the agent that started you instead."
            )
        return None


class SearchBudgetHook(Hook):
    """Refuses web searches past a per-task budget, so a research agent converges.

    A search is charged when it is let through and refunded when it never ran: a permission rule
    denied it, or its arguments were invalid.

    Args:
        limit: Searches per task.
        catalogue: Which tools search the web (the built-ins by default).

    """

    def __init__(self, limit: int, catalogue: ToolCatalogue | None = None) -> None:
        self.limit = limit
        self.used = 0
        self.catalogue = catalogue or ToolCatalogue()
        self._charged: set[str] = set()

    async def before_tool_call(self, state: RunState, call: ToolCallPart) -> str | None:
        """Count a search; refuse it once the budget is spent."""
        if not self.catalogue.has(call.tool_name, "searches_web"):
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


SUBAGENT_REPORT = (
    "<system-reminder>You have been stopped: {message} You cannot call tools any more. Write your "
    "final report now: what you found (with file paths and line numbers), what you did, and what "
    "remains undone or uncertain.</system-reminder>"
)
MAIN_AGENT_REPORT = (
    "<system-reminder>You have been stopped: {message} You cannot call tools any more. Write your "
    "final answer to the user now: what you did and found (with file paths), what changed, and "
    "what remains undone or unverified.</system-reminder>"
)


class TimeoutReportHook(Hook):
    """Asks a stopped agent for one last tool-less report: its parent (or the user) gets a partial result.

    Args:
        prompt: The report turn's prompt; ``{message}`` is replaced by why the agent was stopped.
            :data:`SUBAGENT_REPORT` (the default) addresses a parent agent, :data:`MAIN_AGENT_REPORT`
            the user.

    """

    def __init__(self, prompt: str = SUBAGENT_REPORT) -> None:
        self.prompt = prompt

    async def final_turn(self, state: RunState, reason: StopReason, message: str) -> str | None:
        """The prompt of the report turn."""
        return self.prompt.format(message=message or reason)


__all__ = [
    "MAIN_AGENT_REPORT",
    "SUBAGENT_REPORT",
    "DelegationGuardHook",
    "SearchBudgetHook",
    "SubAgentSafetyHook",
    "TimeoutReportHook",
]
