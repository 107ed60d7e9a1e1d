"""Tool execution: one response's tool calls run in parallel, each through hooks and the gate.

A call is checked by the hooks' ``before_tool_call`` (which may refuse it, or change its arguments
or how its permission is settled), validated against the tool's parameters,
asked of the :class:`PermissionGate` when the tool needs permission, run, and passed through the
hooks' ``after_tool_result``. Nothing but a cancellation escapes: an unknown tool, invalid
arguments, a refusal or a tool's own bug becomes a result the model reads and can act on.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ValidationError
from pydantic_ai.messages import ModelRequest, ModelRequestPart, ToolCallPart, ToolReturnPart

from nestor.core.errors import PermissionDeniedError, ToolError
from nestor.core.events import ToolFinished, ToolStarted
from nestor.core.permission import PermissionRequest
from nestor.runtime.kernel.hooks import Hook, RunState, ToolCallChange
from nestor.runtime.kernel.permission_gate import AskHooks, HookAnswer, PermissionGate
from nestor.tools.base import Tool, ToolContext, ToolResult

if TYPE_CHECKING:
    from pydantic import BaseModel

    from nestor.runtime.kernel.setup import AgentSetup

_PREVIEW_CHARS = 200
Outcome = Literal["success", "failed", "denied", "retried"]


class ToolRunner:
    """Runs the tool calls of one agent (its tools, hooks and permission gate)."""

    def __init__(
        self, session_id: str, setup: AgentSetup, hooks: Sequence[Hook], gate: PermissionGate
    ) -> None:
        self._session_id = session_id
        self._setup = setup
        self._hooks = hooks
        self._gate = gate
        self.tools: dict[str, Tool[Any]] = {tool.name: tool for tool in setup.tools}

    async def run(
        self, state: RunState, calls: list[ToolCallPart], on_interrupted: Callable[[ModelRequest], None]
    ) -> list[ToolReturnPart]:
        """Run ``calls`` in parallel and return their results in order.

        On cancellation, ``on_interrupted`` gets the finished calls' results and the unfinished
        ones as interrupted, then the cancellation goes on.
        """
        results: dict[str, ToolReturnPart] = {}

        async def run_one(call: ToolCallPart) -> None:
            result = await self._run_one(state, call)
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
            on_interrupted(ModelRequest(parts=_with_interrupted(calls, results)))
            raise
        finally:
            state.tool_calls += len(calls)
        return [results[call.tool_call_id] for call in calls]

    async def _run_one(self, state: RunState, call: ToolCallPart) -> ToolReturnPart:
        publish = self._setup.bus.publish
        started = time.monotonic()
        try:
            args = call.args_as_dict()
        except ValueError:
            args = {}
        publish(
            ToolStarted(
                agent_id=self._session_id, tool_call_id=call.tool_call_id, tool_name=call.tool_name, args=args
            )
        )
        outcome, content, metadata = await self._execute(state, call)
        publish(
            ToolFinished(
                agent_id=self._session_id,
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
    ) -> tuple[Outcome, str, dict[str, Any] | None]:
        """Run one call: hooks, validation, permission, the tool; never raises but for cancellation."""
        preset: ToolCallChange | None = None
        for hook in self._hooks:
            verdict = await hook.before_tool_call(state, call)
            if isinstance(verdict, str):
                return "denied", verdict, None
            if verdict is not None:
                preset = _combined(preset, verdict)
                if verdict.args is not None:
                    call = dataclasses.replace(call, args=verdict.args)
        ask_hooks = self._ask_hooks(state, call, preset)
        tool = self.tools.get(call.tool_name)
        if tool is None:
            available = ", ".join(sorted(self.tools)) or "none"
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
        gate = self._gate
        ctx = ToolContext(
            project_root=self._setup.project_root,
            scratch_dir=self._setup.scratch_dir,
            session_id=self._session_id,
            tool_call_id=call.tool_call_id,
            emit=self._setup.bus.publish,
            ask_permission=lambda request: gate.allows(request, call.tool_call_id, ask_hooks),
            withholds=gate.policy.withholds,
            may_withhold=gate.policy.may_withhold,
        )
        try:
            request = tool.permission(params, ctx)
            if request is not None:
                verdict = await gate.settle(request, call.tool_call_id, ask_hooks)
                if not verdict.allowed:
                    raise PermissionDeniedError(verdict.refusal or gate.refusal(request, verdict.decision))
                if verdict.updated_args is not None:
                    params = await self._rewritten(tool, verdict.updated_args, ctx, call.tool_call_id)
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

    async def _rewritten(
        self, tool: Tool[Any], args: dict[str, Any], ctx: ToolContext, tool_call_id: str
    ) -> BaseModel:
        """The parameters a hook allowed a call with instead of its own, once their permission is settled.

        The hook's allow stands for them as for the call it answered: it skips the question, and a
        deny rule (or what is always asked) still refuses them.

        Raises:
            PermissionDeniedError: They are refused.
            ToolError: They are not valid arguments of the tool.

        """
        try:
            params = tool.params_model.model_validate(args)
        except ValidationError as exc:
            raise ToolError(
                f"A hook rewrote the call into invalid arguments: {exc.errors()[0]['msg']}"
            ) from exc
        request = tool.permission(params, ctx)
        if request is not None:
            allowed = HookAnswer("allow")

            async def answer(_request: PermissionRequest) -> HookAnswer:
                return allowed

            verdict = await self._gate.settle(request, tool_call_id, AskHooks(answer=answer))
            if not verdict.allowed:
                raise PermissionDeniedError(self._gate.refusal(request, verdict.decision))
        return params

    def _ask_hooks(self, state: RunState, call: ToolCallPart, preset: ToolCallChange | None) -> AskHooks:
        """How the hooks take part in this call's permission: a preset, an answer, a notice."""
        hooks = self._hooks

        async def answer(request: PermissionRequest) -> HookAnswer | None:
            for hook in hooks:
                if (said := await hook.permission_request(state, call, request)) is not None:
                    return said
            return None

        async def before_asking(request: PermissionRequest) -> None:
            for hook in hooks:
                await hook.on_permission_prompt(state, request)

        return AskHooks(
            preset=preset.permission if preset else None,
            answer=answer,
            before_asking=before_asking,
            reason=preset.reason if preset else "",
        )


def _combined(before: ToolCallChange | None, change: ToolCallChange) -> ToolCallChange:
    """Two hooks' changes: the later arguments; an ask wins over an allow."""
    if before is None:
        return change
    permission = (
        "ask" if "ask" in (before.permission, change.permission) else (change.permission or before.permission)
    )
    return ToolCallChange(
        args=change.args if change.args is not None else before.args,
        permission=permission,
        reason=change.reason or before.reason,
    )


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


def _format_validation_error(tool_name: str, error: ValidationError) -> str:
    lines = [f"Invalid arguments for {tool_name}; fix them and call it again:"]
    for item in error.errors(include_url=False):
        location = ".".join(str(part) for part in item["loc"]) or "(arguments)"
        lines.append(f"- {location}: {item['msg']}")
    return "\n".join(lines)
