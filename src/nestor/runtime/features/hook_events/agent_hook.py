"""The hook events of one agent: where the loop's hook points fire Claude Code's events.

The agent recipe gives every agent, the main one and each sub-agent, an :class:`EventHook` over
the process's :class:`HookDispatcher`. It fires:

- ``SessionStart`` (the main agent's first run) and ``SubagentStart`` (each run of a sub-agent),
  then ``UserPromptSubmit``, when a run starts, before its prompt is stored;
- ``PreToolUse`` before a call (block, rewrite, allow or ask), ``PermissionRequest`` when the
  rules leave a call to the user, ``Notification`` when the user is then asked;
- ``PostToolUse`` after a call that succeeded, ``PostToolUseFailure`` after one that failed;
- ``Stop`` (the main agent) or ``SubagentStop`` when the model answers without a call: a block
  sends it back to work once per stop, ``stop_hook_active`` telling the second time;
- ``PreCompact`` and ``PostCompact`` around a compaction; ``SessionEnd`` through :meth:`end_session`.

Every payload has Claude Code's common fields plus the agent's ``agent_id``, ``agent_type``,
``parent_agent_id`` and ``depth``, so one hook sees the whole tree. ``continue: false`` stops the
agent before its next request (stop reason ``hook``); ``systemMessage`` and hooks' errors go to
the user through ``notify``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic_ai.messages import ToolCallPart, ToolReturnPart

from nestor.core.permission import PermissionRequest
from nestor.core.prompts import UserPrompt, prompt_text
from nestor.runtime.features.hook_events.dispatcher import HookDispatcher
from nestor.runtime.features.hook_events.outcome import HookOutcome
from nestor.runtime.features.hook_events.payload import hook_tool_input, tool_args, tool_response
from nestor.runtime.kernel.hooks import Hook, HookAction, Remind, RunState, Stop, ToolCallChange
from nestor.runtime.kernel.permission_gate import HookAnswer
from nestor.runtime.kernel.setup import RunResult


@dataclass(frozen=True, slots=True)
class AgentInfo:
    """Who fires the events: what every payload says about the agent and its tree.

    Attributes:
        session_id: The main agent's session (Claude Code's ``session_id``: one per tree).
        agent_id: This agent's id (its session's).
        agent_type: Its spec's name.
        parent_agent_id: Its parent's id; None for the main agent.
        depth: 0 for the main agent.
        project_root: The ``cwd`` of every payload.
        permission_mode: ``default``, or ``bypassPermissions`` under ``--yolo``.

    """

    session_id: str
    agent_id: str
    agent_type: str
    parent_agent_id: str | None
    depth: int
    project_root: Path
    permission_mode: str = "default"


class EventHook(Hook):
    """Fires the hook events of one agent (see the module's docstring).

    Args:
        dispatcher: The hooks.
        agent: The agent.
        hook_names: A tool's names for matchers (nestor's, Claude Code's).
        notify: Shows the user one line.

    """

    def __init__(
        self,
        dispatcher: HookDispatcher,
        agent: AgentInfo,
        hook_names: Callable[[str], tuple[str, ...]],
        notify: Callable[[str], None],
    ) -> None:
        self.dispatcher = dispatcher
        self.agent = agent
        self._hook_names = hook_names
        self._notify = notify
        self._started = False
        self._continued = False
        self._pending_stop: Stop | None = None

    def payload(self, event: str, **fields: Any) -> dict[str, Any]:
        """The JSON of ``event`` for this agent: the common fields, then ``fields``."""
        agent = self.agent
        return {
            "session_id": agent.session_id,
            "transcript_path": None,
            "cwd": str(agent.project_root),
            "permission_mode": agent.permission_mode,
            "hook_event_name": event,
            "agent_id": agent.agent_id,
            "agent_type": agent.agent_type,
            "parent_agent_id": agent.parent_agent_id,
            "depth": agent.depth,
            **fields,
        }

    async def fire(
        self, event: str, *, match: tuple[str, ...] = (), tool_use_id: str | None = None, **fields: Any
    ) -> HookOutcome:
        """Fire ``event``; its messages shown, a ``continue: false`` kept for the next request."""
        if not self.dispatcher.has(event):
            return HookOutcome()
        payload = self.payload(event, **fields)
        if tool_use_id is not None:
            payload["tool_use_id"] = tool_use_id
        outcome = await self.dispatcher.fire(event, payload, match=match, tool_use_id=tool_use_id)
        for message in outcome.system_messages:
            self._notify(message)
        if outcome.stop and self._pending_stop is None:
            said = outcome.stop_reason or f"a {event} hook stopped the agent"
            self._notify(f"stopped by a hook: {said}")
            self._pending_stop = Stop("hook", f"Stopped by a hook: {said}")
        return outcome

    # -- runs --------------------------------------------------------------------------------

    async def before_run(self, state: RunState, prompt: UserPrompt | None) -> HookAction:
        """SessionStart or SubagentStart, then UserPromptSubmit: context for the prompt, or a stop."""
        self._pending_stop = None
        contexts: list[str] = []
        if self.agent.depth == 0 and not self._started:
            contexts += (await self.fire("SessionStart", match=("startup",), source="startup")).contexts
        elif self.agent.depth > 0:
            started = await self.fire("SubagentStart", match=(self.agent.agent_type,))
            contexts += started.contexts
        self._started = True
        if prompt is not None:
            submitted = await self.fire("UserPromptSubmit", prompt=prompt_text(prompt, name_files=True))
            if submitted.blocked:
                self._notify(f"prompt blocked by a hook: {submitted.reason or 'no reason given'}")
                return Stop(
                    "hook", f"The prompt was blocked by a hook: {submitted.reason or 'no reason given'}"
                )
            contexts += submitted.contexts
        if self._pending_stop is not None:
            return self._pending_stop
        return Remind("\n\n".join(contexts)) if contexts else None

    async def before_request(self, state: RunState) -> HookAction:
        """Stop when a hook said ``continue: false``."""
        return self._pending_stop

    async def before_finish(self, state: RunState, text: str) -> Remind | None:
        """Stop or SubagentStop: a block sends the agent back to work, once per stop."""
        event = "Stop" if self.agent.depth == 0 else "SubagentStop"
        active = self._continued
        outcome = await self.fire(
            event, match=(self.agent.agent_type,), stop_hook_active=active, last_assistant_message=text
        )
        if outcome.blocked and not active and not outcome.stop:
            self._continued = True
            return Remind(outcome.reason or f"A {event} hook asks you to continue.")
        self._continued = False
        return None

    async def on_run_end(self, state: RunState, result: RunResult) -> None:
        """The next run starts with no stop pending."""
        self._continued = False

    async def end_session(self, reason: str) -> None:
        """SessionEnd (the main agent's session closes: ``reason`` as Claude Code gives it)."""
        await self.fire("SessionEnd", match=(reason,), reason=reason)

    # -- tools -------------------------------------------------------------------------------

    def _input(self, call: ToolCallPart) -> tuple[dict[str, Any], dict[str, Any]]:
        """The call's arguments, and its fields as hooks get them (see ``payload.py``)."""
        try:
            args = call.args_as_dict()
        except ValueError:
            args = {}
        shown = hook_tool_input(call.tool_name, args, self.agent.project_root)
        names = self._hook_names(call.tool_name)
        return args, {"tool_name": names[-1], "nestor_tool_name": call.tool_name, "tool_input": shown}

    async def before_tool_call(self, state: RunState, call: ToolCallPart) -> str | ToolCallChange | None:
        """PreToolUse: a deny refuses the call, ``updatedInput`` rewrites it, allow or ask settles it."""
        if not self.dispatcher.has("PreToolUse"):
            return None
        args, fields = self._input(call)
        outcome = await self.fire(
            "PreToolUse", match=self._hook_names(call.tool_name), tool_use_id=call.tool_call_id, **fields
        )
        reason = "; ".join(outcome.permission_reasons) or outcome.reason
        if outcome.permission == "deny" or outcome.blocked:
            return f"Blocked by a hook: {reason or 'no reason given'}. Do not retry this call as it is."
        permission: Literal["allow", "ask"] | None = outcome.permission
        if outcome.updated_input is None and permission is None:
            return None
        new_args = tool_args(call.tool_name, args, outcome.updated_input) if outcome.updated_input else None
        return ToolCallChange(args=new_args, permission=permission, reason=reason)

    async def permission_request(
        self, state: RunState, call: ToolCallPart, request: PermissionRequest
    ) -> HookAnswer | None:
        """PermissionRequest: a hook's ``decision`` answers instead of the user.

        Its ``behavior`` allows or denies (exit code 2 denies), a deny's ``message`` (or the
        standard error) tells the model why, and an allow's ``updatedInput`` is what runs instead
        (settled again: a deny rule still refuses it).
        """
        if not self.dispatcher.has("PermissionRequest"):
            return None
        args, fields = self._input(call)
        outcome = await self.fire(
            "PermissionRequest", match=self._hook_names(call.tool_name), permission_suggestions=[], **fields
        )
        if outcome.behavior == "deny" or outcome.blocked:  # exit code 2 denies too, as in Claude Code
            return HookAnswer("deny", message=outcome.reason)
        if outcome.behavior is None:
            return None
        updated = outcome.updated_input
        return HookAnswer("allow", updated_args=tool_args(call.tool_name, args, updated) if updated else None)

    async def on_permission_prompt(self, state: RunState, request: PermissionRequest) -> None:
        """Notification: the user is asked for a permission."""
        message = f"nestor needs your permission: {request.description}"
        await self.fire(
            "Notification",
            match=("permission_prompt",),
            message=message,
            notification_type="permission_prompt",
        )

    async def after_tool_result(
        self, state: RunState, call: ToolCallPart, result: ToolReturnPart
    ) -> ToolReturnPart:
        """PostToolUse or PostToolUseFailure: a block's reason and any context go to the model."""
        if result.outcome == "success":
            event = "PostToolUse"
        elif result.outcome == "failed" or result.outcome == "retried":
            event = "PostToolUseFailure"
        else:
            return result
        if not self.dispatcher.has(event) or not isinstance(result.content, str):
            return result
        _args, fields = self._input(call)
        if event == "PostToolUse":
            fields["tool_response"] = tool_response(fields["tool_input"], result.content, success=True)
        else:
            fields["error"] = result.content
        outcome = await self.fire(
            event, match=self._hook_names(call.tool_name), tool_use_id=call.tool_call_id, **fields
        )
        notes = [text for text in (outcome.reason if outcome.blocked else "", *outcome.contexts) if text]
        if not notes:
            return result
        added = "\n".join(notes)
        return dataclasses.replace(
            result, content=f"{result.content}\n\n<system-reminder>{added}</system-reminder>"
        )

    # -- compaction --------------------------------------------------------------------------

    async def before_compact(self, agent_id: str, trigger: str, instructions: str | None) -> bool:
        """PreCompact: a block skips the compaction."""
        name = "manual" if trigger == "manual" else "auto"
        outcome = await self.fire(
            "PreCompact", match=(name,), trigger=name, custom_instructions=instructions or ""
        )
        if outcome.blocked:
            self._notify(f"compaction skipped by a hook: {outcome.reason or 'no reason given'}")
        return not outcome.blocked

    async def after_compact(self, agent_id: str, trigger: str, summary: str) -> None:
        """PostCompact, with the summary."""
        name = "manual" if trigger == "manual" else "auto"
        await self.fire("PostCompact", match=(name,), trigger=name, compact_summary=summary)
