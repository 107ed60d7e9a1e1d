"""SessionAgent: one agent's turn loop over one stored session.

A run takes a prompt and loops: ask the model (streamed, retried on transient failures), store
the response, run its tool calls in parallel, store their results, until the model answers without
calling a tool, a hook stops the run (a budget is spent), the wall-time deadline passes, or the run
is cancelled. Every completed message is written to the store as soon as it completes, so a killed
process loses at most the response being streamed. Nothing here prints: everything the user sees
is an event on the bus. The requests are in ``requests.py``, the tool calls in ``tool_runner.py``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence

from pydantic_ai.messages import (
    InstructionPart,
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestParameters

from nestor.core.events import AgentStarted, Compacted, PromptQueued
from nestor.core.prompts import UserPrompt, prompt_text
from nestor.core.usage import Usage
from nestor.runtime.kernel.context import context_tokens, fixed_tokens
from nestor.runtime.kernel.driver import AgentHost
from nestor.runtime.kernel.history import load_visible_history, measured_from
from nestor.runtime.kernel.history import repair as history_repair
from nestor.runtime.kernel.hooks import (
    BudgetHook,
    Budgets,
    Hook,
    Remind,
    RunState,
    Stop,
    StopReason,
)
from nestor.runtime.kernel.model_call import response_text
from nestor.runtime.kernel.permission_gate import PermissionGate
from nestor.runtime.kernel.requests import Requests, refusal_stop
from nestor.runtime.kernel.setup import AgentSetup, RunResult, finish_run
from nestor.runtime.kernel.tool_runner import ToolRunner
from nestor.runtime.kernel.tool_schema import tool_definitions
from nestor.store.messages import prompt_metadata

_REPORTABLE_STOPS = frozenset({"max_iterations", "token_budget", "timeout", "loop"})
REPORT_GRACE_MIN_S = 2.0
REPORT_GRACE_MAX_S = 45.0
"""The report turn of a run with a time limit ends this long past the limit at most (a tenth of it)."""


class SessionAgent:
    """Runs turns of one session: the model, its tools, persistence and events."""

    def __init__(self, session_id: str, setup: AgentSetup, history: list[ModelMessage] | None = None) -> None:
        self.session_id = session_id
        self.setup = setup
        self.history: list[ModelMessage] = (
            history if history is not None else load_visible_history(setup.messages, session_id)
        )
        self._tool_definitions = tool_definitions(setup.tools, brief=setup.brief_tools)
        self.set_system_prompt(setup.system_prompt)
        self._hooks: list[Hook] = list(setup.hooks)
        gate = PermissionGate(setup.policy, setup.asker, setup.bus, session_id)
        self._tools = ToolRunner(session_id, setup, self._hooks, gate)
        self._requests = Requests(self)
        self._queue: list[UserPrompt] = []
        self._task: asyncio.Task[RunResult] | None = None
        self._cancel_requested = False
        self._cancel_listeners: list[Callable[[], None]] = []

    # -- public API -------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        """True while a run is in progress."""
        return self._task is not None and not self._task.done()

    @property
    def tool_names(self) -> list[str]:
        """The names of this agent's tools."""
        return list(self._tools.tools)

    def enqueue(self, prompt: UserPrompt) -> None:
        """Queue a prompt sent while busy; the run takes it at its next turn."""
        self._queue.append(prompt)
        queued = PromptQueued(agent_id=self.session_id, prompt=prompt_text(prompt, name_files=True))
        self.setup.bus.publish(queued)

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
        for hook in self._hooks:
            if isinstance(hook, BudgetHook):
                hook.budgets = budgets

    def cancel(self) -> None:
        """Stop the current run (and every descendant) as soon as possible; completed messages are kept."""
        for listener in list(self._cancel_listeners):
            listener()
        if self._task is not None and not self._task.done():
            self._cancel_requested = True
            self._task.cancel()

    def context_tokens(self) -> int:
        """The size in tokens of the next request with the history as it is now (an estimate)."""
        return context_tokens(
            self.history, fixed=self._fixed_tokens, trusted_from=measured_from(self.history)
        )

    async def compact(
        self, instructions: str | None = None, *, keep_recent_tokens: int | None = None
    ) -> Compacted | None:
        """Summarise the older part of the history now (``/compact``), optionally with a focus.

        Returns the :class:`Compacted` event, or None when there was nothing to summarise (or
        the agent has no compactor).

        Raises:
            RuntimeError: A run is in progress.
            ModelRequestError: The summary request failed; the history is unchanged.

        """
        if self.busy:
            raise RuntimeError("cannot compact while a run is in progress")
        compactor = self.setup.compactor
        if compactor is None:
            return None
        return await compactor.compact(
            self, "manual", instructions=instructions, keep_recent_tokens=keep_recent_tokens
        )

    def append(self, message: ModelMessage, *, usage: Usage | None = None) -> None:
        """Keep ``message`` in memory and in the store; a response's usage joins the session totals."""
        self.history.append(message)
        self.setup.messages.append(self.session_id, message, usage=usage, add_to_totals=usage is not None)

    async def run(self, prompt: UserPrompt | None) -> RunResult:
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

    async def _run(self, prompt: UserPrompt | None) -> RunResult:
        setup = self.setup
        state = RunState(agent_id=self.session_id, agent_type=setup.agent_type)
        self._refresh_tools()
        setup.sessions.set_status(self.session_id, "running")
        setup.bus.publish(
            AgentStarted(
                agent_id=self.session_id,
                parent_id=setup.parent_id,
                parent_tool_call_id=setup.parent_tool_call_id,
                depth=setup.depth,
                agent_type=setup.agent_type,
                description=setup.description,
                model=setup.model_name,
            )
        )
        unanswered = history_repair(self.history)
        if unanswered is not None:
            self.append(unanswered)
        # Prompts left queued by a run that did not complete go first, in the order they came.
        prompts = self._take_queue() + ([UserPromptPart(prompt)] if prompt is not None else [])
        started = await self._before_run(state, prompt)
        if isinstance(started, Stop):  # a hook dropped the prompt: nothing is stored, nothing asked
            return await finish_run(self, self._hooks, state, (started.reason, started.message), None)
        if started is not None:
            prompts.append(UserPromptPart(f"<system-reminder>{started.text}</system-reminder>"))
        # Marked when a prompt starts it: the prompts of a session are what /rewind and undo name.
        self.append(ModelRequest(parts=prompts, metadata=prompt_metadata() if prompt is not None else None))
        time_limit_s = setup.budgets.max_time_s
        deadline = (time.monotonic() + time_limit_s) if time_limit_s else None
        tree_deadline = setup.tree_budget.deadline if setup.tree_budget is not None else None
        tree_time_is_shorter = tree_deadline is not None and (deadline is None or tree_deadline < deadline)
        if tree_time_is_shorter and setup.tree_budget is not None:
            deadline, time_limit_s = tree_deadline, setup.tree_budget.budgets.max_time_s
        stop_reason: StopReason = "completed"
        stop_message: str | None = None
        error: BaseException | None = None
        time_limit = asyncio.timeout_at(_loop_deadline(deadline))
        try:
            async with time_limit:
                if setup.harness is not None:
                    host = AgentHost(self, state)
                    state.last_text = await setup.harness.run_turn(host, _prompt_text(prompts)) or ""
                    stop = host.stop
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
                    f"{time_limit_s:g} s (max_time_s)."
                    if tree_time_is_shorter
                    else f"Stopped after {time_limit_s:g} s (max_time_s)."
                )
        except asyncio.CancelledError:
            self._absorb_cancel()
            stop_reason, stop_message = "cancelled", "Cancelled by the user."
        except Exception as exc:  # the run ends; the error is reported, never a crash of the caller
            stop_reason, error = "error", exc
        if stop_reason in _REPORTABLE_STOPS:
            report_limit = asyncio.timeout_at(_loop_deadline(_report_deadline(deadline, time_limit_s)))
            try:
                async with report_limit:
                    state.last_text = (
                        await self._final_turn(state, stop_reason, stop_message or "") or state.last_text
                    )
            except TimeoutError:
                if not report_limit.expired():
                    raise
                # The report's own time is up too: the run ends with the stop message.
            except asyncio.CancelledError:
                self._absorb_cancel()
                stop_reason, stop_message = "cancelled", "Cancelled by the user."
        return await finish_run(self, self._hooks, state, (stop_reason, stop_message), error)

    async def _tool_loop(self, state: RunState) -> Stop | None:
        """Request, run the calls, repeat, until the model answers without a call or a hook stops it.

        The last text the model wrote is kept in ``state.last_text`` as the run goes (a time-out
        or a cancel ends it anywhere). Returns the hook's stop if one stopped the run.
        """
        while True:
            action = await self.before_request(state)
            if isinstance(action, Stop):
                return action
            reminder = action.text if action else None
            response = await self._requests.request(state, self._request_parameters, reminder)
            state.last_text = response_text(response) or state.last_text
            if (refused := refusal_stop(response)) is not None:
                return refused
            calls = [part for part in response.parts if isinstance(part, ToolCallPart)]
            if calls:
                results = await self.run_tool_calls(state, calls)
                self.append(ModelRequest(parts=[*results, *self._take_queue()]))
                continue
            queued = self._take_queue()
            if not queued:
                reminders = [
                    a.text for hook in self._hooks if (a := await hook.before_finish(state, state.last_text))
                ]
                if not reminders:
                    return None
                reminder = "\n\n".join(reminders)
                queued = [UserPromptPart(f"<system-reminder>{reminder}</system-reminder>")]
            self.append(ModelRequest(parts=queued))

    def _refresh_tools(self) -> None:
        """Re-read tool descriptions at each run: the task tool lists agent files as they are now."""
        definitions = tool_definitions(self.setup.tools, brief=self.setup.brief_tools)
        if definitions != self._tool_definitions:
            self._tool_definitions = definitions
            self.set_system_prompt(self.setup.system_prompt)

    async def run_tool_calls(self, state: RunState, calls: list[ToolCallPart]) -> list[ToolReturnPart]:
        """Run ``calls`` in parallel (hooks, permission gate, the tools); their results, in order."""
        return await self._tools.run(state, calls, self.append)

    def record_response(self, state: RunState, response: ModelResponse) -> None:
        """Count ``response`` in the run's state and store it (a harness's own model request)."""
        self._requests.record(state, response)

    def _absorb_cancel(self) -> None:
        """Turn a cancel of this run by :meth:`cancel` into a normal end; re-raise any other cancel."""
        if not self._cancel_requested:
            raise asyncio.CancelledError
        current = asyncio.current_task()
        if current is not None:
            current.uncancel()

    async def _final_turn(self, state: RunState, reason: StopReason, message: str) -> str | None:
        """One last tool-less answer when a hook wants a report of a stopped run; None if none asked."""
        prompts = [p for hook in self._hooks if (p := await hook.final_turn(state, reason, message))]
        if not prompts:
            return None
        return await self._requests.final_turn(state, self._request_parameters, "\n\n".join(prompts))

    async def _before_run(self, state: RunState, prompt: UserPrompt | None) -> Stop | Remind | None:
        """The hooks' ``before_run``: the first stop, or their reminders joined."""
        reminders: list[str] = []
        for hook in self._hooks:
            action = await hook.before_run(state, prompt)
            if isinstance(action, Stop):
                return action
            if isinstance(action, Remind):
                reminders.append(action.text)
        return Remind("\n\n".join(reminders)) if reminders else None

    async def before_request(self, state: RunState) -> Stop | Remind | None:
        """Run the hooks' ``before_request`` for the next request: a stop, reminders, or nothing."""
        state.context_tokens = self.context_tokens()
        reminders: list[str] = []
        for hook in self._hooks:
            action = await hook.before_request(state)
            if isinstance(action, Stop):
                return action
            if isinstance(action, Remind):
                reminders.append(action.text)
        return Remind("\n\n".join(reminders)) if reminders else None

    def _take_queue(self) -> list[ModelRequestPart]:
        queued: list[ModelRequestPart] = [UserPromptPart(prompt) for prompt in self._queue]
        self._queue.clear()
        return queued


def _prompt_text(parts: Sequence[ModelRequestPart]) -> str:
    """The text of a turn's prompts (and queued notices), in order; images and files left out."""
    return "\n\n".join(prompt_text(part.content) for part in parts if isinstance(part, UserPromptPart))


def _report_deadline(deadline: float | None, time_limit_s: float) -> float | None:
    """When the report turn of a stopped run must end: a little past the run's deadline, if it has one.

    A run stopped by its time limit still writes its report, but a slow model (the embedded one,
    on a loaded machine) must not take minutes over it: ``--max-time`` is the time the user waits.
    The report gets a tenth of the time limit past the deadline, between 2 and 45 seconds.
    """
    if deadline is None:
        return None
    grace = min(REPORT_GRACE_MAX_S, max(REPORT_GRACE_MIN_S, time_limit_s / 10))
    return max(deadline, time.monotonic()) + grace


def _loop_deadline(deadline: float | None) -> float | None:
    """Translate a ``time.monotonic`` deadline into the event loop's clock."""
    if deadline is None:
        return None
    return asyncio.get_running_loop().time() + (deadline - time.monotonic())
