"""SessionAgent: one agent's turn loop over one stored session.

A run takes a prompt and loops: ask the model (streamed, retried on transient failures), store
the response, run its tool calls in parallel, store their results, until the model answers without
calling a tool, a hook stops the run (a budget is spent), the wall-time deadline passes, or the run
is cancelled. Every completed message is written to the store as soon as it completes, so a killed
process loses at most the response being streamed. Nothing here prints: everything the user sees
is an event on the bus.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import ValidationError
from pydantic_ai.exceptions import ModelContextWindowExceededError
from pydantic_ai.messages import (
    InstructionPart,
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    SystemPromptPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import ToolDefinition

from nestor.bus import EventBus
from nestor.core.errors import ModelRequestError, PermissionDeniedError, ToolError
from nestor.core.events import (
    AgentFinished,
    AgentStarted,
    Compacted,
    CompactionStarted,
    ErrorEvent,
    PromptQueued,
    RequestFinished,
    Retrying,
    ToolFinished,
    ToolStarted,
)
from nestor.core.ids import new_id
from nestor.core.usage import Usage
from nestor.permissions import PermissionPolicy
from nestor.providers.build import DEFAULT_CONTEXT_WINDOW
from nestor.providers.retry import RetryPolicy
from nestor.providers.usage import usage_from_response
from nestor.runtime.features.compaction import (
    SUMMARY_INSTRUCTIONS,
    CompactionMark,
    CompactionTrigger,
    SummaryModel,
    find_cut,
    load_visible_history,
    measured_from,
    render_transcript,
    summarizer_prompt,
    summary_message,
)
from nestor.runtime.features.small.harness import SmallModelHarness
from nestor.runtime.features.small.retrieval import ToolOutcome
from nestor.runtime.kernel.context import ContextPolicy, context_tokens, fixed_tokens
from nestor.runtime.kernel.history import repair as history_repair
from nestor.runtime.kernel.hooks import (
    BudgetHook,
    Budgets,
    Hook,
    LoopGuardHook,
    Remind,
    RunState,
    Stop,
    StopReason,
    TreeBudget,
)
from nestor.runtime.kernel.model_call import ModelCall, is_context_overflow, response_text
from nestor.runtime.kernel.permission_gate import PermissionAsker, PermissionGate
from nestor.store.messages import MessageStore
from nestor.store.sessions import SessionStore
from nestor.tools.base import Tool, ToolContext, ToolResult

_PREVIEW_CHARS = 200
_RETRY_COMPACTION_AFTER = 4
_REPORTABLE_STOPS = frozenset({"max_iterations", "token_budget", "timeout", "loop"})
FINAL_TURN_TIMEOUT_S = 120.0
"""Longest wait for the tool-less report a hook asks for after a budget or time stop."""


@dataclass(slots=True)
class RunResult:
    """How a run ended and what it produced."""

    stop_reason: StopReason
    text: str
    usage: Usage
    num_turns: int
    duration_s: float
    is_error: bool = False
    error: str | None = None
    hint: str | None = None


@dataclass(slots=True)
class AgentSetup:
    """Everything a :class:`SessionAgent` needs besides its session id.

    Attributes:
        model: The pydantic-ai model to request.
        model_name: ``provider:model``, for events and the store.
        system_prompt: Sent as instructions with every request; never stored in the history, so a
            resumed session gets a fresh one (current date, git status).
        tools: The tools this agent may call.
        sessions: Session rows (status, usage roll-up).
        messages: Message rows.
        bus: Where events go.
        policy: Permission rules and grants.
        asker: Asks the user; None in headless runs (then "ask" means "deny").
        project_root: Working directory of tools.
        scratch_dir: This session's directory for temporary files (large tool results, ...);
            tools may read it without asking. Created on first use.
        model_settings: Per-model options (max_tokens, temperature, thinking, ...).
        priced: Whether public price tables apply to this model (see ``BuiltModel.priced``).
        context: When to compact the history; None never compacts on its own (``compact()`` still
            works, with the default window).
        summarizer: The model that writes compaction summaries; None uses the agent's own model.
        brief_tools: Describe tools in one line each and drop schema titles (small local models,
            where every prompt token costs time).
        hooks: Extra hooks, after the built-in budget hook.
        budgets: Iteration, token and time limits of a run.
        tree_budget: The main agent's budgets, shared by every agent of its tree (the main agent
            starts it with each prompt); None for an agent outside a tree.
        retry: Retry policy for model requests.
        stream_idle_timeout_s: Give up (then retry once) a model stream silent for this many
            seconds; None waits as long as the provider's client (the in-process model, whose
            first token can take minutes on a long prompt).
        sleep: Waits between retries (tests inject a fast one).
        agent_type: The agent spec's name, for events.
        parent_id: Parent agent id, for sub-agents.
        depth: 0 for the main agent.
        description: What the agent was asked to do, in a few words (a sub-agent's task), for events.
        harness: Runs each new prompt through the small-model harness instead of the open tool
            loop (see :mod:`nestor.runtime.features.small.harness`); None for capable models.

    """

    model: Model
    model_name: str
    system_prompt: str
    tools: Sequence[Tool[Any]]
    sessions: SessionStore
    messages: MessageStore
    bus: EventBus
    policy: PermissionPolicy
    asker: PermissionAsker | None
    project_root: Path
    scratch_dir: Path | None = None
    model_settings: ModelSettings | None = None
    priced: bool = True
    context: ContextPolicy | None = None
    summarizer: SummaryModel | None = None
    brief_tools: bool = False
    hooks: Sequence[Hook] = ()
    budgets: Budgets = field(default_factory=Budgets)
    tree_budget: TreeBudget | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    stream_idle_timeout_s: float | None = None
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    agent_type: str = "coder"
    parent_id: str | None = None
    depth: int = 0
    description: str = ""
    harness: SmallModelHarness | None = None


class SessionAgent:
    """Runs turns of one session: the model, its tools, persistence and events."""

    def __init__(self, session_id: str, setup: AgentSetup, history: list[ModelMessage] | None = None) -> None:
        self.session_id = session_id
        self.setup = setup
        self.history: list[ModelMessage] = (
            history if history is not None else load_visible_history(setup.messages, session_id)
        )
        self._tools = {tool.name: tool for tool in setup.tools}
        self._tool_definitions = self._define_tools()
        self.set_system_prompt(setup.system_prompt)
        # After a compaction that could not get under the threshold, wait for this many messages
        # before trying again, instead of paying for a futile summary at every request.
        self._no_auto_compaction_before = 0
        self._budget_hook = BudgetHook(setup.budgets, setup.tree_budget)
        self._hooks: list[Hook] = [self._budget_hook, LoopGuardHook(), *setup.hooks]
        self._gate = PermissionGate(setup.policy, setup.asker, setup.bus, session_id)
        self._queue: list[str] = []
        self._task: asyncio.Task[RunResult] | None = None
        self._cancel_requested = False
        self._cancel_listeners: list[Callable[[], None]] = []

    # -- public API -------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        """True while a run is in progress."""
        return self._task is not None and not self._task.done()

    def enqueue(self, prompt: str) -> None:
        """Queue a prompt sent while busy; the run takes it at its next turn."""
        self._queue.append(prompt)
        self.setup.bus.publish(PromptQueued(agent_id=self.session_id, prompt=prompt))

    def deliver(self, text: str) -> None:
        """Put ``text`` (a background agent's notice) into the next model request, without an event.

        Taken at the next turn of the run in progress, or at the start of the next run.
        """
        self._queue.append(text)

    @property
    def has_pending(self) -> bool:
        """True when prompts or notices wait for the next run."""
        return bool(self._queue)

    def add_cancel_listener(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` whenever this agent is cancelled (it cancels the agent's descendants)."""
        self._cancel_listeners.append(listener)

    def _define_tools(self) -> list[ToolDefinition]:
        brief = self.setup.brief_tools
        return [
            ToolDefinition(
                name=t.name,
                description=t.brief_description if brief else t.description,
                parameters_json_schema=_brief_schema(t.parameters_schema(), t.brief_parameters)
                if brief
                else t.parameters_schema(),
            )
            for t in self.setup.tools
        ]

    def _refresh_tools(self) -> None:
        """Re-read tool descriptions at each run: the task tool lists agent files as they are now."""
        definitions = self._define_tools()
        if definitions != self._tool_definitions:
            self._tool_definitions = definitions
            self.set_system_prompt(self.setup.system_prompt)

    def set_system_prompt(self, system_prompt: str) -> None:
        """Use ``system_prompt`` from the next request on (a pooled agent's prompt, regenerated per task)."""
        self.setup.system_prompt = system_prompt
        self._request_parameters = ModelRequestParameters(
            function_tools=self._tool_definitions,
            allow_text_output=True,
            instruction_parts=[InstructionPart(content=system_prompt)] if system_prompt else None,
        )
        self._fixed_tokens = fixed_tokens(system_prompt, self._tool_definitions)

    def set_budgets(self, budgets: Budgets) -> None:
        """Use ``budgets`` from the next run on (each task of a sub-agent brings its own)."""
        self.setup.budgets = budgets
        self._budget_hook.budgets = budgets

    def cancel(self) -> None:
        """Stop the current run (and every descendant) as soon as possible; completed messages are kept."""
        for listener in list(self._cancel_listeners):
            listener()
        if self._task is not None and not self._task.done():
            self._cancel_requested = True
            self._task.cancel()

    async def run(self, prompt: str | None) -> RunResult:
        """Run until the model is done with ``prompt`` (and anything queued meanwhile).

        ``None`` runs on what is queued alone (prompts, background notices).
        """
        if self.busy:
            raise RuntimeError("SessionAgent.run called while a run is in progress; use enqueue()")
        self._task = asyncio.current_task()
        self._cancel_requested = False
        if prompt is not None and self.setup.depth == 0 and self.setup.tree_budget is not None:
            self.setup.tree_budget.start()
        try:
            result = await self._run(prompt)
            # Prompts queued after the last turn took the queue (while the run was finishing)
            # start the next run at once instead of waiting for a prompt that may never come.
            while result.stop_reason == "completed" and self._queue:
                result = await self._run(None)
            return result
        finally:
            self._task = None

    # -- the loop ---------------------------------------------------------------------------

    async def _run(self, prompt: str | None) -> RunResult:
        setup = self.setup
        state = RunState(agent_id=self.session_id, agent_type=setup.agent_type)
        self._refresh_tools()
        setup.sessions.set_status(self.session_id, "running")
        setup.bus.publish(
            AgentStarted(
                agent_id=self.session_id,
                parent_id=setup.parent_id,
                depth=setup.depth,
                agent_type=setup.agent_type,
                description=setup.description,
                model=setup.model_name,
            )
        )
        unanswered = history_repair(self.history)
        if unanswered is not None:
            self._append(unanswered)
        # Prompts left queued by a run that did not complete go first, in the order they came.
        prompts = self._take_queue() + ([UserPromptPart(prompt)] if prompt is not None else [])
        self._append(ModelRequest(parts=prompts))
        deadline = (time.monotonic() + setup.budgets.max_time_s) if setup.budgets.max_time_s else None
        tree_deadline = setup.tree_budget.deadline if setup.tree_budget is not None else None
        tree_time_is_shorter = tree_deadline is not None and (deadline is None or tree_deadline < deadline)
        if tree_time_is_shorter:
            deadline = tree_deadline
        stop_reason: StopReason = "completed"
        stop_message: str | None = None
        error: BaseException | None = None
        time_limit = asyncio.timeout_at(_loop_deadline(deadline))
        try:
            async with time_limit:
                if setup.harness is not None:
                    host = _HarnessHost(self, state)
                    state.last_text = await setup.harness.run_turn(host, _prompt_text(prompts)) or ""
                    if host.stop is not None:
                        stop_reason, stop_message = host.stop.reason, host.stop.message
                else:
                    stop = await self._tool_loop(state)
                    if stop is not None:
                        stop_reason, stop_message = stop.reason, stop.message
        except TimeoutError as exc:
            if not time_limit.expired():  # a hook's own TimeoutError is an error, not the budget
                stop_reason, error = "error", exc
            else:
                stop_reason = "timeout"
                stop_message = (
                    f"Stopped: the main agent and sub-agents reached the time limit of "
                    f"{setup.tree_budget.budgets.max_time_s:g} s (max_time_s)."
                    if tree_time_is_shorter and setup.tree_budget is not None
                    else f"Stopped after {setup.budgets.max_time_s:g} s (max_time_s)."
                )
        except asyncio.CancelledError:
            self._absorb_cancel()
            stop_reason, stop_message = "cancelled", "Cancelled by the user."
        except Exception as exc:  # the run ends; the error is reported, never a crash of the caller
            stop_reason, error = "error", exc
        if stop_reason in _REPORTABLE_STOPS:
            try:
                state.last_text = (
                    await self._final_turn(state, stop_reason, stop_message or "") or state.last_text
                )
            except asyncio.CancelledError:
                self._absorb_cancel()
                stop_reason, stop_message = "cancelled", "Cancelled by the user."
        return await self._finish(state, stop_reason, stop_message, state.last_text, error)

    async def _tool_loop(self, state: RunState) -> Stop | None:
        """Request, run the calls, repeat, until the model answers without a call or a hook stops it.

        The last text the model wrote is kept in ``state.last_text`` as the run goes (a time-out
        or a cancel ends it anywhere). Returns the hook's stop if one stopped the run.
        """
        while True:
            action = await self._before_request(state)
            if isinstance(action, Stop):
                return action
            response = await self._request(state, reminder=action.text if action else None)
            state.last_text = response_text(response) or state.last_text
            calls = [part for part in response.parts if isinstance(part, ToolCallPart)]
            if calls:
                results = await self._run_tools(state, calls)
                self._append(ModelRequest(parts=[*results, *self._take_queue()]))
                continue
            queued = self._take_queue()
            if not queued:
                reminder = await self._before_finish(state, state.last_text)
                if reminder is None:
                    return None
                queued = [UserPromptPart(f"<system-reminder>{reminder}</system-reminder>")]
            self._append(ModelRequest(parts=queued))

    def _absorb_cancel(self) -> None:
        """Turn a cancel of this run by :meth:`cancel` into a normal end; re-raise any other cancel."""
        if not self._cancel_requested:
            raise asyncio.CancelledError
        current = asyncio.current_task()
        if current is not None:
            current.uncancel()

    async def _before_finish(self, state: RunState, text: str) -> str | None:
        reminders = [
            action.text
            for hook in self._hooks
            if (action := await hook.before_finish(state, text)) is not None
        ]
        return "\n\n".join(reminders) or None

    async def _final_turn(self, state: RunState, reason: StopReason, message: str) -> str | None:
        """Ask for one last answer without tools when a hook wants a report of a stopped run.

        Returns the answer's text, or None when no hook asked or the request failed (the run's
        stop reason stands either way; a failed report must not turn a budget stop into an error).
        """
        prompts = [p for hook in self._hooks if (p := await hook.final_turn(state, reason, message))]
        if not prompts:
            return None
        unanswered = history_repair(self.history)
        if unanswered is not None:
            self._append(unanswered)
        self._append(ModelRequest(parts=[UserPromptPart("\n\n".join(prompts))]))
        setup = self.setup
        parameters = ModelRequestParameters(
            function_tools=[],
            allow_text_output=True,
            instruction_parts=self._request_parameters.instruction_parts,
        )
        call = ModelCall(
            setup.model,
            setup.model_settings,
            parameters,
            setup.retry,
            setup.sleep,
            setup.stream_idle_timeout_s,
        )
        try:
            async with asyncio.timeout(FINAL_TURN_TIMEOUT_S):
                response = await call.request(
                    self.history, agent_id=self.session_id, publish=setup.bus.publish, stream_text=True
                )
        except (ModelRequestError, TimeoutError) as exc:
            setup.bus.publish(
                ErrorEvent(agent_id=self.session_id, message=f"the final report request failed: {exc}")
            )
            return None
        self._record(state, response)
        return response_text(response) or None

    async def _before_request(self, state: RunState) -> Stop | Remind | None:
        state.context_tokens = self.context_tokens()
        reminders: list[str] = []
        for hook in self._hooks:
            action = await hook.before_request(state)
            if isinstance(action, Stop):
                return action
            if isinstance(action, Remind):
                reminders.append(action.text)
        return Remind("\n\n".join(reminders)) if reminders else None

    async def _request(self, state: RunState, *, reminder: str | None) -> ModelResponse:
        """Send the history (plus an optional reminder) and store the response.

        Compacts first when the request would pass the context threshold, and once more (then
        retries) when the provider rejects it as too long.
        """
        if self._auto_compacts and len(self.history) >= self._no_auto_compaction_before:
            policy = self._policy
            if self.context_tokens() > policy.threshold_tokens:
                await self._compact_or_warn(state)
        try:
            response = await self._send(reminder)
        except ModelRequestError as exc:
            if not (self._auto_compacts and is_context_overflow(exc)):
                raise
            if await self._compact("overflow", state=state) is None:
                raise
            response = await self._send(reminder)
        if _is_empty(response):
            # Neither text nor a tool call: not kept (an empty assistant turn is what some
            # providers reject), but it was paid for. Asked once more, then the run fails.
            self._count_unstored(state, response)
            reason = "the model returned an empty reply"
            self.setup.bus.publish(Retrying(agent_id=self.session_id, attempt=1, delay_s=0.0, reason=reason))
            response = await self._send(reminder)
            if _is_empty(response):
                self._count_unstored(state, response)
                raise ModelRequestError(
                    f"the model {self.setup.model_name} returned an empty reply twice",
                    hint="try again, or use another model with --model",
                )
        self._record(state, response)
        return response

    def _record(self, state: RunState, response: ModelResponse) -> None:
        """Count a response in the run, store it (its usage joins the totals) and publish its usage."""
        usage = self._count(state, response)
        self._append(response, usage=usage)
        self._publish_usage(state, usage)

    def _count_unstored(self, state: RunState, response: ModelResponse) -> None:
        """Count a response that is not kept in the history: budgets, totals and events as usual."""
        usage = self._count(state, response)
        self.setup.sessions.add_usage(self.session_id, usage)
        self._publish_usage(state, usage)

    def _count(self, state: RunState, response: ModelResponse) -> Usage:
        setup = self.setup
        usage = usage_from_response(response, priced=setup.priced)
        state.iteration += 1
        state.usage.add(usage)
        if setup.tree_budget is not None:
            setup.tree_budget.record(usage)
        return usage

    def _publish_usage(self, state: RunState, usage: Usage) -> None:
        setup = self.setup
        setup.bus.publish(
            RequestFinished(
                agent_id=self.session_id,
                model=setup.model_name,
                usage=usage.to_dict(),
                run_usage=state.usage.to_dict(),
            )
        )

    async def _send(self, reminder: str | None) -> ModelResponse:
        messages = self.history
        if reminder:
            messages = [
                *messages,
                ModelRequest(parts=[SystemPromptPart(f"<system-reminder>{reminder}</system-reminder>")]),
            ]
        setup = self.setup
        # Built per request: the setup's model and settings may be changed between requests.
        call = ModelCall(
            setup.model,
            setup.model_settings,
            self._request_parameters,
            setup.retry,
            setup.sleep,
            setup.stream_idle_timeout_s,
        )
        return await call.request(
            messages, agent_id=self.session_id, publish=setup.bus.publish, stream_text=True
        )

    # -- context ----------------------------------------------------------------------------

    @property
    def _policy(self) -> ContextPolicy:
        return self.setup.context or ContextPolicy(context_window=DEFAULT_CONTEXT_WINDOW)

    @property
    def _auto_compacts(self) -> bool:
        return self.setup.context is not None and self.setup.context.auto_compact

    def context_tokens(self) -> int:
        """The size in tokens of the next request with the history as it is now (an estimate)."""
        return context_tokens(
            self.history, fixed=self._fixed_tokens, trusted_from=measured_from(self.history)
        )

    async def compact(
        self, instructions: str | None = None, *, keep_recent_tokens: int | None = None
    ) -> Compacted | None:
        """Summarise the older part of the history now (``/compact``), optionally with a focus.

        Returns the :class:`Compacted` event, or None when there was nothing to summarise.

        Raises:
            RuntimeError: A run is in progress.
            ModelRequestError: The summary request failed; the history is unchanged.

        """
        if self.busy:
            raise RuntimeError("cannot compact while a run is in progress")
        return await self._compact("manual", instructions=instructions, keep_recent_tokens=keep_recent_tokens)

    async def _compact_or_warn(self, state: RunState) -> None:
        """Compact at the threshold; a failed summary is reported and the run goes on uncompacted."""
        try:
            await self._compact("threshold", state=state)
        except ModelRequestError as exc:
            self.setup.bus.publish(
                ErrorEvent(
                    agent_id=self.session_id,
                    message=f"compaction failed, continuing without it: {exc}",
                    hint=exc.hint,
                )
            )
            self._no_auto_compaction_before = len(self.history) + _RETRY_COMPACTION_AFTER

    async def _compact(
        self,
        trigger: CompactionTrigger,
        *,
        state: RunState | None = None,
        instructions: str | None = None,
        keep_recent_tokens: int | None = None,
    ) -> Compacted | None:
        """Replace the older part of the visible history by a stored summary; None if nothing to do."""
        setup = self.setup
        policy = self._policy
        keep = policy.keep_recent_tokens if keep_recent_tokens is None else keep_recent_tokens
        cut = find_cut(self.history, keep)
        if cut is None:
            return None
        before = self.context_tokens()
        publish = setup.bus.publish
        publish(
            CompactionStarted(
                agent_id=self.session_id,
                trigger=trigger,
                context_tokens=before,
                context_window=policy.context_window,
            )
        )
        started = time.monotonic()
        summarizer = setup.summarizer or SummaryModel(
            model=setup.model,
            name=setup.model_name,
            settings=setup.model_settings,
            priced=setup.priced,
            context_window=policy.context_window,
        )
        kept = self.history[cut:]
        transcript = render_transcript(self.history[:cut], summarizer.transcript_chars)
        call = ModelCall(
            model=summarizer.model,
            settings=summarizer.settings,
            parameters=ModelRequestParameters(
                allow_text_output=True, instruction_parts=[InstructionPart(content=SUMMARY_INSTRUCTIONS)]
            ),
            retry=setup.retry,
            sleep=setup.sleep,
        )
        prompt = ModelRequest(parts=[UserPromptPart(summarizer_prompt(transcript, instructions))])
        response = await call.request([prompt], agent_id=self.session_id, publish=publish, stream_text=False)
        summary = response_text(response).strip()
        if not summary:
            raise ModelRequestError(
                f"the summary model {summarizer.name} returned an empty summary",
                hint="try /compact again, or configure another [models] large model",
            )
        usage = usage_from_response(response, priced=summarizer.priced)
        mark = CompactionMark(
            kept_messages=len(kept), summarized_messages=cut, trigger=trigger, tokens_before=before
        )
        message = summary_message(summary, mark)
        setup.messages.append(self.session_id, message, usage=usage, add_to_totals=True)
        if state is not None:
            state.usage.add(usage)
        self.history = [message, *kept]
        after = self.context_tokens()
        futile = after > policy.threshold_tokens
        self._no_auto_compaction_before = len(self.history) + _RETRY_COMPACTION_AFTER if futile else 0
        event = Compacted(
            agent_id=self.session_id,
            trigger=trigger,
            tokens_before=before,
            tokens_after=after,
            summarized_messages=cut,
            kept_messages=len(kept),
            usage=usage.to_dict(),
            duration_s=time.monotonic() - started,
        )
        publish(event)
        return event

    # -- tools ------------------------------------------------------------------------------

    async def _run_tools(self, state: RunState, calls: list[ToolCallPart]) -> list[ToolReturnPart]:
        """Run ``calls`` in parallel; on cancellation, record the unfinished ones as interrupted."""
        results: dict[str, ToolReturnPart] = {}

        async def run_one(call: ToolCallPart) -> None:
            result = await self._run_tool(state, call)
            for hook in self._hooks:
                result = await hook.after_tool_result(state, call, result)
            results[call.tool_call_id] = result

        tasks = [asyncio.create_task(run_one(call)) for call in calls]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self._append(ModelRequest(parts=_with_interrupted(calls, results)))
            raise
        finally:
            state.tool_calls += len(calls)
        return [results[call.tool_call_id] for call in calls]

    async def _run_tool(self, state: RunState, call: ToolCallPart) -> ToolReturnPart:
        publish = self.setup.bus.publish
        started = time.monotonic()
        try:
            args = call.args_as_dict()
        except ValueError:
            args = {}
        publish(
            ToolStarted(
                agent_id=self.session_id, tool_call_id=call.tool_call_id, tool_name=call.tool_name, args=args
            )
        )
        outcome, content, metadata = await self._execute(state, call)
        publish(
            ToolFinished(
                agent_id=self.session_id,
                tool_call_id=call.tool_call_id,
                tool_name=call.tool_name,
                outcome=outcome,
                preview=content[:_PREVIEW_CHARS],
                duration_s=time.monotonic() - started,
            )
        )
        return ToolReturnPart(
            call.tool_name, content, tool_call_id=call.tool_call_id, outcome=outcome, metadata=metadata
        )

    async def _execute(
        self, state: RunState, call: ToolCallPart
    ) -> tuple[Literal["success", "failed", "denied", "retried"], str, dict[str, Any] | None]:
        """Run one call: hooks, validation, permission, the tool; never raises but for cancellation."""
        for hook in self._hooks:
            refusal = await hook.before_tool_call(state, call)
            if refusal is not None:
                return "denied", refusal, None
        tool = self._tools.get(call.tool_name)
        if tool is None:
            available = ", ".join(sorted(self._tools)) or "none"
            return "retried", f"Unknown tool {call.tool_name!r}. Available tools: {available}.", None
        try:
            params = tool.params_model.model_validate(call.args_as_dict(raise_if_invalid=True))
        except ValidationError as exc:
            return "retried", _format_validation_error(call.tool_name, exc), None
        except (ValueError, AssertionError) as exc:  # pydantic-ai asserts the JSON is an object
            return (
                "retried",
                f"The arguments of {call.tool_name} are not valid JSON ({exc}). Send a JSON object.",
                None,
            )
        ctx = ToolContext(
            project_root=self.setup.project_root,
            scratch_dir=self.setup.scratch_dir,
            session_id=self.session_id,
            tool_call_id=call.tool_call_id,
            emit=self.setup.bus.publish,
            ask_permission=lambda request: self._gate.allows(request, call.tool_call_id),
            withholds=self._gate.policy.withholds,
        )
        try:
            request = tool.permission(params, ctx)
            if request is not None:
                verdict = await self._gate.settle(request, call.tool_call_id)
                if not verdict.allowed:
                    raise PermissionDeniedError(self._gate.refusal(request, verdict.decision))
            result = await tool.run(params, ctx)
        except PermissionDeniedError as exc:
            return "denied", str(exc), None
        except ToolError as exc:
            return "failed", str(exc), None
        except Exception as exc:  # a tool's bug must not end the run
            return "failed", f"{call.tool_name} failed: {type(exc).__name__}: {exc}", None
        if isinstance(result, str):
            result = ToolResult(result)
        return ("failed" if result.is_error else "success"), result.content, result.metadata or None

    # -- bookkeeping ------------------------------------------------------------------------

    def _append(self, message: ModelMessage, *, usage: Usage | None = None) -> None:
        """Keep ``message`` in memory and in the store; a response's usage joins the session totals."""
        self.history.append(message)
        self.setup.messages.append(self.session_id, message, usage=usage, add_to_totals=usage is not None)

    def _take_queue(self) -> list[ModelRequestPart]:
        queued: list[ModelRequestPart] = [UserPromptPart(prompt) for prompt in self._queue]
        self._queue.clear()
        return queued

    async def _finish(
        self,
        state: RunState,
        stop_reason: StopReason,
        stop_message: str | None,
        last_text: str,
        error: BaseException | None,
    ) -> RunResult:
        setup = self.setup
        is_error = error is not None
        hint: str | None = getattr(error, "hint", None)
        text = last_text
        if stop_message and stop_reason != "completed":
            text = f"{last_text}\n\n[{stop_message}]" if last_text else f"[{stop_message}]"
        if error is not None:
            text = str(error) if isinstance(error, ModelRequestError) else f"{type(error).__name__}: {error}"
            setup.bus.publish(ErrorEvent(agent_id=self.session_id, message=text, hint=hint))
        result = RunResult(
            stop_reason=stop_reason,
            text=text,
            usage=state.usage,
            num_turns=state.iteration,
            duration_s=state.elapsed_s,
            is_error=is_error,
            error=str(error) if error else None,
            hint=hint,
        )
        setup.sessions.set_status(self.session_id, "idle" if stop_reason == "completed" else stop_reason)
        for hook in self._hooks:
            await hook.on_run_end(state, result)
        setup.bus.publish(
            AgentFinished(
                agent_id=self.session_id,
                parent_id=setup.parent_id,
                depth=setup.depth,
                agent_type=setup.agent_type,
                description=setup.description,
                stop_reason=stop_reason,
                result=text,
                is_error=is_error,
                num_turns=state.iteration,
                usage=state.usage.to_dict(),
                cost_usd=state.usage.cost_usd,
                duration_s=result.duration_s,
            )
        )
        return result


@runtime_checkable
class InfillModel(Protocol):
    """A model that can fill in the middle of code (the embedded one): see ``LocalModel.infill``."""

    async def infill(
        self, before: str, after: str, *, max_tokens: int, temperature: float = 0.0, seed: int | None = None
    ) -> ModelResponse | None:
        """The code between ``before`` and ``after`` as a response; None when the model cannot."""
        ...


class _HarnessHost:
    """What the small-model harness drives: an agent's tools and model, within its run's budgets.

    Tool calls the harness makes are stored as a response of the harness (``nestor:harness``, no
    usage) followed by their results, so the session reads like any other; the model's answers
    are stored and counted as usual.
    """

    def __init__(self, agent: SessionAgent, state: RunState) -> None:
        self._agent = agent
        self._state = state
        self.stop: Stop | None = None

    def tool_names(self) -> set[str]:
        return set(self._agent._tools)  # pyright: ignore[reportPrivateUsage]

    async def run_tools(self, calls: Sequence[tuple[str, dict[str, Any]]]) -> list[ToolOutcome]:
        agent = self._agent
        parts = [ToolCallPart(name, args, tool_call_id=f"harness-{new_id('call')}") for name, args in calls]
        agent._append(ModelResponse(parts=list(parts), model_name="harness", provider_name="nestor"))  # pyright: ignore[reportPrivateUsage]
        results = await agent._run_tools(self._state, parts)  # pyright: ignore[reportPrivateUsage]
        agent._append(ModelRequest(parts=list(results)))  # pyright: ignore[reportPrivateUsage]
        return [
            ToolOutcome(
                content=result.model_response_str(),
                metadata=dict(result.metadata or {}),
                ok=result.outcome == "success",
            )
            for result in results
        ]

    async def ask(self, instructions: str, prompt: str, *, max_tokens: int, attempt: int = 0) -> str | None:
        agent = self._agent
        action = await agent._before_request(self._state)  # pyright: ignore[reportPrivateUsage]
        if isinstance(action, Stop):
            self.stop = action
            return None
        setup = agent.setup
        parameters = ModelRequestParameters(
            function_tools=[],
            allow_text_output=True,
            instruction_parts=[InstructionPart(content=instructions)],
        )
        settings: ModelSettings = {**(setup.model_settings or {}), "max_tokens": max_tokens}
        if attempt:
            settings["temperature"] = min(1.0, 0.4 + 0.2 * attempt)
            settings["seed"] = attempt
        call = ModelCall(
            setup.model, settings, parameters, setup.retry, setup.sleep, setup.stream_idle_timeout_s
        )
        response = await call.request(
            [ModelRequest(parts=[UserPromptPart(prompt)])],
            agent_id=agent.session_id,
            publish=setup.bus.publish,
            stream_text=True,
        )
        agent._record(self._state, response)  # pyright: ignore[reportPrivateUsage]
        return response_text(response)

    async def infill(self, before: str, after: str, *, max_tokens: int, attempt: int = 0) -> str | None:
        agent = self._agent
        model = agent.setup.model
        if not isinstance(model, InfillModel):
            return None
        action = await agent._before_request(self._state)  # pyright: ignore[reportPrivateUsage]
        if isinstance(action, Stop):
            self.stop = action
            return None
        try:
            response = await model.infill(
                before,
                after,
                max_tokens=max_tokens,
                temperature=min(1.0, 0.4 + 0.2 * attempt) if attempt else 0.0,
                seed=attempt or None,
            )
        except ModelContextWindowExceededError:
            return None
        if response is None:
            return None
        agent._record(self._state, response)  # pyright: ignore[reportPrivateUsage]
        return response_text(response) or ""


def _is_empty(response: ModelResponse) -> bool:
    """True when a response has neither visible text nor a tool call."""
    return not response_text(response).strip() and not any(
        isinstance(part, ToolCallPart) for part in response.parts
    )


def _prompt_text(parts: Sequence[ModelRequestPart]) -> str:
    """The text of a turn's prompts (and queued notices), in order."""
    return "\n\n".join(
        part.content for part in parts if isinstance(part, UserPromptPart) and isinstance(part.content, str)
    )


def _loop_deadline(deadline: float | None) -> float | None:
    """Translate a ``time.monotonic`` deadline into the event loop's clock."""
    if deadline is None:
        return None
    return asyncio.get_running_loop().time() + (deadline - time.monotonic())


def _with_interrupted(calls: list[ToolCallPart], done: dict[str, ToolReturnPart]) -> list[ModelRequestPart]:
    parts: list[ModelRequestPart] = []
    for call in calls:
        parts.append(
            done.get(call.tool_call_id)
            or ToolReturnPart(
                call.tool_name,
                "Interrupted: the run was stopped before this call finished.",
                tool_call_id=call.tool_call_id,
                outcome="interrupted",
            )
        )
    return parts


def _brief_schema(schema: dict[str, Any], optional: tuple[str, ...] = ()) -> dict[str, Any]:
    """A tool's parameter schema for a small model: required parameters (and ``optional``), no titles.

    Small models fill optional parameters with invented values (a ``path`` that does not exist);
    the tools' defaults serve them better.
    """
    kept = {key: value for key, value in schema.items() if key not in ("title", "description")}
    required = set(kept.get("required", ())) | set(optional)
    properties = kept.get("properties")
    if isinstance(properties, dict):
        kept["properties"] = {name: value for name, value in properties.items() if name in required}  # pyright: ignore[reportUnknownVariableType]
    return _without_titles(kept)


def _without_titles(schema: Any) -> Any:
    """A JSON schema without pydantic's ``title`` keys (they repeat the property names)."""
    if isinstance(schema, dict):
        return {
            key: _without_titles(value)
            for key, value in schema.items()  # pyright: ignore[reportUnknownVariableType]
            if not (key == "title" and isinstance(value, str))
        }
    if isinstance(schema, list):
        return [_without_titles(item) for item in schema]  # pyright: ignore[reportUnknownVariableType]
    return schema


def _format_validation_error(tool_name: str, error: ValidationError) -> str:
    lines = [f"Invalid arguments for {tool_name}; fix them and call it again:"]
    for item in error.errors(include_url=False):
        location = ".".join(str(part) for part in item["loc"]) or "(arguments)"
        lines.append(f"- {location}: {item['msg']}")
    return "\n".join(lines)
