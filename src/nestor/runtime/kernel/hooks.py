"""The hook protocol: how features attach to the agent loop without editing it.

The loop calls every hook at these points:

- :meth:`Hook.before_run` when a run starts, before its prompt is stored: a hook may drop the
  prompt and end the run, or add context the model sees with it;
- :meth:`Hook.before_request` before each model request: a hook may stop the run (a budget is
  spent) or add a reminder the model sees in that request;
- :meth:`Hook.before_tool_call` before each tool call: a hook may refuse the call (a blocked
  tool, a spent search budget, an invalid delegation) with a message the model sees instead, or
  change it (:class:`ToolCallChange`: other arguments, a permission already given or to be asked);
- :meth:`Hook.permission_request` when the rules leave a call to the user: a hook may answer
  instead; :meth:`Hook.on_permission_prompt` when the user is then asked;
- :meth:`Hook.after_tool_result` after each tool call: a hook may replace the result the model
  sees (trim it, append a reminder);
- :meth:`Hook.before_finish` when the model answers without calling a tool: a hook may send it
  back to work with a reminder (unfinished todos);
- :meth:`Hook.final_turn` when a budget, the time limit or the loop guard stopped the run: a hook
  may ask for one last request without tools, so the agent reports what it found;
- :meth:`Hook.on_run_end` when a run ends, whatever the reason;
- :meth:`Hook.before_compact` and :meth:`Hook.after_compact` around a compaction of the history.

Built-in hooks live here too: :class:`BudgetHook` enforces turn (``max_iterations``) and token budgets,
:class:`LoopGuardHook` stops an agent repeating the same tool call, or a short cycle of calls.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic_ai.messages import ToolCallPart, ToolReturnPart

from nestor.core.events import StopReason as StopReason  # hooks and the tree name a stop by it
from nestor.core.permission import PermissionRequest
from nestor.core.prompts import UserPrompt
from nestor.core.usage import Usage

if TYPE_CHECKING:
    from nestor.runtime.kernel.permission_gate import HookAnswer
    from nestor.runtime.kernel.setup import RunResult


@dataclass(slots=True)
class RunState:
    """What hooks may read about the run in progress."""

    agent_id: str
    agent_type: str
    num_turns: int = 0
    """Model requests made so far in this run (what ``max_iterations`` limits)."""
    usage: Usage = field(default_factory=Usage)
    started_at: float = field(default_factory=time.monotonic)
    tool_calls: int = 0
    context_tokens: int = 0
    """The estimated size of the next request, updated before each request's hooks run."""
    last_text: str = ""
    """The last text the agent wrote in this run (its answer, once the run ends)."""

    @property
    def elapsed_s(self) -> float:
        """Seconds since the run started."""
        return time.monotonic() - self.started_at


@dataclass(frozen=True, slots=True)
class Stop:
    """Returned by :meth:`Hook.before_request` to end the run before the next request."""

    reason: StopReason
    message: str


@dataclass(frozen=True, slots=True)
class Remind:
    """Returned by :meth:`Hook.before_request` to add a system reminder to the next request."""

    text: str


HookAction = Stop | Remind | None


@dataclass(frozen=True, slots=True)
class ToolCallChange:
    """Returned by :meth:`Hook.before_tool_call` to run a call otherwise.

    Attributes:
        args: The arguments to run it with instead of the model's (None: the model's).
        permission: ``allow``: what the rules would ask about runs without asking (a deny rule
            still refuses, and what is always asked still is); ``ask``: the user is asked even
            where a rule allows (refused where nobody can answer); None: the rules decide.
        reason: Why, shown with a question it causes.

    """

    args: dict[str, Any] | None = None
    permission: Literal["allow", "ask"] | None = None
    reason: str = ""


class Hook:
    """Base class of hooks; every method is a no-op until overridden."""

    async def before_run(self, state: RunState, prompt: UserPrompt | None) -> HookAction:
        """Called when a run starts on ``prompt`` (None: queued notices alone), before it is stored.

        :class:`Stop` drops the prompt and ends the run; :class:`Remind` adds its text to the prompt.
        """
        return None

    async def before_request(self, state: RunState) -> HookAction:
        """Called before each model request; return :class:`Stop`, :class:`Remind` or None."""
        return None

    async def before_tool_call(self, state: RunState, call: ToolCallPart) -> str | ToolCallChange | None:
        """Called before each tool call; a refusal the model sees instead, a change, or None to run it."""
        return None

    async def permission_request(
        self, state: RunState, call: ToolCallPart, request: PermissionRequest
    ) -> HookAnswer | None:
        """Called when the rules leave ``request`` to the user; answer it, or None to let the user."""
        return None

    async def on_permission_prompt(self, state: RunState, request: PermissionRequest) -> None:
        """Called when the user is about to be asked about ``request``."""

    async def before_compact(self, agent_id: str, trigger: str, instructions: str | None) -> bool:
        """Called before a compaction of the agent's history; False skips it."""
        return True

    async def after_compact(self, agent_id: str, trigger: str, summary: str) -> None:
        """Called after a compaction, with the summary that replaced the older history."""

    async def after_tool_result(
        self, state: RunState, call: ToolCallPart, result: ToolReturnPart
    ) -> ToolReturnPart:
        """Called after each tool call; return the result the model should see."""
        return result

    async def before_finish(self, state: RunState, text: str) -> Remind | None:
        """Called when the model answered ``text`` without a tool call; Remind sends it back to work."""
        return None

    async def final_turn(self, state: RunState, reason: StopReason, message: str) -> str | None:
        """Called when the run was stopped by ``reason``; a prompt asks for one last tool-less answer."""
        return None

    async def on_run_end(self, state: RunState, result: RunResult) -> None:
        """Called once when a run ends, whatever the reason."""


@dataclass(frozen=True, slots=True)
class Budgets:
    """Limits of one run; 0 means unlimited.

    Attributes:
        max_iterations: Model requests per run.
        max_total_tokens: Input plus output tokens over the run's requests.
        max_time_s: Wall time of the run (enforced by the loop as a deadline, so a slow model
            request or command is interrupted too).

    """

    max_iterations: int = 1000
    max_total_tokens: int = 0
    max_time_s: float = 0.0


TREE_SPENDING = " of the main agent and its sub-agents together"


@dataclass(slots=True)
class TreeBudget:
    """The main agent's run budgets, spent by the main agent and every sub-agent together.

    One object is shared by every agent of a tree: each records its model requests here, and each
    stops (with its report turn) once the tree's total reaches a limit. The main agent starts it
    anew with each prompt; runs on background notices alone go on spending the same budget.

    Attributes:
        budgets: The limits (the main agent's ``--max-iterations``, ``--max-tokens``, ``--max-time``).
        requests: Model requests of the tree since :meth:`start`.
        total_tokens: Input plus output tokens of those requests.
        deadline: ``time.monotonic()`` at which the tree's time is up; None without a time limit.

    """

    budgets: Budgets
    requests: int = 0
    total_tokens: int = 0
    deadline: float | None = None

    def start(self) -> None:
        """Begin a new budget: nothing spent, the clock from now."""
        self.requests = 0
        self.total_tokens = 0
        max_time_s = self.budgets.max_time_s
        self.deadline = time.monotonic() + max_time_s if max_time_s else None

    def record(self, usage: Usage) -> None:
        """Count one model request of any agent of the tree."""
        self.requests += 1
        self.total_tokens += usage.total_tokens

    def spent(self) -> Stop | None:
        """The stop of an agent of this tree once a request or token limit is reached, else None."""
        return over_budget(self.budgets, self.requests, self.total_tokens, by=TREE_SPENDING)


def over_budget(budgets: Budgets, requests: int, total_tokens: int, *, by: str = "") -> Stop | None:
    """The stop once ``requests`` or ``total_tokens`` reach their limit in ``budgets``, else None.

    ``by`` says whose spending it is when it is not the run's own (a tree's).
    """
    if budgets.max_iterations and requests >= budgets.max_iterations:
        said = f"Stopped after {requests} model requests{by} (max_iterations = {budgets.max_iterations})."
        return Stop("max_iterations", said)
    if budgets.max_total_tokens and total_tokens >= budgets.max_total_tokens:
        said = f"Stopped after {total_tokens} tokens{by} (max_tokens = {budgets.max_total_tokens})."
        return Stop("token_budget", said)
    return None


class BudgetHook(Hook):
    """Ends a run gracefully when its turn or token budget, or its tree's, is spent."""

    def __init__(self, budgets: Budgets, tree: TreeBudget | None = None) -> None:
        self.budgets = budgets
        self.tree = tree

    async def before_request(self, state: RunState) -> HookAction:
        """Stop before a request that would exceed a budget."""
        stop = over_budget(self.budgets, state.num_turns, state.usage.total_tokens)
        if stop is None and self.tree is not None:
            return self.tree.spent()
        return stop


class LoopGuardHook(Hook):
    """Stops an agent that keeps making the same tool call, or the same few calls in a cycle.

    A call (name and arguments) made more than ``max_repeats`` times among the last ``window``
    calls earns one reminder in the next request; made once more after that, the run stops with
    ``stop_reason = "loop"``. Small models in particular repeat a call after getting its result.

    The calls of one response form one step (their order within the response does not matter).
    Steps that repeat a cycle of 2 to ``max_period`` steps (A, B, A, B, ...) ``cycle_repeats``
    times in a row earn the same reminder, then the same stop at the next step on the cycle: an
    agent alternating two calls never repeats one often enough in the window for the first rule.
    """

    def __init__(
        self, max_repeats: int = 5, window: int = 10, *, max_period: int = 4, cycle_repeats: int = 3
    ) -> None:
        self.max_repeats = max_repeats
        self.max_period = max_period
        self.cycle_repeats = cycle_repeats
        self._recent: deque[str] = deque(maxlen=window)
        self._totals: Counter[str] = Counter()
        self._reminded_at: dict[str, int] = {}
        self._pending: list[str] = []
        self._steps: deque[tuple[str, ...]] = deque(maxlen=max_period * cycle_repeats)
        self._step_count = 0
        self._cycle_reminded_at: dict[tuple[tuple[str, ...], ...], int] = {}

    async def after_tool_result(
        self, state: RunState, call: ToolCallPart, result: ToolReturnPart
    ) -> ToolReturnPart:
        """Remember the call."""
        signature = f"{call.tool_name} {call.args_as_json_str()}"
        self._recent.append(signature)
        self._totals[signature] += 1
        self._pending.append(signature)
        return result

    async def before_request(self, state: RunState) -> HookAction:
        """Remind, then stop, when one call fills the recent window or the last steps go round a cycle."""
        if self._pending:
            self._steps.append(tuple(sorted(self._pending)))
            self._pending.clear()
            self._step_count += 1
        return self._check_repeats() or self._check_cycle()

    def _check_repeats(self) -> HookAction:
        if not self._recent:
            return None
        signature, repeats = Counter(self._recent).most_common(1)[0]
        if repeats <= self.max_repeats:
            return None
        name = signature.split(" ", 1)[0]
        reminded_at = self._reminded_at.get(signature)
        if reminded_at is None:
            self._reminded_at[signature] = self._totals[signature]
            return Remind(
                f"You have called {name} with the same arguments {repeats} times in your last "
                f"{len(self._recent)} tool calls, and it gives the same result. Do not call it again: "
                "answer with what you know, or try something different."
            )
        if self._totals[signature] > reminded_at:
            return Stop("loop", f"Stopped: {name} was called with the same arguments again after a reminder.")
        return None

    def _check_cycle(self) -> HookAction:
        cycle = _cycle(list(self._steps), self.max_period, self.cycle_repeats)
        if cycle is None:
            return None
        key = min(cycle[i:] + cycle[:i] for i in range(len(cycle)))  # the same cycle, whatever its phase
        names = ", ".join("+".join(call.split(" ", 1)[0] for call in step) for step in cycle)
        reminded_at = self._cycle_reminded_at.get(key)
        if reminded_at is None:
            self._cycle_reminded_at[key] = self._step_count
            return Remind(
                f"You are repeating the same {len(cycle)} tool calls in a cycle ({names}), "
                f"{self.cycle_repeats} times over with the same arguments, and they give the same "
                "results. Do not repeat them again: answer with what you know, or try something different."
            )
        if self._step_count > reminded_at:
            return Stop(
                "loop",
                f"Stopped: the agent kept repeating the same {len(cycle)} tool calls in a cycle "
                f"({names}) after a reminder.",
            )
        return None

    async def on_run_end(self, state: RunState, result: RunResult) -> None:
        """Start the next run with a clean slate."""
        self._recent.clear()
        self._totals.clear()
        self._reminded_at.clear()
        self._pending.clear()
        self._steps.clear()
        self._step_count = 0
        self._cycle_reminded_at.clear()


def _cycle(steps: list[tuple[str, ...]], max_period: int, repeats: int) -> tuple[tuple[str, ...], ...] | None:
    """The shortest cycle of 2 to ``max_period`` steps that the last steps repeat ``repeats`` times."""
    for period in range(2, max_period + 1):
        if len(steps) < period * repeats:
            break
        block = tuple(steps[-period:])
        if steps[-period * repeats :] != list(block) * repeats:
            continue
        # A block that is itself a shorter cycle (A, A or A, B, A, B) belongs to a shorter period.
        if any(period % d == 0 and block == block[:d] * (period // d) for d in range(1, period)):
            continue
        return block
    return None
