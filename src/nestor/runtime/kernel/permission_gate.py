"""The permission gate: settles what a tool call asks for, by the rules and, when they say so, the user.

A request the rules allow passes silently; one they deny is refused with the rule named; one they
leave to the user is asked (when someone can answer: the REPL) or refused with an explanation the
model can act on (headless runs). Every question and every refusal is an event, so a UI never
shows a stalled agent without saying why.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any, Literal

from nestor.bus import EventBus
from nestor.core.events import PermissionAsked
from nestor.core.permission import PermissionAnswer, PermissionRequest
from nestor.permissions import Decision, PermissionPolicy

__all__ = ["AskHooks", "HookAnswer", "PermissionAnswer", "PermissionAsker", "PermissionGate", "Verdict"]

PermissionAsker = Callable[[PermissionRequest, str], Awaitable[PermissionAnswer]]
"""Asks the user about ``request`` for agent ``agent_id``; None where nobody can answer (headless)."""


@dataclass(frozen=True, slots=True)
class HookAnswer:
    """A hook's answer to a question the rules left to the user (Claude Code's ``PermissionRequest``).

    Attributes:
        behavior: Allow or deny, instead of the user.
        message: Why, for the model when it denies.
        updated_args: With an allow, the arguments to run the call with instead (its permission is
            settled again on them: a deny rule still refuses them).

    """

    behavior: Literal["allow", "deny"]
    message: str = ""
    updated_args: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class AskHooks:
    """What the agent's hooks say about one call's permission (see ``Hook.before_tool_call``).

    Attributes:
        preset: ``allow``: a question the rules leave open (no rule, nothing always asked) is
            allowed; ``ask``: what the rules allow is asked; None: the rules decide.
        answer: Answers a question before the user is asked (``PermissionRequest`` hooks); None
            leaves it to the user.
        before_asking: Called when the user is about to be asked (``Notification`` hooks).
        reason: Why the hook asks, shown with the question.

    """

    preset: Literal["allow", "ask"] | None = None
    answer: Callable[[PermissionRequest], Awaitable[HookAnswer | None]] | None = None
    before_asking: Callable[[PermissionRequest], Awaitable[None]] | None = None
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether a request may go ahead, the decision behind it, and what a hook's answer added.

    Attributes:
        allowed: It may go ahead.
        decision: The rules' decision (a hook's answer as its kind).
        refusal: What the model is told when a hook denied it (empty: :meth:`PermissionGate.refusal`).
        updated_args: The arguments a hook allowed the call with instead of its own.

    """

    allowed: bool
    decision: Decision
    refusal: str = ""
    updated_args: dict[str, Any] | None = None


class PermissionGate:
    """Settles the permission requests of one agent's tool calls."""

    def __init__(
        self, policy: PermissionPolicy, asker: PermissionAsker | None, bus: EventBus, agent_id: str
    ) -> None:
        self.policy = policy
        self.asker = asker
        self._bus = bus
        self._agent_id = agent_id

    async def settle(
        self, request: PermissionRequest, tool_call_id: str, hooks: AskHooks | None = None
    ) -> Verdict:
        """Decide ``request`` by the rules, asking the user when they say "ask" and someone can answer.

        ``hooks`` may allow what no rule decided, ask what the rules allow, or answer a question
        instead of the user; a deny rule always refuses.
        """
        decision = self.policy.decide(request)
        if hooks is not None:
            decision = _hooked(decision, hooks)
            if decision.kind == "ask" and not decision.must_ask and hooks.answer is not None:
                answer = await hooks.answer(request)
                if answer is not None:
                    decision = replace(decision, reason=f"{decision.reason}; answered by a hook")
                    self._publish(request, tool_call_id, decision, answer.behavior)
                    return _hook_verdict(request, replace(decision, kind=answer.behavior), answer)
            if decision.kind == "ask" and self.asker is not None and hooks.before_asking is not None:
                await hooks.before_asking(request)
        if decision.kind == "ask" and self.asker is not None:
            self._publish(request, tool_call_id, decision, None)
            answer = await self.asker(request, self._agent_id)
            if answer == "session":
                self.policy.grant_for_session(request)
            allowed = answer != "deny"
        else:
            allowed = decision.kind == "allow"
        if decision.kind != "allow":
            self._publish(request, tool_call_id, decision, "allow" if allowed else "deny")
        return Verdict(allowed, decision)

    async def allows(
        self, request: PermissionRequest, tool_call_id: str, hooks: AskHooks | None = None
    ) -> bool:
        """:meth:`settle`, as the yes/no a tool asking mid-run needs."""
        return (await self.settle(request, tool_call_id, hooks)).allowed

    def refusal(self, request: PermissionRequest, decision: Decision) -> str:
        """What the model is told when ``request`` was refused: why, and not to retry it."""
        if decision.kind == "deny" and decision.rule is not None:
            return f"Permission denied by rule {decision.rule}: {request.description}. Do not retry it."
        if self.asker is None and decision.rule is not None:
            return (
                f"Permission denied: {request.description} ({decision.reason}). A rule says to ask, and "
                "this is a non-interactive run, so nobody can approve it; --yolo does not override ask "
                "rules. The user can run it in the interactive REPL or change the rule in nestor.toml. "
                "Do not retry this call."
            )
        if self.asker is None and decision.must_ask:
            return (
                f"Permission denied: {request.description} ({decision.reason}). This is asked even under "
                "--yolo or an allow rule, and this is a non-interactive run, so nobody can approve it; the "
                "user can make the change by hand, or allow it with a rule naming that path. Do not retry "
                "this call."
            )
        if self.asker is None:
            return (
                f"Permission denied: {request.description} ({decision.reason}). This is a non-interactive "
                "run, so nobody can approve it; the user can rerun with --yolo or allow it with a rule in "
                f'nestor.toml, e.g. [permissions] allow = ["{request.tool_name}"]. Do not retry this call.'
            )
        return f"The user denied: {request.description}. Do not retry it; ask the user what to do instead."

    def _publish(
        self,
        request: PermissionRequest,
        tool_call_id: str,
        decision: Decision,
        outcome: Literal["allow", "deny"] | None,
    ) -> None:
        self._bus.publish(
            PermissionAsked(
                agent_id=self._agent_id,
                tool_call_id=tool_call_id,
                tool_name=request.tool_name,
                target=request.target,
                decision=outcome,
                reason=decision.reason,
                rule=str(decision.rule) if decision.rule is not None else None,
                must_ask=decision.must_ask,
            )
        )


def _hook_verdict(request: PermissionRequest, decision: Decision, answer: HookAnswer) -> Verdict:
    if answer.behavior == "allow":
        return Verdict(True, decision, updated_args=answer.updated_args)
    why = answer.message or "no reason given"
    return Verdict(
        False,
        decision,
        refusal=f"Permission denied by a hook: {request.description} ({why}). Do not retry it.",
    )


def _hooked(decision: Decision, hooks: AskHooks) -> Decision:
    """The rules' decision with a hook's preset: its allow opens no deny or ask rule, nor a must-ask.

    Claude Code's rule too: a hook's allow skips a question, never a rule.
    """
    if hooks.preset == "allow" and decision.kind == "ask" and decision.rule is None and not decision.must_ask:
        return replace(decision, kind="allow", reason="allowed by a hook")
    if hooks.preset == "ask" and decision.kind == "allow":
        why = f": {hooks.reason}" if hooks.reason else ""
        return replace(decision, kind="ask", reason=f"a hook asks{why}")
    return decision
